import { errorText, main } from "./index.js";

/** The `benchmax` executable: exit codes, a closed stdout (`| head`) and cursor restoring handled once, here. */
function onStreamError(e: NodeJS.ErrnoException): void {
  // the reader went away (`benchmax … | head`): stop quietly, like other Unix tools
  if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw e;
}
process.stdout.on("error", onStreamError);
process.stderr.on("error", onStreamError);
process.on("exit", () => {
  // a progress bar hides the cursor; never leave the terminal without one
  if (process.stderr.isTTY) process.stderr.write("\x1b[?25h");
});

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    console.error(`benchmax: ${errorText(e)}`);
    process.exitCode = 1;
  },
);
