import { defineEnv, type Env, scriptedPolicy, type Task, ToolError, tool, Workspace } from "@benchmax/core";
import { z } from "zod";

/**
 * A small file-backed env for transport, soak and reward-channel tests that must not depend on a prebuilt env:
 * each rollout gets a Workspace; the reward reads `answer.txt` from it and compares with the gold answer.
 */
export type NotesTask = Task<string>;
interface State {
  ws: Workspace;
}

export function notesTasks(n: number): NotesTask[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `note-${i}`,
    prompt: `Write the word for ${i} into answer.txt.`,
    groundTruth: `GOLD-${i}-${(i * 7919) % 1000}`,
  }));
}

export function notesEnv(options: { tasks?: NotesTask[] } = {}): Env {
  const tasks = options.tasks ?? notesTasks(4);
  return defineEnv<NotesTask, State>({
    name: "notes",
    description: "write and read files in a private workspace",
    systemPrompt: "Use the file tools; put the answer in answer.txt.",
    initState: async () => ({ ws: await Workspace.create({ prefix: "notes" }) }),
    forkState: async (s) => ({ ws: await s.ws.fork({ prefix: "notes" }) }),
    releaseState: (s) => s.ws.remove(),
    toolTimeoutMs: 5_000,
    maxOutputChars: 10_000,
    tools: [
      tool<State>({
        name: "write_file",
        description: "Write a text file in your workspace",
        parameters: z.object({ path: z.string(), content: z.string().max(100_000) }),
        async execute({ path, content }, { state }) {
          await state.ws.writeFile(path, content);
          return `wrote ${content.length} characters to ${path}`;
        },
      }),
      tool<State>({
        name: "read_file",
        description: "Read a text file of your workspace",
        parameters: z.object({ path: z.string() }),
        async execute({ path }, { state }) {
          try {
            return (await state.ws.readFile(path)).toString("utf8");
          } catch (e) {
            if (e instanceof ToolError) throw e;
            throw new ToolError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
          }
        },
      }),
      tool<State>({
        name: "list_files",
        description: "List the files of your workspace",
        parameters: z.object({ dir: z.string().optional() }),
        async execute({ dir }, { state }) {
          try {
            return (await state.ws.list(dir ?? ".")).join("\n");
          } catch (e) {
            if (e instanceof ToolError) throw e;
            throw new ToolError(`cannot list ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
          }
        },
      }),
    ],
    reward: async ({ state, task }) => {
      let text = "";
      try {
        text = (await state.ws.readFile("answer.txt")).toString("utf8").trim();
      } catch {
        /* no answer file: 0 */
      }
      return { correct: text === task.groundTruth ? 1 : 0 };
    },
    rewardWeights: { correct: 1 },
    loadTasks: async () => tasks,
  });
}

/** Solves a notes task through the tools (the task's gold is known to the test, never to the env's tools). */
export function notesPolicy(answerOf: (task: NotesTask) => string) {
  return scriptedPolicy<NotesTask>("notes-script", ({ task, turn }) => {
    if (turn === 0)
      return { calls: [{ name: "write_file", arguments: { path: "answer.txt", content: answerOf(task) } }] };
    if (turn === 1) return { calls: [{ name: "read_file", arguments: { path: "answer.txt" } }] };
    return { answer: "done" };
  });
}
