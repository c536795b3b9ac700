import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fsField, RootPlan } from "./bind-lines.js";
import { JAIL_HOST_ID, type JailSpec, jailAvailable, script, spawnJail } from "./jail.js";

const jail = jailAvailable();
const probe = spawnSync(
  "/usr/bin/python3",
  ["-I", "-S", "-c", "import os, sys; print(os.path.realpath(sys.executable)); print(os.path.dirname(os.__file__))"],
  { encoding: "utf8" },
);
const python = probe.status === 0 ? probe.stdout.trim().split("\n") : undefined;
if (!jail.ok) console.warn(`jail tests skipped: ${jail.reason}`);
else if (!python) console.warn("jail tests skipped: no /usr/bin/python3 to run inside the jail");

const asRoot = process.getuid?.() === 0;
const tmp = mkdtempSync(join(tmpdir(), "jail-test-"));
chmodSync(tmp, 0o755);
afterAll(() => spawnSync("rm", ["-rf", tmp]));

/** A host folder (and a file in it) the jail's own uid may write by its mode bits: only the mount can refuse. */
function writableHostFolder(name: string): { dir: string; file: string } {
  const dir = join(tmp, name);
  mkdirSync(dir);
  const file = join(dir, "f.txt");
  writeFileSync(file, "host\n");
  chmodSync(dir, 0o777);
  chmodSync(file, 0o666);
  if (asRoot) {
    chownSync(dir, JAIL_HOST_ID, JAIL_HOST_ID);
    chownSync(file, JAIL_HOST_ID, JAIL_HOST_ID);
  }
  return { dir, file };
}

function spec(code: string, readOnly: string[], box: Record<string, string> = {}): JailSpec {
  const [exe, stdlib] = python!;
  return {
    readOnly: [exe!, stdlib!, ...readOnly],
    box,
    argv: [exe!, "-I", "-S", "-c", code],
    env: { LANG: "C.UTF-8" },
    memoryMb: 256,
    memoryLimit: "as",
    diskMb: 8,
    maxProcs: 8,
  };
}

async function runJailed(s: JailSpec): Promise<{ out: string; err: string; code: number | null }> {
  const { child } = spawnJail(s);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d));
  child.stderr.on("data", (d: Buffer) => (err += d));
  child.stdin.end();
  const code = await new Promise<number | null>((r) => child.on("exit", (c: number | null) => r(c)));
  // bytes may still be on their way when the exit arrives
  await new Promise((r) => setTimeout(r, 50));
  return { out, err, code };
}

const WRITE_PROBE = (dir: string, boxed: string) => `
import os, errno, json
def attempt(f):
    try:
        f()
        return "written"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def write(p):
    with open(p, "w") as fh:
        fh.write("jail")
flags = lambda p: sorted(k for k, bit in (("ro", os.ST_RDONLY), ("nosuid", os.ST_NOSUID), ("nodev", os.ST_NODEV)) if os.statvfs(p).f_flag & bit)
print(json.dumps({
  "file": attempt(lambda: write(${JSON.stringify(`${dir}/f.txt`)})),
  "new": attempt(lambda: write(${JSON.stringify(`${dir}/new.txt`)})),
  "mkdir": attempt(lambda: os.mkdir(${JSON.stringify(`${dir}/sub`)})),
  "box": attempt(lambda: write("/box/${boxed}")),
  "root": attempt(lambda: os.mkdir("/evil")),
  "work": attempt(lambda: write("/work/ok.txt")),
  "flags": {p: flags(p) for p in (${JSON.stringify(dir)}, "/box/${boxed}", "/", "/work")},
}))
`;

describe.runIf(jail.ok && python)("the jail's root (one mount -a from an fstab)", () => {
  it("a bound path is read-only even where its mode bits would let the jail write (ro,nosuid,nodev in one mount)", async () => {
    const { dir } = writableHostFolder("ro");
    const boxed = writableHostFolder("box").file;
    const r = await runJailed(spec(WRITE_PROBE(dir, "b.txt"), [dir], { "b.txt": boxed }));
    expect(r.err).toBe("");
    expect(JSON.parse(r.out)).toEqual({
      file: "EROFS",
      new: "EROFS",
      mkdir: "EROFS",
      box: "EROFS",
      root: "EROFS",
      work: "written",
      flags: {
        [dir]: ["nodev", "nosuid", "ro"],
        "/box/b.txt": ["nodev", "nosuid", "ro"],
        "/": ["ro"],
        "/work": ["nodev", "nosuid"],
      },
    });
    expect(readFileSync(join(dir, "f.txt"), "utf8")).toBe("host\n");
    expect(readFileSync(boxed, "utf8")).toBe("host\n");
  });

  it("host paths with spaces, '#' and backslashes are bound at their own path (fstab escapes)", async () => {
    const dir = join(tmp, "odd name #1 \\ x");
    mkdirSync(dir);
    writeFileSync(join(dir, "in.txt"), "seen\n");
    const r = await runJailed(spec(`print(open(${JSON.stringify(`${dir}/in.txt`)}).read(), end="")`, [dir]));
    expect(r).toMatchObject({ out: "seen\n", code: 0 });
    expect(fsField("/a b\t#c\\d")).toBe("/a\\040b\\011\\043c\\134d");
  });

  it("the script starts a handful of processes whatever the number of binds", () => {
    const many = Array.from({ length: 20 }, (_, i) => writableHostFolder(`many-${i}`).dir);
    const lines = script(spec("pass", many), "/tmp/root").split("\n");
    // the root's tmpfs, one mount -a, the read-only remount
    expect(lines.filter((l) => /^mount /.test(l))).toHaveLength(3);
    expect(lines.filter((l) => /(^|; )mkdir /.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /\$\(|dirname/.test(l))).toEqual([]);
    expect(lines.at(-1)).toMatch(/^exec \/usr\/bin\/env -i /);
  });

  it("a folder under a bound folder on the same filesystem is not bound again", () => {
    const inner = writableHostFolder("nested").dir;
    const plan = new RootPlan("/r").hostPaths([tmp, inner]);
    expect(plan.fstab().split("\n").filter(Boolean)).toHaveLength(1);
  });
});
