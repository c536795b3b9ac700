#!/usr/bin/env node
// bench-timeout-s: 300
/**
 * excel sandbox: one jail start (namespaces, the read-only root, limits, chroot, privileges dropped) up to its
 * program's exit, with run_python's binds and `python3 -I -S -c pass` as the program. The jail as built now
 * (`jailStartCommand` of @benchmax/env-excel: one `mkdir -p`, one `mount -a` from an fstab, `ulimit`) against the
 * per-bind script it replaced (a `mkdir`, a `dirname` and two `mount`s per bind, `prlimit`; rebuilt below from the
 * same spec as the same-run baseline), in alternating rounds:
 * - wall ms per start, one at a time (p50);
 * - CPU ms per start (every process of the jail: this process's reaped children's time);
 * - starts/s with 8 at once;
 * - processes exec'd per start (counted with strace where it is installed).
 * No cgroup step in either (the same for both). Prints progress to stderr and one JSON line to stdout. Run
 * `npx tsup` in envs/excel first.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { jailAvailable, jailStartCommand } from "@benchmax/env-excel";

const log = (...a) => console.error("[bench:jail-start]", ...a);
const figures = [];
const done = () => {
  process.stdout.write(`${JSON.stringify({ area: "jail-start", figures })}\n`);
  process.exit(0);
};
const now = () => performance.now();
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const r1 = (x) => Number(x.toFixed(1));
const BUDGET_MS = Number(process.env.BENCH_BUDGET_S ?? 200) * 1000;
const began = now();
const left = () => BUDGET_MS - (now() - began);

const jail = jailAvailable();
if (!jail.ok) {
  log(`no jail here (${jail.reason}): nothing to measure`);
  done();
}
const probe = spawnSync(
  "/usr/bin/python3",
  [
    "-I",
    "-c",
    "import os, sys, json, openpyxl, et_xmlfile\nprint(json.dumps([os.path.realpath(sys.executable), [p for p in sys.path if p and os.path.isdir(p) and '-packages' not in p], [os.path.dirname(openpyxl.__file__), os.path.dirname(et_xmlfile.__file__)]]))",
  ],
  { encoding: "utf8" },
);
if (probe.status !== 0) {
  log("no /usr/bin/python3 with openpyxl here: nothing to measure");
  done();
}
const [exe, stdlib, pkgs] = JSON.parse(probe.stdout);
const tmp = mkdtempSync(join(tmpdir(), "bench-jail-start-"));
const spec = {
  readOnly: [exe, ...stdlib, ...pkgs],
  box: {},
  argv: [exe, "-I", "-S", "-c", "pass"],
  env: { LANG: "C.UTF-8", HOME: "/work" },
  memoryMb: 1024,
  memoryLimit: "as",
  diskMb: 64,
  maxProcs: 32,
};

// ---- the baseline: the per-bind script this change replaced, from the same spec ----
const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
const LIB_DIRS = [
  "/lib",
  "/lib64",
  "/usr/lib64",
  "/lib/x86_64-linux-gnu",
  "/usr/lib/x86_64-linux-gnu",
  "/lib/aarch64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
];
const underSymlink = (p) => {
  try {
    return realpathSync(dirname(p)) !== dirname(p);
  } catch {
    return true;
  }
};
function bindLines(paths) {
  const lines = [];
  const seen = new Set();
  for (const p of paths) {
    if (seen.has(p) || !existsSync(p) || underSymlink(p)) continue;
    seen.add(p);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) lines.push(`mkdir -p "$R"${q(dirname(p))}; ln -sfn ${q(readlinkSync(p))} "$R"${q(p)}`);
    else lines.push(`ro ${q(p)} ${q(p)} ${st.isDirectory() ? "d" : "f"}`);
  }
  return lines;
}
function beforeCommand(s) {
  const after = jailStartCommand(s);
  const root = /^R='([^']*)'$/m.exec(after.at(-1))[1];
  const mb = 1024 * 1024;
  const script = [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    'for f in /proc/self/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null; fi; done',
    "set -e",
    `R=${q(root)}`,
    "C=$(command -v chroot)",
    'mount -t tmpfs -o size=4m,mode=755 benchmax-jail "$R"',
    'mkdir -p "$R/work" "$R/box" "$R/dev"',
    `ro() { if [ "$3" = d ]; then mkdir -p "$R$2"; else mkdir -p "$(dirname "$R$2")"; : > "$R$2"; fi; mount --bind "$1" "$R$2"; mount -o remount,bind,ro,nosuid,nodev "$R$2"; }`,
    ...bindLines([...LIB_DIRS, "/usr/bin/setpriv", ...s.readOnly]),
    ...["null", "zero", "urandom"].map((d) => `: > "$R/dev/${d}"; mount --bind /dev/${d} "$R/dev/${d}"`),
    `mount -t tmpfs -o size=${s.diskMb}m,mode=700,nosuid,nodev benchmax-work "$R/work"`,
    'mount -o remount,bind,ro "$R"',
    'cd "$R/work"',
    [
      "exec prlimit",
      `--${s.memoryLimit}=${s.memoryMb * mb}`,
      `--nproc=${s.maxProcs}`,
      `--fsize=${s.diskMb * mb}`,
      "--nofile=256",
      "--core=0",
      "--",
      "env -i",
      ...Object.entries(s.env).map(([k, v]) => q(`${k}=${v}`)),
      '"$C" "$R" /usr/bin/setpriv --no-new-privs --bounding-set=-all --inh-caps=-all --',
      ...s.argv.map(q),
    ].join(" "),
  ].join("\n");
  return [...after.slice(0, -1), script];
}

const variants = { after: jailStartCommand(spec), before: beforeCommand(spec) };
const ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };

/** CPU ms of this process's reaped children so far (every process of a jail is reaped down the chain). */
function childCpuMs() {
  const s = readFileSync("/proc/self/stat", "utf8");
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  return ((Number(f[13]) + Number(f[14])) * 1000) / 100; // cutime + cstime, USER_HZ = 100
}

function start(argv) {
  return new Promise((resolve, reject) => {
    const c = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "pipe"], env: ENV });
    let err = "";
    c.stderr.on("data", (d) => (err += d));
    c.on("error", reject);
    c.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`jail start failed (${code}): ${err.trim()}`))));
  });
}

async function one(argv) {
  const c0 = childCpuMs();
  const t = now();
  await start(argv);
  return { ms: now() - t, cpu: childCpuMs() - c0 };
}

// both variants work, and warm the page cache
for (const [name, argv] of Object.entries(variants)) {
  try {
    await one(argv);
  } catch (e) {
    log(`${name}: ${e.message}`);
    done();
  }
}
log(`load ${load()} (2-core machines here are shared; alternating rounds put both variants under the same load)`);

// one at a time, alternating
const res = { before: { ms: [], cpu: [] }, after: { ms: [], cpu: [] } };
const capSeq = Math.min(90_000, left() * 0.5);
const t0 = now();
for (let i = 0; i < 30 && (i < 5 || now() - t0 < capSeq); i++) {
  for (const name of i % 2 ? ["after", "before"] : ["before", "after"]) {
    const r = await one(variants[name]);
    res[name].ms.push(r.ms);
    res[name].cpu.push(r.cpu);
  }
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const wall = { before: median(res.before.ms), after: median(res.after.ms) };
const cpu = {
  before: sum(res.before.cpu) / res.before.cpu.length,
  after: sum(res.after.cpu) / res.after.cpu.length,
};
log(
  `one at a time (${res.after.ms.length} rounds): wall p50 ${wall.before.toFixed(0)} -> ${wall.after.toFixed(0)} ms, CPU ${cpu.before.toFixed(0)} -> ${cpu.after.toFixed(0)} ms a start, load ${load()}`,
);
figures.push({
  id: "jail.start_wall_p50_ms",
  label: `one jail start to its program's exit (run_python's binds, python -c pass), p50 of ${res.after.ms.length}, one at a time`,
  value: r1(wall.after),
  unit: "ms",
  baseline: {
    label: "the per-bind script it replaced, alternating rounds of the same run (ms)",
    value: r1(wall.before),
  },
  ratio: r1(wall.before / wall.after),
  load: load(),
});
figures.push({
  id: "jail.start_cpu_ms",
  label: "CPU time per jail start (every process of the jail), mean",
  value: r1(cpu.after),
  unit: "ms",
  baseline: { label: "the per-bind script it replaced, same run (ms)", value: r1(cpu.before) },
  ratio: r1(cpu.before / cpu.after),
});

// 8 at once
for (let round = 0; round < 2; round++) {
  for (const name of round ? ["after", "before"] : ["before", "after"]) {
    const n = 24;
    let next = 0;
    const t = now();
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < n) await start(variants[name]);
      }),
    );
    res[name].rate = [...(res[name].rate ?? []), (n * 1000) / (now() - t)];
  }
}
const rate = { before: median(res.before.rate), after: median(res.after.rate) };
log(`8 at once: ${rate.before.toFixed(1)} -> ${rate.after.toFixed(1)} starts/s, load ${load()}`);
figures.push({
  id: "jail.starts_per_s_8",
  label: "jail starts/s with 8 at once (24 starts a round, 2 alternating rounds each)",
  value: r1(rate.after),
  unit: "starts/s",
  baseline: { label: "the per-bind script it replaced, same run (starts/s)", value: r1(rate.before) },
  ratio: r1(rate.after / rate.before),
  load: load(),
});

// processes exec'd per start
if (existsSync("/usr/bin/strace")) {
  const execs = {};
  for (const [name, argv] of Object.entries(variants)) {
    const out = join(tmp, `${name}.strace`);
    const r = spawnSync("/usr/bin/strace", ["-f", "-qq", "-e", "trace=execve", "-o", out, ...argv], { env: ENV });
    if (r.status !== 0) continue;
    execs[name] = readFileSync(out, "utf8")
      .split("\n")
      .filter((l) => /execve\(/.test(l) && / = 0$/.test(l)).length;
  }
  if (execs.before && execs.after) {
    log(`processes exec'd per start: ${execs.before} -> ${execs.after}`);
    figures.push({
      id: "jail.execs_per_start",
      label: "programs exec'd per jail start (strace -f; the jail's program included)",
      value: execs.after,
      unit: "execs",
      baseline: { label: "the per-bind script it replaced", value: execs.before },
      ratio: r1(execs.before / execs.after),
    });
  }
}

rmSync(tmp, { recursive: true, force: true });
done();
