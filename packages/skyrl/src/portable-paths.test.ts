import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineEnv, type Task, tool } from "@benchmax/core";
import { serveEnv } from "@benchmax/server";
import { asyncBufferFromFile, parquetReadObjects } from "hyparquet";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { exportSkyrl } from "./export-skyrl.js";
import { commonRoot, relativizePaths } from "./portable-paths.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  dirs.push(d);
  return d;
};

type FileTask = Task<string> & { init: { file: string } };

/** An env whose rollout state is a file the task names (like excel's workbooks). */
const fileEnv = () =>
  defineEnv<FileTask, { text: string }>({
    name: "files",
    systemPrompt: "Read the file.",
    tools: [
      tool<{ text: string }>({
        name: "read",
        description: "the file's text",
        parameters: z.object({}),
        execute: (_a, { state }) => state.text,
      }),
    ],
    initState: (task) => ({ text: readFileSync(task.init.file, "utf8") }),
    reward: () => ({ ok: 1 }),
  });

describe("portable paths", () => {
  it("relativizes paths under the root only, leaving text fields", () => {
    const v = { prompt: "/r/a/b.txt", init: { files: ["/r/a/b.txt", "/elsewhere/c.txt", "not/a/path"] } };
    expect(relativizePaths(v, "/r")).toEqual({
      prompt: "/r/a/b.txt",
      init: { files: ["./a/b.txt", "/elsewhere/c.txt", "not/a/path"] },
    });
    expect(commonRoot(["/r/a/b.txt", "/r/a/c/d.txt"])).toBe("/r/a");
    expect(commonRoot(["/r/b.txt", "/s/c.txt"])).toBeUndefined();
  });

  it("an exported row's inline task runs on a server with its own copy of the data under --data-root", async () => {
    const exporter = tmp("bmx-export-data-");
    const server = tmp("bmx-server-data-");
    for (const [root, text] of [
      [exporter, "exporter's copy"],
      [server, "server's copy"],
    ] as const) {
      mkdirSync(join(root, "docs"), { recursive: true });
      writeFileSync(join(root, "docs", "a.txt"), text);
    }
    const task: FileTask = {
      id: "f1",
      prompt: "What does the file say?",
      groundTruth: "x",
      init: { file: join(exporter, "docs", "a.txt") },
    };
    const out = tmp("bmx-export-");
    await exportSkyrl(fileEnv() as never, {
      out,
      tasks: [task],
      trainFraction: 1,
      writeShim: false,
      dataset: exporter,
    });
    const [row] = (await parquetReadObjects({ file: await asyncBufferFromFile(join(out, "train.parquet")) })) as any[];
    const inline = JSON.parse(row.extra_info.task);
    expect(inline.init.file).toBe("./docs/a.txt");

    const srv = await serveEnv(fileEnv() as never, { dataRoot: server, token: "t" });
    try {
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(`${srv.url}${path}`, {
          method: "POST",
          headers: { authorization: "Bearer t", "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
        });
      // the server does not know task "f1": the shim's fallback sends the row's inline task
      const created = await post("/v1/rollouts", { taskId: "f1", task: inline });
      expect(created.status).toBe(201);
      const r = (await created.json()) as { rolloutId: string; token: string };
      const res = await post(
        `/v1/rollouts/${r.rolloutId}/call`,
        { name: "read", arguments: {} },
        {
          "x-rollout-token": r.token,
        },
      );
      expect(((await res.json()) as { content: string }).content).toBe("server's copy");
      // a path escaping the data root is refused
      const bad = await post("/v1/rollouts", { task: { ...inline, init: { file: "../../etc/passwd" } } });
      expect(bad.status).toBe(403);
    } finally {
      await srv.close();
    }
  });
});
