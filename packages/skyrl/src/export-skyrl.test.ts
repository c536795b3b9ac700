import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Task } from "@benchmax/core";
import { calcEnv } from "@benchmax/server/testing";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from "hyparquet";
import { afterAll, describe, expect, it } from "vitest";
import { exportDataRoot, exportSkyrl, exportSkyrlMixed, parseSplit } from "./export-skyrl.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function read(path: string) {
  const file = await asyncBufferFromFile(path);
  const rows = await parquetReadObjects({ file });
  const schema = parquetSchema(await parquetMetadataAsync(file));
  return { rows: rows as any[], schema };
}

describe("exportSkyrl", () => {
  it("writes train/validation parquet in SkyRL's row shape, read back by an independent reader", async () => {
    const out = mkdtempSync(join(tmpdir(), "bmx-skyrl-"));
    dirs.push(out);
    const env = calcEnv();
    const tasks = [
      ...(await env.capabilities!.tasks!.loadTasks!()),
      { id: "obj", prompt: "What is 3 + 4?", groundTruth: { value: 7 } as unknown as string },
    ];
    const res = await exportSkyrl(env, { out, tasks, trainFraction: 0.5, seed: 1 });
    expect(res).toMatchObject({ train: 2, validation: 2, envClass: "benchmax_calc" });
    const train = await read(join(out, "train.parquet"));
    const val = await read(join(out, "validation.parquet"));
    const all = [...train.rows, ...val.rows];
    expect(all.map((r) => r.extra_info.task_id).sort()).toEqual(["obj", "t1", "t2", "t3"]);
    const t2 = all.find((r) => r.extra_info.task_id === "t2");
    expect(t2.data_source).toBe("benchmax/calc");
    expect(t2.env_class).toBe("benchmax_calc");
    expect(t2.reward_spec).toEqual({ method: "rule", ground_truth: "17" });
    expect(t2.prompt).toHaveLength(2);
    expect(t2.prompt[0].role).toBe("system");
    expect(t2.prompt[0].content).toContain("You add numbers.");
    expect(t2.prompt[0].content).toContain("# Tools");
    expect(t2.prompt[0].content).toContain('"name": "add"');
    expect(t2.prompt[1]).toEqual({ role: "user", content: "What is 10 + 7?" });
    expect(JSON.parse(t2.extra_info.task)).toEqual({ id: "t2", prompt: "What is 10 + 7?", groundTruth: "17" });
    expect(all.find((r) => r.extra_info.task_id === "obj").reward_spec.ground_truth).toBe('{"value":7}');
    expect(train.rows.every((r) => r.extra_info.split === "train")).toBe(true);
    expect(val.rows.map((r) => Number(r.extra_info.index))).toEqual([0, 1]);
    // nested columns are real parquet LIST / STRUCT groups, not JSON strings
    const prompt = train.schema.children.find((c) => c.element.name === "prompt")!;
    expect(prompt.element.converted_type).toBe("LIST");
    expect(prompt.children[0]!.children[0]!.children.map((c) => c.element.name)).toEqual(["role", "content"]);
    const spec = train.schema.children.find((c) => c.element.name === "reward_spec")!;
    expect(spec.children.map((c) => c.element.name)).toEqual(["method", "ground_truth"]);
    // the shim is written beside the data
    expect(existsSync(join(out, "python", "benchmax_skyrl", "text_env.py"))).toBe(true);
    // the client the shim is built on travels with it
    expect(existsSync(join(out, "python", "benchmax_client", "transport.py"))).toBe(true);
    expect(JSON.parse(readFileSync(join(out, "export.json"), "utf8"))).toMatchObject({ train: 2, validation: 2 });
  });

  it("exports the env's own dataset by default and parses --split", async () => {
    const out = mkdtempSync(join(tmpdir(), "bmx-skyrl-"));
    dirs.push(out);
    const res = await exportSkyrl(calcEnv(), { out, writeShim: false, inlineTasks: false });
    expect(res.train + res.validation).toBe(3);
    expect(res.validation).toBe(1);
    const { rows } = await read(join(out, "train.parquet"));
    expect(rows[0].extra_info.task).toBe("");
    expect(parseSplit("train=0.8")).toBe(0.8);
    expect(parseSplit(undefined)).toBe(0.9);
    expect(() => parseSplit("train=1.5")).toThrow(/--split must be/);
    expect(() => parseSplit("half")).toThrow(/--split must be/);
  });
});

describe("portable exports", () => {
  it("writes file paths relative to a data root, so rows carry no paths of the exporting machine", async () => {
    const data = mkdtempSync(join(tmpdir(), "bmx-data-"));
    const out = mkdtempSync(join(tmpdir(), "bmx-skyrl-"));
    dirs.push(data, out);
    mkdirSync(join(data, "sheets", "1"), { recursive: true });
    for (const f of ["1_1_input.xlsx", "1_1_answer.xlsx"]) writeFileSync(join(data, "sheets", "1", f), "x");
    const input = join(data, "sheets", "1", "1_1_input.xlsx");
    const answer = join(data, "sheets", "1", "1_1_answer.xlsx");
    const task = {
      id: "x1",
      prompt: `Edit ${input} in place`, // text a model reads stays as written
      groundTruth: { answers: [answer], answerPosition: "A1" },
      init: { inputs: [input] },
    } as unknown as Task;
    const res = await exportSkyrl(calcEnv(), { out, tasks: [task], trainFraction: 1, writeShim: false });
    expect(res.dataRoot).toBe(join(data, "sheets", "1"));
    const [row] = (await read(join(out, "train.parquet"))).rows;
    const inline = JSON.parse(row.extra_info.task);
    expect(inline.init.inputs).toEqual(["./1_1_input.xlsx"]);
    expect(inline.groundTruth.answers).toEqual(["./1_1_answer.xlsx"]);
    expect(inline.prompt).toBe(`Edit ${input} in place`);
    expect(JSON.parse(row.reward_spec.ground_truth).answers).toEqual(["./1_1_answer.xlsx"]);
    expect(JSON.stringify({ ...inline, prompt: "" })).not.toContain(data);
    expect(JSON.stringify(row.reward_spec)).not.toContain(data);
    expect(JSON.parse(readFileSync(join(out, "export.json"), "utf8")).dataRoot).toBe(join(data, "sheets", "1"));

    // the dataset's folder as the root when given; false keeps absolute paths
    const res2 = await exportSkyrl(calcEnv(), {
      out,
      tasks: [task],
      trainFraction: 1,
      writeShim: false,
      dataset: data,
    });
    expect(res2.dataRoot).toBe(data);
    expect(JSON.parse((await read(join(out, "train.parquet"))).rows[0].extra_info.task).init.inputs).toEqual([
      "./sheets/1/1_1_input.xlsx",
    ]);
    await exportSkyrl(calcEnv(), { out, tasks: [task], trainFraction: 1, writeShim: false, dataRoot: false });
    expect(JSON.parse((await read(join(out, "train.parquet"))).rows[0].extra_info.task).init.inputs).toEqual([input]);
  });

  it("leaves tasks without files alone", async () => {
    const env = calcEnv();
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    expect(exportDataRoot(tasks, {})).toBeUndefined();
  });
});

describe("exportSkyrlMixed", () => {
  it("writes one dataset of several envs, each row with its own env_class", async () => {
    const out = mkdtempSync(join(tmpdir(), "bmx-mixed-"));
    dirs.push(out);
    const custom = calcEnv({ customActions: true });
    const res = await exportSkyrlMixed([{ env: calcEnv() }, { env: custom, envClass: "benchmax_calc_custom" }], {
      out,
      trainFraction: 0.7,
      seed: 3,
    });
    expect(res.envs.map((e) => [e.envClass, e.train, e.validation])).toEqual([
      ["benchmax_calc", 2, 1],
      ["benchmax_calc_custom", 2, 1],
    ]);
    const train = (await read(join(out, "train.parquet"))).rows;
    expect(train).toHaveLength(4);
    expect(train.map((r) => r.env_class).sort()).toEqual([
      "benchmax_calc",
      "benchmax_calc",
      "benchmax_calc_custom",
      "benchmax_calc_custom",
    ]);
    expect(train.map((r) => Number(r.extra_info.index))).toEqual([0, 1, 2, 3]);
    expect(existsSync(join(out, "python", "benchmax_skyrl", "routing.py"))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(out, "export.json"), "utf8"));
    expect(manifest).toMatchObject({ train: 4, validation: 2, env: "calc,calc" });
    await expect(exportSkyrlMixed([{ env: calcEnv() }, { env: calcEnv() }], { out })).rejects.toThrow(
      /share env_class benchmax_calc/,
    );
    await expect(exportSkyrlMixed([], { out })).rejects.toThrow(/at least one env/);
  });
});
