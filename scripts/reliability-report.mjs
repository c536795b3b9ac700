#!/usr/bin/env node
// Runs the reliability suite (packages/reliability) with vitest's JSON reporter and regenerates docs/reliability.md:
// each claim of the reliability issue, the tests that prove it, their pass/fail/skip counts, skip reasons, open
// findings (tests named "KNOWN BUG …", written with `it.fails`), the soak figures from bench/results.json when a
// benchmark run left them, and the date and machine.
//
// Usage: node scripts/reliability-report.mjs [--from results.json] [--out docs/reliability.md]
//   --from  use an existing vitest JSON report instead of running the suite
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(root, "packages", "reliability");

/** The claims of the issue, in its order, and the test files that prove each. */
export const CLAIMS = [
  {
    id: "faults",
    title: "Faults",
    claim:
      "A tool that throws, a tool that hangs (timeout), an env server killed mid-rollout, an MCP server crash, a reward function that throws or returns NaN/Infinity, a policy endpoint answering 5xx or timing out → every such rollout ends as env_error or infra_error with its reason; every other rollout of the same run is scored; no reward is fabricated.",
    files: ["faults.test.ts", "faults-remote.test.ts", "faults-mcp.test.ts"],
  },
  {
    id: "fuzzing",
    title: "Fuzzing",
    claim:
      "≥ 100k generated model outputs against the Hermes and OpenAI tool-call parsers and each env's tool-argument validation: no crash, every bad case a tool error.",
    files: ["fuzz-parsers.test.ts", "fuzz-define-env.test.ts", "fuzz-env-tools.test.ts", "fuzz-parse-task.test.ts"],
  },
  {
    id: "sandbox",
    title: "Sandbox escapes (excel run_code)",
    claim:
      "Reading or writing outside the workspace, spawning processes, network access, reaching host objects or prototypes, infinite loops, memory bombs, huge outputs — all blocked, the host alive.",
    files: ["excel-sandbox.test.ts"],
    describe: /run_code sandbox/,
  },
  {
    id: "reward-channel",
    title: "Reward-channel safety",
    claim:
      "One test per env: no tool reveals gold answers or golden files; a model cannot write the file the scorer reads from outside its own workspace; one rollout cannot touch another's state.",
    files: ["reward-channel.test.ts", "excel-sandbox.test.ts"],
    describe: /reward-channel/,
  },
  {
    id: "server",
    title: "Server security",
    claim:
      "Auth on every endpoint that needs it, per-rollout tokens, path traversal on any file endpoint, request size limits (413), malformed JSON (400), never a 5xx for bad input.",
    files: ["server-security.test.ts"],
  },
  {
    id: "soak",
    title: "Soak",
    claim:
      "10,000 rollouts through `benchmax serve` with a mix of envs: RSS growth < 5 % after warm-up; no leaked workspaces, file descriptors or child processes. (The test runs a reduced soak; the full one is `bench/soak.mjs`.)",
    files: ["soak.test.ts"],
  },
  {
    id: "bench",
    title: "One benchmark suite",
    claim:
      "`npm run bench` runs every benchmark in the repo and writes bench/results.json and a markdown table of each figure beside its goal and its same-run baseline (ratios), with the machine it ran on.",
    files: ["bench-runner.test.ts"],
  },
];

/** Bugs this suite found in other packages and that were fixed; each is kept as a regression test named by its id. */
export const FIXED_FINDINGS = [
  ["server-malformed-escape", "@benchmax/server", "a malformed %-escape in a rollout id was answered 500 (URIError)"],
  [
    "server-unvalidated-messages",
    "@benchmax/server",
    "null messages or non-string content sent for scoring crashed computeReward (500)",
  ],
  [
    "excel-insert-rows-oom",
    "@benchmax/env-excel",
    "insert_rows at row ~1e9 exhausted the host's heap and killed the env server (found by tool fuzzing)",
  ],
  [
    "excel-sandbox-signals",
    "@benchmax/env-excel",
    "run_code shared the host's PID namespace: sandboxed code could SIGKILL any process of the user, the env server included",
  ],
  [
    "server-client-task-unvalidated",
    "@benchmax/server, @benchmax/env-excel",
    "a Task-shaped object from a client reached the env unvalidated: malformed ones crashed it (500); excel copied any host path in init.inputs (a golden workbook) into the workspace",
  ],
];

function parseArgs(argv) {
  const o = { from: undefined, out: join(root, "docs", "reliability.md") };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--from") o.from = resolve(argv[++i]);
    else if (argv[i] === "--out") o.out = resolve(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return o;
}

/** Run the suite; returns the parsed JSON report and the console output (for skip reasons). */
function runSuite() {
  const dir = mkdtempSync(join(os.tmpdir(), "benchmax-reliability-"));
  const jsonPath = join(dir, "report.json");
  const vitest = join(pkg, "node_modules", ".bin", "vitest");
  const res = spawnSync(vitest, ["run", "--reporter=json", `--outputFile=${jsonPath}`, "--reporter=default"], {
    cwd: pkg,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, FORCE_COLOR: "0", NO_COLOR: "1" },
  });
  const output = `${res.stdout ?? ""}\n${res.stderr ?? ""}`;
  if (!existsSync(jsonPath)) {
    process.stderr.write(output.slice(-5000));
    throw new Error(`vitest wrote no JSON report (exit ${res.status ?? res.signal})`);
  }
  const report = JSON.parse(readFileSync(jsonPath, "utf8"));
  rmSync(dir, { recursive: true, force: true });
  return { report, output, exitCode: res.status };
}

/** Flatten vitest's JSON report into one row per test. */
export function testsOf(report) {
  const rows = [];
  for (const file of report.testResults ?? []) {
    const name = basename(file.name);
    for (const a of file.assertionResults ?? []) {
      rows.push({
        file: name,
        suite: (a.ancestorTitles ?? []).join(" › "),
        title: a.title,
        status: a.status, // passed | failed | skipped | pending | todo
        durationMs: a.duration ?? 0,
        failure: (a.failureMessages ?? []).join("\n").split("\n")[0]?.slice(0, 300),
      });
    }
    if ((file.assertionResults ?? []).length === 0 && file.status === "failed") {
      rows.push({
        file: name,
        suite: "",
        title: "(the file failed to load)",
        status: "failed",
        durationMs: 0,
        failure: (file.message ?? "").slice(0, 300),
      });
    }
  }
  // an unhandled error (e.g. a worker killed by an out-of-memory crash) fails the run without failing a test
  if (report.success === false && !rows.some((r) => r.status === "failed")) {
    rows.push({
      file: "(suite)",
      suite: "",
      title: "vitest reported an unhandled error (a crashed worker?) — tests after it did not run",
      status: "failed",
      durationMs: 0,
      failure: "see the vitest output",
    });
  }
  return rows;
}

const isKnownBug = (r) => r.title.startsWith("KNOWN BUG");

function counts(rows) {
  const c = { passed: 0, failed: 0, skipped: 0, open: 0 };
  for (const r of rows) {
    if (isKnownBug(r) && r.status === "passed") c.open++;
    else if (r.status === "passed") c.passed++;
    else if (r.status === "failed") c.failed++;
    else c.skipped++;
  }
  return c;
}

function verdict(c) {
  if (c.failed > 0) return "**FAILING**";
  if (c.open > 0) return `**not yet**: ${c.open} open finding${c.open > 1 ? "s" : ""}`;
  if (c.passed === 0) return "untested (all skipped)";
  if (c.skipped > 0) return "passing in part (some tests skipped)";
  return "passing";
}

const esc = (s) =>
  String(s ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ");
const mark = (r) =>
  isKnownBug(r) && r.status === "passed"
    ? "open finding (expected failure)"
    : r.status === "passed"
      ? "pass"
      : r.status === "failed"
        ? "**FAIL**"
        : "skipped";

/** The markdown document. */
export function render({ rows, skipReasons, machine, date, bench }) {
  const out = [];
  const total = counts(rows);
  const known = rows.filter((r) => isKnownBug(r) && r.status === "passed");
  out.push(
    "# Reliability and security",
    "",
    "<!-- generated by scripts/reliability-report.mjs from the test results of packages/reliability; do not edit by hand -->",
    "",
    `Generated ${date} on ${machine}.`,
    `Suite: \`packages/reliability\` — ${rows.length} tests: ${total.passed} passed, ${total.open ? `${total.open} pinning open findings (expected failures), ` : ""}${total.failed} failed, ${total.skipped} skipped.`,
    "Regenerate with `node scripts/reliability-report.mjs`.",
    "",
    "| claim | verdict | passed | open findings | failed | skipped |",
    "|---|---|---:|---:|---:|---:|",
  );
  const sections = [];
  for (const claim of CLAIMS) {
    const mine = rows.filter((r) => claim.files.includes(r.file) && (!claim.describe || claim.describe.test(r.suite)));
    const c = counts(mine);
    out.push(
      `| [${claim.title}](#${claim.id}) | ${verdict(c)} | ${c.passed} | ${c.open} | ${c.failed} | ${c.skipped} |`,
    );
    sections.push({ claim, mine });
  }
  out.push("");
  if (known.length) {
    out.push(
      "## Open findings",
      "",
      "Bugs the suite found in other packages, pinned by `it.fails` tests. Each line states the behaviour wanted, which does not hold yet: the test passes while the bug is there and turns red once it is fixed (then make it a plain test).",
      "",
    );
    for (const k of known) out.push(`- \`${k.file}\` — ${esc(k.title.replace(/^KNOWN BUG\s*/, ""))}`);
    out.push("");
  }
  if (FIXED_FINDINGS.length) {
    out.push(
      "## Findings fixed",
      "",
      "Bugs this suite found in other packages; each fix is pinned by the regression test named by its id.",
      "",
    );
    out.push("| finding | package | what it was | regression test |", "|---|---|---|---|");
    for (const [id, pkgName, what] of FIXED_FINDINGS) {
      const t = rows.filter((r) => r.title.startsWith(`${id} `));
      const res = t.length ? t.map((r) => `${mark(r)} (\`${r.file}\`)`).join(", ") : "not found";
      out.push(`| ${id} | ${esc(pkgName)} | ${esc(what)} | ${res} |`);
    }
    out.push("");
  }
  for (const { claim, mine } of sections) {
    out.push(`<a id="${claim.id}"></a>`, `## ${claim.title}`, "", `> ${claim.claim}`, "");
    if (mine.length === 0) {
      out.push("No test results for this claim (the test file is missing or did not run).", "");
      continue;
    }
    out.push("| test | file | result | ms |", "|---|---|---|---:|");
    for (const r of mine) {
      const name = r.suite ? `${r.suite} › ${r.title}` : r.title;
      out.push(
        `| ${esc(name)} | \`${r.file}\` | ${mark(r)}${r.failure ? ` — ${esc(r.failure)}` : ""} | ${Math.round(r.durationMs)} |`,
      );
    }
    out.push("");
    if (claim.id === "soak" && bench) {
      out.push(`Full soak (\`bench/soak.mjs\`, from bench/results.json of ${bench.date}):`, "");
      out.push("| figure | value | unit | goal | pass |", "|---|---:|---|---|:---:|");
      for (const f of bench.figures) {
        out.push(
          `| ${esc(f.label)} | ${Math.round(f.value * 100) / 100} | ${esc(f.unit)} | ${esc(f.goal)} | ${f.pass === undefined ? "" : f.pass ? "yes" : "**no**"} |`,
        );
      }
      out.push("");
    }
  }
  const suiteErrors = rows.filter((r) => r.file === "(suite)");
  if (suiteErrors.length)
    out.push("## Suite errors", "", ...suiteErrors.map((r) => `- **${esc(r.title)}**: ${esc(r.failure)}`), "");
  if (skipReasons.length) {
    out.push("## Why tests were skipped", "", ...skipReasons.map((s) => `- ${esc(s)}`), "");
  }
  return `${out.join("\n")}\n`;
}

/** Format a generated file the way the repo's lint wants it (best effort: skipped when biome is not installed). */
export function formatGenerated(paths) {
  const biome = join(root, "node_modules", ".bin", "biome");
  if (!existsSync(biome)) return;
  spawnSync(biome, ["format", "--write", ...paths], { cwd: root, stdio: "ignore" });
}

function soakFromBench() {
  const p = join(root, "bench", "results.json");
  if (!existsSync(p)) return undefined;
  try {
    const r = JSON.parse(readFileSync(p, "utf8"));
    const b = (r.benchmarks ?? []).find((x) => x.area === "soak" && x.status === "ok");
    return b ? { date: r.machine?.date ?? "?", figures: b.figures } : undefined;
  } catch {
    return undefined;
  }
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  let report;
  let output = "";
  if (opts.from) report = JSON.parse(readFileSync(opts.from, "utf8"));
  else ({ report, output } = runSuite());
  const rows = testsOf(report);
  const skipReasons = [
    ...new Set(
      output
        .split("\n")
        .filter((l) => l.includes("[reliability] SKIPPED"))
        .map((l) => l.slice(l.indexOf("SKIPPED") + 8).trim()),
    ),
  ];
  const cpus = os.cpus();
  const machine = `${cpus[0]?.model?.trim() ?? "?"} (${cpus.length} cores), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.type()} ${os.release()}`;
  const md = render({ rows, skipReasons, machine, date: new Date().toISOString(), bench: soakFromBench() });
  writeFileSync(opts.out, md);
  formatGenerated([opts.out]);
  const c = counts(rows);
  console.error(
    `reliability: ${rows.length} tests, ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped → ${opts.out}`,
  );
  if (c.failed > 0) process.exitCode = 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
