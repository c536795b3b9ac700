import { spawnSync } from "node:child_process";
import { defineEnv, type Env, type Task } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { addTool } from "./test-env.js";

/**
 * A create whose client gave up before the answer (it closed the connection: a client that saw this server hang
 * moves the rollout elsewhere) is released, not left live until the idle expiry with nobody holding its token.
 */
function gatedEnv(): { env: Env; open(): void; entered: Promise<void> } {
  let open!: () => void;
  let entered!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const inInit = new Promise<void>((r) => {
    entered = r;
  });
  const tasks: Task<string>[] = [{ id: "t1", prompt: "2 + 3?", groundTruth: "5" }];
  const env = defineEnv<Task<string>, { n: number }>({
    name: "gated",
    systemPrompt: "x",
    tools: [addTool],
    initState: async () => {
      entered();
      await gate;
      return { n: 0 };
    },
    reward: () => ({ ok: 1 }),
    loadTasks: async () => tasks,
  });
  return { env, open, entered: inInit };
}

/**
 * A client that sends one request and closes the connection before any answer, while this process's event loop is
 * blocked (spawnSync): the server finds the request and the client's FIN together, as a server that hung (SIGSTOP)
 * finds a create whose client gave up on it.
 */
function sendAndHangUpWhileBlocked(url: string, path: string, body: unknown): void {
  const { hostname, port } = new URL(url);
  const text = JSON.stringify(body);
  const request = `POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
  const script = `const s = require("node:net").connect(${Number(port)}, ${JSON.stringify(hostname)}, () => s.end(${JSON.stringify(request)}, () => s.destroy()));`;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`client failed: ${r.stderr}`);
}

describe("a create whose client hung up", () => {
  let server: EnvServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  for (const [route, body] of [
    ["/v1/rollouts", { taskId: "t1" }],
    ["/reset", { task_id: "t1" }],
  ] as const) {
    it(`${route}: is released once created, not left live`, async () => {
      const g = gatedEnv();
      server = await serveEnv(g.env);
      sendAndHangUpWhileBlocked(server.url, route, body);
      await g.entered; // the rollout is being created; its client is gone
      g.open();
      for (let i = 0; i < 200; i++) {
        const h = (await (await fetch(`${server.url}/health`)).json()) as { activeRollouts: number };
        const m = server.metrics.snapshot(0) as { rolloutsCreated: number };
        if (m.rolloutsCreated === 1 && h.activeRollouts === 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect((server.metrics.snapshot(0) as { rolloutsCreated: number }).rolloutsCreated).toBe(1);
      expect(((await (await fetch(`${server.url}/health`)).json()) as { activeRollouts: number }).activeRollouts).toBe(
        0,
      );
      // a client that waits for its answer still gets its rollout
      const r = await fetch(`${server.url}/v1/rollouts`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ taskId: "t1" }),
      });
      expect(r.status).toBe(201);
      expect(((await (await fetch(`${server.url}/health`)).json()) as { activeRollouts: number }).activeRollouts).toBe(
        1,
      );
    });
  }
});
