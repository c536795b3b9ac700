import { describe, expect, it } from "vitest";
import { resumeCommand } from "./eval.js";

describe("resumeCommand", () => {
  const argv = (...a: string[]) => ["node", "benchmax", ...a];

  it("repeats the arguments with the run dir and --resume, quoting what the shell would split", () => {
    expect(resumeCommand(argv("eval", "math", "--group", "4", "--force"), "runs/math-1")).toBe(
      "benchmax eval math --group 4 --out runs/math-1 --resume",
    );
    expect(resumeCommand(argv("eval", "./my env", "--out=old", "--model", "a b"), "/tmp/x y")).toBe(
      "benchmax eval './my env' --model 'a b' --out '/tmp/x y' --resume",
    );
    expect(resumeCommand(argv("eval", "math", "--out", "r", "--resume"), "r")).toBe(
      "benchmax eval math --out r --resume",
    );
  });

  it("with --all resumes the whole --out, or the interrupted env when the run dirs were the defaults", () => {
    expect(
      resumeCommand(argv("eval", "--all", "--out", "runs/all"), "runs/all/math", { spec: "math", out: "runs/all" }),
    ).toBe("benchmax eval --all --out runs/all --resume");
    expect(resumeCommand(argv("eval", "--all"), "runs/math-1", { spec: "math" })).toBe(
      "benchmax eval math --out runs/math-1 --resume",
    );
  });
});
