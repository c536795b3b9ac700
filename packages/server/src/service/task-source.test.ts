import type { EnvShape, Task } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { TaskSource } from "./task-source.js";

const TASKS: Task[] = [
  { id: "a", prompt: "1+1?", groundTruth: "2" },
  { id: "b", prompt: "2+2?", groundTruth: "4" },
];

function envWith(loadTasks?: () => Promise<Task[]>): EnvShape {
  return { name: "t", capabilities: loadTasks ? { tasks: { loadTasks } } : {} };
}

describe("TaskSource", () => {
  it("resolves at once once the dataset is loaded, and through a promise before", async () => {
    let loads = 0;
    const src = new TaskSource(
      envWith(async () => {
        loads++;
        return TASKS;
      }),
      undefined,
    );
    // not loaded yet: nothing at once, the promise loads it (once)
    expect(src.resolveLoaded({})).toBeUndefined();
    expect(src.resolveLoaded({ taskId: "b" })).toBeUndefined();
    expect((await src.resolve({ taskId: "b" })).id).toBe("b");
    expect((await src.resolve({})).id).toBe("a");
    // loaded: the same answers at once, the cursor goes on
    expect(src.resolveLoaded({})?.id).toBe("b");
    expect(src.resolveLoaded({ seed: 3 })?.id).toBe("b");
    expect(loads).toBe(1);
    expect(() => src.resolveLoaded({ taskId: "zz" })).toThrow(/unknown task id/);
    await expect(src.resolve({ taskId: "zz" })).rejects.toThrow(/unknown task id/);
    expect(() => src.resolveLoaded({ seed: -1 })).toThrow(/seed/);
    await expect(src.resolve({ seed: 1.5 })).rejects.toThrow(/seed/);
  });

  it("an inline task and bad references need no dataset; an env without one has an empty one", async () => {
    const src = new TaskSource(envWith(), undefined);
    const inline = { id: "x", prompt: "p", groundTruth: null };
    expect(src.resolveLoaded({ task: inline })).toEqual(inline);
    expect(src.isInline(src.resolveLoaded({ task: inline }) as Task)).toBe(true);
    expect(() => src.resolveLoaded({})).toThrow(/no default dataset/);
    await expect(src.resolve({})).rejects.toThrow(/no default dataset/);
    await expect(src.resolve({ taskId: "a" })).rejects.toThrow(/unknown task id/);
    // a loading env: a bad seed fails at once, before any load
    const loading = new TaskSource(
      envWith(() => new Promise(() => {})),
      undefined,
    );
    expect(() => loading.resolveLoaded({ seed: "x" as unknown as number })).toThrow(/seed/);
    expect(loading.resolveLoaded({ task: inline })).toEqual(inline);
  });
});
