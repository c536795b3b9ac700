// Bundled at build time (tsup) into dist/sandbox/exceljs.cjs: exceljs and its dependencies in one file, the only
// library file run_code's sandbox may read.
module.exports = require("exceljs");
