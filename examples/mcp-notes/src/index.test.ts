import { runMany, scriptedPolicy } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import notesModule, { createNotesEnv, NOTE_TASKS, type NoteTask } from "./index.js";

describe("mcp-notes: an env built from a notes MCP server", () => {
  let env: Awaited<ReturnType<typeof createNotesEnv>>;
  beforeAll(async () => {
    env = await createNotesEnv();
  });
  afterAll(() => env.close());

  it("lists the server's tools, namespaced, without the reset tool", () => {
    expect(env.listTools().map((t) => t.name)).toEqual([
      "notes__create_note",
      "notes__list_notes",
      "notes__read_note",
      "notes__delete_note",
    ]);
    expect(notesModule.name).toBe("mcp-notes");
  });

  it("scores the reference policy 1 on every task (groups of 2, isolated servers)", async () => {
    const tasks = await env.capabilities.tasks!.loadTasks!();
    expect(tasks).toEqual(NOTE_TASKS);
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), {
      group: 2,
      concurrency: 4,
    });
    expect(results).toHaveLength(4);
    for (const r of results) expect([r.outcome, r.reward]).toEqual(["completed", 1]);
  });

  it("gives partial or no credit, and never sees another rollout's notes", async () => {
    const sloppy = scriptedPolicy<NoteTask>("sloppy", ({ task, turn }) => {
      if (turn === 0) return { calls: [{ name: "notes__list_notes", arguments: {} }] };
      if (turn === 1) {
        const title = task.id === "groceries" ? "groceries" : "wrong-title";
        return { calls: [{ name: "notes__create_note", arguments: { title, body: "milk only" } }] };
      }
      return { answer: "done" };
    });
    const { results } = await runMany(env, NOTE_TASKS, sloppy);
    const by = Object.fromEntries(results.map((r) => [r.taskId, r]));
    expect(by.groceries!.rewards).toEqual({ saved: 1, words: 1 / 3 });
    expect(by.standup!.reward).toBe(0);
    // the first call of each rollout saw an empty notes folder
    for (const r of results) expect(r.messages.find((m) => m.role === "tool")!.content).toBe("(no notes)");
  });

  it("returns tool errors the model can read", async () => {
    await env.init("e", NOTE_TASKS[0]!);
    const bad = await env.runTool("e", { name: "notes__create_note", arguments: { title: "../etc", body: "x" } });
    expect(bad.isError).toBe(true);
    expect(String(bad.content)).toMatch(/lowercase letters/);
    const missing = await env.runTool("e", { name: "notes__read_note", arguments: { title: "nope" } });
    expect(missing).toMatchObject({ isError: true, content: "no note titled nope" });
    await env.release("e");
  });
});
