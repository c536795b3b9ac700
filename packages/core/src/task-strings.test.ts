import { describe, expect, it } from "vitest";
import { forEachTaskString, mapTaskStrings, TASK_WALK_DEPTH } from "./task-strings.js";

const task = {
  id: "/abs/id",
  prompt: "open /etc/passwd",
  Description: "/also/text",
  init: { file: "/data/a.xlsx", files: ["/data/b.xlsx", 3], prompt: "/nested/prompt/is/not/text" },
};

describe("task strings", () => {
  it("visits the strings outside the top-level text fields, with where they sit", () => {
    const seen: Array<[string, string]> = [];
    forEachTaskString(task, (s, where) => void seen.push([where, s]));
    expect(seen).toEqual([
      ["task.init.file", "/data/a.xlsx"],
      ["task.init.files[0]", "/data/b.xlsx"],
      ["task.init.prompt", "/nested/prompt/is/not/text"],
    ]);
  });

  it("stops when the visitor says so", () => {
    const seen: string[] = [];
    forEachTaskString(task, (s) => seen.push(s) < 1);
    expect(seen).toEqual(["/data/a.xlsx"]);
  });

  it("maps a copy, leaving text fields, other values and the original alone", () => {
    const out = mapTaskStrings(task, (s) => s.toUpperCase());
    expect(out).toEqual({
      ...task,
      init: { file: "/DATA/A.XLSX", files: ["/DATA/B.XLSX", 3], prompt: "/NESTED/PROMPT/IS/NOT/TEXT" },
    });
    expect(task.init.file).toBe("/data/a.xlsx");
  });

  it("walks no deeper than TASK_WALK_DEPTH", () => {
    let deep: unknown = "/deep/path";
    for (let i = 0; i < TASK_WALK_DEPTH + 3; i++) deep = { k: deep };
    const seen: string[] = [];
    forEachTaskString(deep, (s) => void seen.push(s));
    expect(seen).toEqual([]);
    expect(mapTaskStrings(deep, () => "x")).toEqual(deep);
  });
});
