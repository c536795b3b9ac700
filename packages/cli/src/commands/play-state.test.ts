import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Env, hasStateView, type StateView } from "@benchmax/core";
import { type PlayServer, startPlay } from "@benchmax/report";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEnv } from "../env-loader.js";
import { scaffoldEnv } from "../scaffold/scaffold.js";
import { playPost as post } from "./play-api.test-util.js";

// Issue 38: `benchmax play` on an author's env (a scaffolded one, loaded from its folder as `benchmax play .` loads
// it), and the state view: an env with `renderState` (StateViewCapability) has its state drawn after every tool call;
// for excel that is the workbook as a grid. Driven through the play server's HTTP API as the page drives it.

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

type Grid = Extract<StateView, { kind: "grid" }>;
/** The value a grid view shows at a cell address (`B3`), from its first sheet or the named one. */
function cellOf(view: Grid, address: string, sheet?: string): unknown {
  const s = sheet ? view.sheets.find((x) => x.name === sheet) : view.sheets[0];
  if (!s) throw new Error(`no sheet ${sheet ?? "(first)"} in the view`);
  const m = /^([A-Z]+)(\d+)$/.exec(address)!;
  const col = [...m[1]!].reduce((n, ch) => n * 26 + ch.charCodeAt(0) - 64, 0);
  return s.cells[Number(m[2]) - (s.firstRow ?? 1)]?.[col - (s.firstColumn ?? 1)];
}

describe("play: the state view (excel's workbook as a grid)", () => {
  let env: Env;
  let play: PlayServer;
  beforeAll(async () => {
    env = await createEnv("excel", {});
    play = await startPlay(env, { tasks: (await env.capabilities!.tasks!.loadTasks!()).slice(0, 1) });
  }, 120_000);
  afterAll(async () => {
    await play?.close();
    await env?.close();
  });

  it("shows the workbook at the start and the new value after a tool call writes a cell", async () => {
    expect(hasStateView(env)).toBe(true);
    const page = await (await fetch(play.url)).text();
    expect(page).toContain('id="state"');

    const start = await post(play, "/api/start", { taskId: (await env.capabilities!.tasks!.loadTasks!())[0]!.id });
    expect(start.status, JSON.stringify(start.json)).toBe(200);
    const first = start.json.state as Grid;
    expect(first.kind).toBe("grid");
    expect(first.sheets.length).toBeGreaterThan(0);
    const sheet = first.sheets[0]!.name;
    // a cell past the used range, so the grid has to grow to show it
    const right = (first.sheets[0]!.firstColumn ?? 1) + (first.sheets[0]!.cells[0]?.length ?? 0);
    const address = `${String.fromCharCode(64 + Math.min(right, 26))}2`;
    const marker = "benchmax-state-view-42";
    expect(cellOf(first, address, sheet)).not.toBe(marker);

    const step = await post(play, "/api/step", {
      id: start.json.id,
      content: "",
      toolCalls: [{ name: "write_cell", arguments: { sheet, cell: address, value: marker } }],
    });
    expect(step.status, JSON.stringify(step.json)).toBe(200);
    expect(step.json.done).toBe(false);
    const after = step.json.state as Grid;
    expect(after.kind).toBe("grid");
    expect(cellOf(after, address, sheet)).toBe(marker);

    // a number and a formula the tool recalculates show as what the cell displays
    const step2 = await post(play, "/api/step", {
      id: start.json.id,
      content: "",
      toolCalls: [{ name: "write_range", arguments: { sheet, start: "AA1", values: [[2, 3, "=AA1*AB1"]] } }],
    });
    expect(step2.status, JSON.stringify(step2.json)).toBe(200);
    const grid = step2.json.state as Grid;
    const s = grid.sheets.find((x) => x.name === sheet)!;
    // the view is capped at 26 columns: a used range wider than that says so
    if ((s.firstColumn ?? 1) < 2) expect(s.truncated).toMatch(/columns/);
    expect(cellOf(grid, address, sheet)).toBe(marker);
  });
});

describe("play on a scaffolded env (`benchmax new`, then `benchmax play .`)", () => {
  let dir: string;
  let env: Env;
  let play: PlayServer;
  beforeAll(async () => {
    // inside the repo (git-ignored .benchmax/), outside the workspace's package folders; its deps linked as the
    // scaffold test links them
    mkdirSync(join(root, ".benchmax"), { recursive: true });
    const tmpRoot = mkdtempSync(join(root, ".benchmax", "play-scaffold-"));
    dir = join(tmpRoot, "glossary-play");
    scaffoldEnv({ name: "glossary-play", dir });
    const nm = join(dir, "node_modules");
    mkdirSync(join(nm, "@benchmax"), { recursive: true });
    symlinkSync(join(root, "packages/core"), join(nm, "@benchmax/core"));
    symlinkSync(realpathSync(join(root, "packages/core/node_modules/zod")), join(nm, "zod"));
    env = await createEnv(".", {}, dir);
    play = await startPlay(env, {});
  }, 120_000);
  afterAll(async () => {
    await play?.close();
    await env?.close();
    if (dir) rmSync(dirname(dir), { recursive: true, force: true });
  });

  it("plays one task through the HTTP API: a tool call, then the answer, scored", async () => {
    expect(env.name).toBe("glossary-play");
    // no state view: the page has no state panel and the replies no state
    expect(hasStateView(env)).toBe(false);
    expect(await (await fetch(play.url)).text()).not.toContain('id="state"');
    const task = (await env.capabilities!.tasks!.loadTasks!())[0]!;
    const start = await post(play, "/api/start", { taskId: task.id });
    expect(start.status, JSON.stringify(start.json)).toBe(200);
    expect(start.json.state).toBeUndefined();
    const look = await post(play, "/api/step", {
      id: start.json.id,
      content: "",
      toolCalls: [{ name: "lookup", arguments: { term: "reward" } }],
    });
    expect(look.status, JSON.stringify(look.json)).toBe(200);
    const obs = JSON.stringify(look.json.observations);
    expect(obs).toContain("A number that scores a finished rollout");
    const answer = await post(play, "/api/step", {
      id: start.json.id,
      content: "<answer>A number that scores a finished rollout; higher is better.</answer>",
    });
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect([answer.json.done, answer.json.outcome, answer.json.reward]).toEqual([true, "completed", 1]);
  });
});
