import { descriptionOf, type Env, type Task } from "@benchmax/core";
import { RemoteEnv, serveEnv } from "@benchmax/server";

/** The transports an audit drives an env through. */
export type Transport = "in-process" | "http" | "mcp";
export const TRANSPORTS: readonly Transport[] = ["in-process", "http", "mcp"];

/** Text a client can read that is not a rollout (metadata, task listings, resources, prompts), by where it came from. */
export interface Surface {
  where: string;
  text: string;
  /** The task the text belongs to (only that task's gold is looked for); all audited tasks when absent. */
  taskId?: string;
  /** What the model reads by design in this text (its own prompt): cut out before the scan. */
  input?: string[];
}

/** A transport's view of the env: the Env to drive, the tasks by id, and every text it shows a client. */
export interface TransportView {
  transport: Transport;
  env: Env;
  taskOf(t: Task): Task;
  surfaces: Surface[];
  close(): Promise<void>;
}

/** What a task shows the model by design: its prompt and the text of its messages. */
export function modelInput(t: Task): string[] {
  const out: string[] = [];
  if (typeof t.prompt === "string") out.push(t.prompt);
  for (const m of t.messages ?? []) {
    const c = (m as { content?: unknown }).content;
    if (typeof c === "string") out.push(c);
    else if (Array.isArray(c)) for (const p of c) if (typeof p?.text === "string") out.push(p.text);
  }
  return out;
}

/**
 * A view over an env the audit serves in process: `open` builds it on the running server. Closing the view closes its
 * env, then the server; an `open` that fails closes the server at once.
 */
export async function servedView(
  server: { close(): Promise<void> },
  open: () => Promise<Omit<TransportView, "close">>,
): Promise<TransportView> {
  try {
    const view = await open();
    return {
      ...view,
      close: async () => {
        await view.env.close();
        await server.close();
      },
    };
  } catch (e) {
    await server.close();
    throw e;
  }
}

export async function inProcessView(env: Env): Promise<TransportView> {
  return {
    transport: "in-process",
    env,
    taskOf: (t) => t,
    surfaces: [
      { where: "listTools()", text: JSON.stringify(env.listTools()) },
      { where: "description", text: descriptionOf(env) },
    ],
    close: async () => {},
  };
}

/** The env behind `benchmax serve` (served in process on a free loopback port), driven by `RemoteEnv`. */
export async function httpView(env: Env, tasks: Task[], ignoreMeta: readonly string[]): Promise<TransportView> {
  const server = await serveEnv(env, { tasks, port: 0 });
  return servedView(server, async () => {
    const remote = await RemoteEnv.connect(server.url);
    const listed = await remote.listTasks();
    const byId = new Map(listed.map((t) => [t.id, t]));
    const surfaces: Surface[] = [];
    for (const path of ["/metadata", "/schema", "/openapi.json"]) {
      const r = await fetch(`${server.url}${path}`);
      if (r.ok) surfaces.push({ where: `GET ${path}`, text: await r.text() });
    }
    for (const t of listed) {
      const meta = t.meta ? { ...(t.meta as Record<string, unknown>) } : undefined;
      for (const k of ignoreMeta) if (meta) delete meta[k];
      surfaces.push({
        where: `GET /v1/tasks (task ${t.id})`,
        text: JSON.stringify({ ...t, meta }),
        taskId: t.id,
        input: modelInput(t),
      });
    }
    return { transport: "http", env: remote, taskOf: (t) => byId.get(t.id) ?? t, surfaces };
  });
}
