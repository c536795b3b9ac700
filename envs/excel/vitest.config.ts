import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest({
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): suites whose subject is the code jail
  // (sandboxed processes, namespaces) or LibreOffice running inside it. The formula engine, the scorer, the tools and
  // their quick cross-checks (recorded LibreOffice values, openpyxl through python3) stay fast.
  slow: [
    "src/libreoffice-hang.test.ts", // a workbook that hangs LibreOffice, with victims in its batch
    "src/libreoffice-schedule.test.ts", // a batch's processes and helper, timed, with a scripted soffice
    "src/libreoffice-seal.test.ts", // LibreOffice sealed in the jail: no network, no host files
    "src/libreoffice-event-loop.test.ts", // a large output through LibreOffice and the compare workers: loop delay
    "src/odd-formulas-lo.test.ts", // the odd-formula fixture re-checked against a live LibreOffice
    "src/hostile-xml-workers.test.ts", // event-loop delay while the compare workers scan hostile XML
    "src/hostile-xml-rollout.test.ts", // the built env: run_python in the jail and LibreOffice, event-loop delay
    "src/run-code.test.ts", // run_code in the jail (namespaces via unshare)
    "src/replay-budget.test.ts", // replayed run_code calls in the jail, against the reward's time limit
    "src/run-python.test.ts", // run_python: python3 in the jail
    "src/sandbox/isolation.test.ts", // jailed interpreter processes: escapes, limits, kills
    "src/sandbox/jail.test.ts", // the jail itself
    "src/sandbox/jail-start-delay.test.ts", // cold and warm jail starts: the event loop's longest turn
    "src/sandbox/live-interpreter.test.ts", // long-lived jailed interpreter processes, killed and replaced
  ],
});
