#!/usr/bin/env node
// CI's benchmark smoke: every bench/*.mjs still runs to the end and measures (bench/run.mjs exits 1 otherwise), and
// the soak's rollouts through `benchmax serve` all finish. Timings are not gated (they depend on the machine); a
// rollout that fails in the soak is a bug whatever the machine. The soak is shortened to 1,000 rollouts, and the
// sessions-at-scale bench to 512 sessions, and `validate` (bench/validate.mjs) to 100,000 rows, the live-interpreter memory figure to 16
// interpreters, the watch dashboard to 100,000 rollouts and the fleet to 3 nodes × 2 servers.
// Writes its results to a temporary folder, never over bench/results.*.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = mkdtempSync(join(tmpdir(), "benchmax-bench-smoke-"));
const run = spawnSync(process.execPath, [join(root, "bench", "run.mjs"), "--out", out], {
  cwd: root,
  stdio: ["ignore", "inherit", "inherit"],
  // the sessions-at-scale bench at a small size (512 sessions, 1 s steps) instead of 16,384 sessions of 10 s steps
  // and `validate` over 100,000 rows instead of 1,000,000
  env: {
    BENCHMAX_SOAK_ROLLOUTS: "1000",
    // the excel server's long run at 100 rollouts (each with a run_code call) instead of 2,000
    BENCHMAX_SOAK_EXCEL_ROLLOUTS: "100",
    BENCH_SESSIONS: "512",
    BENCH_SESSIONS_WAIT_MS: "1000",
    BENCH_VALIDATE_ROWS: "100000",
    // 16 live interpreters for the memory figure instead of 256, and a watch dashboard over 100,000 rollouts
    BENCH_LIVE_N: "16",
    BENCH_WATCH_ROLLOUTS: "100000",
    // the fleet under faults at CI's shape (3 nodes × 2 servers) instead of the seed's 5 × 20
    BENCH_FLEET_SHAPE: "small",
    ...process.env,
  },
});
if (run.status !== 0) {
  console.error(`bench smoke: bench/run.mjs exited ${run.status ?? run.signal} (a benchmark could not measure)`);
  process.exit(1);
}
const results = JSON.parse(readFileSync(join(out, "results.json"), "utf8"));
const failed = results.benchmarks.flatMap((b) => b.figures ?? []).find((f) => f.id === "soak.failed_rollouts");
if (!failed) {
  console.error("bench smoke: the soak reported no soak.failed_rollouts figure");
  process.exit(1);
}
if (failed.value !== 0) {
  console.error(`bench smoke: ${failed.value} soak rollouts failed: ${failed.label}`);
  process.exit(1);
}
console.log(`bench smoke: ${results.benchmarks.length} benchmarks measured; the soak's rollouts all finished (${out})`);
