import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkOutDir, resumeCommand, runName } from "./eval.js";

describe("resumeCommand", () => {
  const argv = (...a: string[]) => ["node", "benchmax", ...a];

  it("repeats the arguments with the run dir and --resume, quoting what the shell would split", () => {
    expect(resumeCommand(argv("eval", "math", "--group", "4", "--force"), "runs/math-1")).toBe(
      "npx benchmax eval math --group 4 --out runs/math-1 --resume",
    );
    expect(resumeCommand(argv("eval", "./my env", "--out=old", "--model", "a b"), "/tmp/x y")).toBe(
      "npx benchmax eval './my env' --model 'a b' --out '/tmp/x y' --resume",
    );
    expect(resumeCommand(argv("eval", "math", "--out", "r", "--resume"), "r")).toBe(
      "npx benchmax eval math --out r --resume",
    );
  });

  it("with --all resumes the whole --out, or the interrupted env when the run dirs were the defaults", () => {
    expect(
      resumeCommand(argv("eval", "--all", "--out", "runs/all"), "runs/all/math", { spec: "math", out: "runs/all" }),
    ).toBe("npx benchmax eval --all --out runs/all --resume");
    expect(resumeCommand(argv("eval", "--all"), "runs/math-1", { spec: "math" })).toBe(
      "npx benchmax eval math --out runs/math-1 --resume",
    );
  });
});

describe("resume hint secrets", () => {
  it("never echoes --api-key; the key comes from the environment", () => {
    const argv = ["node", "benchmax", "eval", "math", "--policy", "openai", "--api-key", "sk-secret", "--model", "m"];
    const cmd = resumeCommand(argv, "runs/r");
    expect(cmd).not.toContain("sk-secret");
    expect(cmd).toBe(
      "OPENAI_API_KEY=<your key> npx benchmax eval math --policy openai --model m --out runs/r --resume",
    );
    expect(resumeCommand(["node", "benchmax", "eval", "math", "--api-key=sk-2"], "r")).not.toContain("sk-2");
  });
});

describe("run dir names", () => {
  it("names a path's folder, never a hidden `.-<date>` dir", () => {
    expect(runName(".")).toBe(basename(process.cwd()));
    expect(runName("./")).toBe(basename(process.cwd()));
    expect(runName("..")).toBe(basename(join(process.cwd(), "..")));
    expect(runName("./envs/my-env/")).toBe("my-env");
    expect(runName("math")).toBe("math");
    expect(runName("@benchmax/env-math")).toBe("env-math");
    expect(runName("/")).toBe("env");
  });
});

describe("--out", () => {
  const dir = () => {
    const d = join(tmpdir(), `bmx-out-${process.pid}-${Math.random().toString(36).slice(2)}`);
    mkdirSync(d, { recursive: true });
    return d;
  };
  it("refuses a folder that holds other things (/, a home dir), takes new, empty and run dirs", () => {
    expect(() => checkOutDir("/", false)).toThrow(/--out \/ is a folder that holds other things .* not a benchmax run/);
    const other = dir();
    writeFileSync(join(other, "notes.txt"), "mine");
    expect(() => checkOutDir(other, false)).toThrow(/holds other things \(notes\.txt\)/);
    expect(() => checkOutDir(join(other, "new"), false)).not.toThrow();
    expect(() => checkOutDir(dir(), false)).not.toThrow();
    const run = dir();
    writeFileSync(join(run, "run.json"), "{}");
    expect(() => checkOutDir(run, false)).not.toThrow();
    const all = dir();
    mkdirSync(join(all, "math"));
    writeFileSync(join(all, "math", "results.jsonl"), "");
    expect(() => checkOutDir(all, true)).not.toThrow();
    expect(() => checkOutDir(all, false)).toThrow();
    expect(() => checkOutDir(join(run, "run.json"), false)).toThrow(/is not a folder/);
  });
});
