import { hasStateView, type StateView } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { createExcelEnv } from "./index.js";
import { VIEW_MAX_COLS, VIEW_MAX_ROWS } from "./state-view.js";

// excel's state view (StateViewCapability, drawn by `benchmax play`): the rollout's workbook as a grid of each
// sheet's used range, read without changing it, and capped in size.

const env = createExcelEnv();
afterAll(() => env.close());

type Grid = Extract<StateView, { kind: "grid" }>;

describe("excel: the workbook as a grid", () => {
  it("shows written values, a calculated formula's value, a new sheet, and says where a big range was cut", async () => {
    if (!hasStateView(env)) throw new Error("excel should offer renderState");
    const [task] = await env.capabilities!.tasks!.loadTasks!(undefined, { limit: 1 });
    const id = "state-view";
    await env.init(id, task!);
    try {
      const before = (await env.capabilities.stateView.renderState(id)) as Grid;
      expect(before.kind).toBe("grid");
      const sheet = before.sheets[0]!.name;
      const call = (name: string, args: Record<string, unknown>) =>
        env.runTool(id, { id: name, name, arguments: args });
      expect((await call("add_sheet", { name: "View" })).isError).toBe(false);
      const w = await call("write_range", { sheet: "View", start: "B2", values: [[2, 3, "=B2*C2", "text", true]] });
      expect(w.isError, JSON.stringify(w.content)).toBe(false);
      const rows = Array.from({ length: VIEW_MAX_ROWS + 10 }, (_, i) => [i]);
      expect((await call("write_range", { sheet: "View", start: "A10", values: rows })).isError).toBe(false);
      expect((await call("write_cell", { sheet: "View", cell: "AH1", value: "far" })).isError).toBe(false);

      const after = (await env.capabilities.stateView.renderState(id)) as Grid;
      expect(after.sheets.map((s) => s.name)).toEqual([...before.sheets.map((s) => s.name), "View"]);
      // the original sheet is as it was: the view reads, never writes
      expect(after.sheets.find((s) => s.name === sheet)).toEqual(before.sheets[0]);
      const view = after.sheets.find((s) => s.name === "View")!;
      expect([view.firstRow, view.firstColumn]).toEqual([1, 1]);
      expect(view.cells[1]!.slice(1, 6)).toEqual([2, 3, 6, "text", true]);
      expect(view.cells).toHaveLength(VIEW_MAX_ROWS);
      expect(view.cells[0]).toHaveLength(VIEW_MAX_COLS);
      expect(view.truncated).toBe(`first ${VIEW_MAX_ROWS} of ${9 + VIEW_MAX_ROWS + 10} rows, first 26 of 34 columns`);
    } finally {
      await env.release(id);
    }
    expect(await env.capabilities.stateView.renderState(id)).toBeUndefined();
  });
});
