import type { Env, Task } from "@benchmax/core";
import { type HarnessRollout, McpEnv, McpHarnessClient, serveMcpHttp } from "@benchmax/mcp";

/**
 * Any benchmax env with its tools served over MCP, used back through McpEnv: `serveMcpHttp(env)` exposes the env
 * (one MCP session per rollout), and McpEnv leases one session per rollout, puts it on the rollout's task through the
 * server's harness channel (`McpHarnessClient`, never a tool the model sees), forwards the model's tool calls, and
 * scores there. In a fleet, replace the local server with `benchmax serve <env> --mcp --port P --token T` pods.
 */
export async function envOverMcp<T extends Task>(inner: Env<T>, options: { sessions?: number } = {}) {
  const served = await serveMcpHttp(inner, { port: 0 });
  const harness = new McpHarnessClient(served.url);
  const rollouts = new Map<string, HarnessRollout>();
  const env = await McpEnv.create<T>({
    name: `${inner.name}-over-mcp`,
    systemPrompt: inner.systemPrompt,
    namespace: "none",
    servers: {
      [inner.name]: {
        // one URL serves many sessions: list it once per concurrent rollout
        endpoints: Array.from({ length: options.sessions ?? 4 }, () => ({ type: "http" as const, url: served.url })),
        reset: "restart",
      },
    },
    setup: async (ctx) => {
      const session = (ctx.server().connection.transport as { sessionId?: string }).sessionId;
      rollouts.set(ctx.rolloutId, await harness.create({ taskId: ctx.task.id, session }));
    },
    reward: async (ctx) => {
      const r = rollouts.get(ctx.rolloutId)!;
      rollouts.delete(ctx.rolloutId);
      try {
        return (await harness.score(r, { messages: ctx.messages })).rewards;
      } finally {
        await harness.release(r).catch(() => {});
      }
    },
    // the inner env's reward reading, tasks and reference policy, passed on whole
    capabilities: {
      reward: inner.capabilities?.reward,
      tasks: inner.capabilities?.tasks,
      reference: inner.capabilities?.reference,
    },
  });
  const close = env.close.bind(env);
  env.close = async () => {
    await close();
    await served.close();
    await inner.close();
  };
  return env;
}
