import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// a plain .mjs script (scripts/pack.d.mts types it): the same code as `npm run pack`
import { packAll, publicPackages } from "../../../scripts/pack.mjs";

/**
 * The Python distribution (`benchmax-client`: packages/skyrl/python, pyproject.toml + setuptools) as a Python user
 * meets it, offline: `pip wheel --no-build-isolation` with Debian's setuptools, the wheel installed with
 * `--no-index --no-deps` into a fresh venv, an episode against a real `benchmax serve` on 127.0.0.1 through the
 * installed copy; `pip install -e`; the version read from @benchmax/skyrl's package.json; and the npm tarball's
 * python/ folder building the same wheel. Every build runs on a copy of the sources in a temp dir (setuptools writes
 * build/ and *.egg-info beside the sources).
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const skyrl = join(root, "packages/skyrl");
const version = JSON.parse(readFileSync(join(skyrl, "package.json"), "utf8")).version as string;
const cli = join(root, "packages/cli/bin/benchmax.js");

// Debian's interpreter, where python3-setuptools, python3-wheel, python3-pip and python3-venv put their modules (a
// pyenv python3 first on PATH lacks them); setuptools >= 64 for PEP 660 editable installs
const PY = "/usr/bin/python3";
const probe = existsSync(PY)
  ? spawnSync(
      PY,
      [
        "-c",
        `import importlib.metadata as md, importlib.util as u
for m in ("setuptools", "wheel", "pip", "venv", "ensurepip"):
    assert u.find_spec(m), "no module %s" % m
v = md.version("setuptools")
assert int(v.split(".")[0]) >= 64, "setuptools %s is older than 64 (no PEP 660 editable installs)" % v
print(" ".join("%s %s" % (d, md.version(d)) for d in ("setuptools", "wheel", "pip")))`,
      ],
      { encoding: "utf8" },
    )
  : undefined;
const missing = !probe
  ? `${PY} not found`
  : probe.status !== 0
    ? `${PY} lacks Debian's python3-setuptools / python3-wheel / python3-pip / python3-venv: ${probe.stderr.trim().split("\n").pop()}`
    : "";
if (missing)
  console.warn(
    `skipping the Python package check: ${missing} (apt-get install python3-setuptools python3-wheel python3-pip python3-venv)`,
  );
else console.log(`Python package check with ${PY}: ${probe?.stdout.trim()}`);

// no PYTHONPATH or user site from the caller's shell: imports come from the venv only
const pyEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PYTHON|PIP_|VIRTUAL_ENV$)/.test(k))),
  PYTHONNOUSERSITE: "1",
  PYTHONDONTWRITEBYTECODE: "1",
  PIP_DISABLE_PIP_VERSION_CHECK: "1",
};

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = pyEnv) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 180_000, env });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed with ${r.status}:\n${out.slice(-4000)}`);
  return r.stdout;
}

/** pip wheel, offline, as the README says: the one wheel it made in `out`. */
function pipWheel(project: string, out: string): string {
  sh(PY, ["-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", out, project], dirname(out));
  const made = readdirSync(out).filter((f) => f.endsWith(".whl"));
  expect(made).toHaveLength(1);
  return join(out, made[0]!);
}

/** A wheel's file names and its METADATA, read with Python's zipfile. */
function wheelContents(whl: string): { names: string[]; metadata: string } {
  const out = sh(
    PY,
    [
      "-c",
      `import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
print(json.dumps({"names": sorted(z.namelist()), "metadata": z.read(meta[0]).decode()}))`,
      whl,
    ],
    dirname(whl),
  );
  return JSON.parse(out);
}

/** The sources as a checkout holds them: package.json and python/, without caches or earlier build outputs. */
function copySources(to: string): string {
  mkdirSync(to, { recursive: true });
  cpSync(join(skyrl, "package.json"), join(to, "package.json"));
  cpSync(join(skyrl, "python"), join(to, "python"), {
    recursive: true,
    filter: (src) => !/(^|[\\/])(__pycache__|build|dist|[^\\/]+\.egg-info)$/.test(src.slice(skyrl.length)),
  });
  return join(to, "python");
}

// One episode through each import package of the installed distribution, as a trainer would write it: the task's
// expression goes to the calculator tool, and the model answers with the tool's result.
const EPISODE = `import importlib.metadata, json, os, re, sys
import benchmax_client, benchmax_skyrl
from benchmax_client import BenchmaxEnv
from benchmax_skyrl import BenchmaxTextEnv

url, token = os.environ["BENCHMAX_URL"], os.environ["BENCHMAX_TOKEN"]
out = {
    "client_file": benchmax_client.__file__,
    "skyrl_file": benchmax_skyrl.__file__,
    "client_version": benchmax_client.__version__,
    "skyrl_version": benchmax_skyrl.__version__,
    "dist_version": importlib.metadata.version("benchmax-client"),
    "requires": importlib.metadata.requires("benchmax-client"),
}

def call(expression):
    return '<tool_call>{"name": "calculator", "arguments": %s}</tool_call>' % json.dumps({"expression": expression})

with BenchmaxEnv(url, token) as env:
    task = env.tasks(limit=1)[0]
    obs = env.reset(task_id=task["id"])
    r1 = env.step(call(task["prompt"]))
    tool = [m for m in r1["observation"]["messages"] if m["role"] in ("tool", "user")][-1]
    value = re.findall(r"-?\\d+(?:\\.\\d+)?", benchmax_client.text_of(tool["content"]))[-1]
    r2 = env.step("<answer>%s</answer>" % value)
    out["client"] = {"task": task["id"], "tools": [t["name"] for t in obs["tools"]], "tool_result": value,
                     "first_done": r1["done"], "done": r2["done"], "reward": r2["reward"], "passed": r2["info"]["passed"]}

env = BenchmaxTextEnv({"endpoints": url, "token": token}, {"max_turns": 3, "extra_info": {"task_id": task["id"]}})
env.init([{"role": "user", "content": task["prompt"]}])
s1 = env.step(call(task["prompt"]))
s2 = env.step("<answer>%s</answer>" % value)
env.close()
out["skyrl"] = {"first_done": s1["done"], "done": s2["done"], "reward": s2["reward"], "observation": s1["observations"]}
print(json.dumps(out))
`;

describe.skipIf(Boolean(missing))("the Python distribution benchmax-client (pyproject.toml, setuptools)", () => {
  let work: string;
  let server: ChildProcess | undefined;
  let url = "";
  const token = randomBytes(12).toString("hex");
  // the wheel of the checkout's sources, built once by whichever test needs it first (each test runs alone with -t)
  let built = "";
  const wheelOfSources = () => {
    built ||= pipWheel(copySources(join(work, "src")), join(work, "wheels"));
    return built;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "benchmax-python-package-"));
    if (!existsSync(join(root, "packages/cli/dist/cli.js")))
      throw new Error("packages/cli/dist is missing: build the packages first (npm run build)");
    // a real `benchmax serve` of the math env on a free loopback port
    server = spawn(process.execPath, [cli, "serve", "math", "--port", "0", "--token", token], {
      cwd: work,
      stdio: ["ignore", "pipe", "pipe"],
    });
    url = await new Promise<string>((ok, fail) => {
      let log = "";
      const read = (d: Buffer) => {
        log += d;
        const m = log.match(/serving math at (http:\/\/127\.0\.0\.1:\d+)/);
        if (m) ok(m[1]!);
      };
      server!.stdout!.on("data", read);
      server!.stderr!.on("data", read);
      server!.on("exit", (code) => fail(new Error(`benchmax serve exited with ${code}:\n${log}`)));
    });
  }, 120_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((ok) => server!.on("exit", ok));
      server.kill("SIGINT");
      await exited;
    }
    if (work && !process.env.KEEP) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  it("pip wheel --no-build-isolation makes one wheel, benchmax-client at @benchmax/skyrl's version, holding both packages", () => {
    const wheel = wheelOfSources();
    expect(basename(wheel)).toBe(`benchmax_client-${version}-py3-none-any.whl`);
    const { names, metadata } = wheelContents(wheel);
    for (const f of ["benchmax_client/__init__.py", "benchmax_client/_version.py", "benchmax_client/trl.py"])
      expect(names).toContain(f);
    for (const f of ["benchmax_skyrl/__init__.py", "benchmax_skyrl/text_env.py", "benchmax_skyrl/entrypoint.py"])
      expect(names).toContain(f);
    // the sources only: no tests, trainer shims, build script or caches
    expect(names.filter((n) => !/^(benchmax_client|benchmax_skyrl)\/[\w]+\.py$|\.dist-info\//.test(n))).toEqual([]);
    expect(names.some((n) => n.includes("__pycache__"))).toBe(false);
    expect(metadata).toMatch(/^Name: benchmax-client$/m);
    expect(metadata).toContain(`\nVersion: ${version}\n`);
    expect(metadata).toMatch(/^Requires-Python: >=3\.9$/m);
    expect(metadata).toMatch(/^License: Apache-2\.0$/m);
    expect(metadata).not.toMatch(/^Requires-Dist:/m);
    expect(names).toContain(`benchmax_client-${version}.dist-info/LICENSE`);
  });

  it("installs with --no-index --no-deps into a fresh venv and runs an episode against `benchmax serve`", () => {
    const wheel = wheelOfSources();
    const venv = join(work, "venv");
    sh(PY, ["-m", "venv", venv], work); // its own pip, from Debian's bundled wheels (ensurepip): offline
    const py = join(venv, "bin", "python");
    sh(py, ["-m", "pip", "install", "--no-index", "--no-deps", "--quiet", wheel], work);
    // run outside every source folder: benchmax_client and benchmax_skyrl can only come from the venv
    const runDir = join(work, "run");
    mkdirSync(runDir);
    writeFileSync(join(runDir, "episode.py"), EPISODE);
    const out = JSON.parse(
      sh(py, ["episode.py"], runDir, { ...pyEnv, BENCHMAX_URL: url, BENCHMAX_TOKEN: token })
        .trim()
        .split("\n")
        .pop()!,
    );
    const site = join(venv, "lib");
    expect(out.client_file.startsWith(site) && out.client_file.includes("site-packages")).toBe(true);
    expect(out.skyrl_file.startsWith(site)).toBe(true);
    expect(out).toMatchObject({
      client_version: version,
      skyrl_version: version,
      dist_version: version,
      requires: null,
    });
    // the math fixtures' first task, 12 + 8 × 3 − 4 ÷ 2: the calculator says 34, the answer scores 1
    expect(out.client).toEqual({
      task: "arith-1",
      tools: ["calculator"],
      tool_result: "34",
      first_done: false,
      done: true,
      reward: 1,
      passed: true,
    });
    expect(out.skyrl).toMatchObject({ first_done: false, done: true, reward: 1 });
    expect(JSON.stringify(out.skyrl.observation)).toContain("34");
  });

  it("pip install -e: imports come from the source folder, and the version follows package.json", () => {
    const src = copySources(join(work, "editable"));
    // the build backend (setuptools, wheel) must be importable where pip builds without isolation: Debian's, seen
    // through --system-site-packages; offline, so no isolated build env can be fetched
    const venv = join(work, "venv-editable");
    sh(PY, ["-m", "venv", "--system-site-packages", "--without-pip", venv], work);
    const py = join(venv, "bin", "python");
    sh(py, ["-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "--quiet", "-e", src], work);
    const runDir = join(work, "run-editable");
    mkdirSync(runDir);
    const show = () =>
      JSON.parse(
        sh(
          py,
          [
            "-c",
            `import importlib.metadata, json, benchmax_client, benchmax_skyrl
from benchmax_client import BenchmaxEnv
print(json.dumps({"file": benchmax_client.__file__, "skyrl": benchmax_skyrl.__file__,
  "version": benchmax_client.__version__, "skyrl_version": benchmax_skyrl.__version__,
  "dist_version": importlib.metadata.version("benchmax-client")}))`,
          ],
          runDir,
        ),
      );
    const before = show();
    expect(before).toEqual({
      file: join(src, "benchmax_client", "__init__.py"),
      skyrl: join(src, "benchmax_skyrl", "__init__.py"),
      version,
      skyrl_version: version,
      dist_version: version,
    });
    // an edit to the sources is seen without reinstalling
    writeFileSync(join(src, "benchmax_client", "editable_probe.py"), "VALUE = 'from the source folder'\n");
    expect(sh(py, ["-c", "from benchmax_client.editable_probe import VALUE; print(VALUE)"], runDir).trim()).toBe(
      "from the source folder",
    );
    // one place for the version: a bump of @benchmax/skyrl's package.json (what `changeset version` does) is the
    // package's __version__ at once, and the version of the next wheel built
    const pkgPath = join(dirname(src), "package.json");
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
    writeFileSync(pkgPath, JSON.stringify({ ...pkg, version: "9.8.7" }, null, 2));
    expect(show()).toMatchObject({ version: "9.8.7", skyrl_version: "9.8.7" });
    rmSync(join(src, "benchmax_client", "editable_probe.py"));
    const bumped = pipWheel(src, join(work, "wheels-bumped"));
    expect(basename(bumped)).toBe("benchmax_client-9.8.7-py3-none-any.whl");
    expect(wheelContents(bumped).metadata).toContain("\nVersion: 9.8.7\n");
  });

  it("the npm package @benchmax/skyrl ships the Python project: its python/ folder builds the same wheel", () => {
    const wheel = wheelOfSources();
    const skip = publicPackages()
      .map((p) => p.name)
      .filter((n) => n !== "@benchmax/skyrl");
    const [packed] = packAll({ outDir: join(work, "npm"), build: false, skip });
    expect(packed?.name).toBe("@benchmax/skyrl");
    const unpacked = join(work, "npm", "unpacked");
    mkdirSync(unpacked);
    sh("tar", ["xzf", packed!.tarball, "-C", unpacked], work);
    const fromNpm = pipWheel(join(unpacked, "package", "python"), join(work, "wheels-npm"));
    expect(basename(fromNpm)).toBe(basename(wheel));
    expect(wheelContents(fromNpm).names).toEqual(wheelContents(wheel).names);
  });
});
