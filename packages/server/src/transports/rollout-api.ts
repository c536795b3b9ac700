import type { IncomingMessage, ServerResponse } from "node:http";
import type { Message, ToolCallRequest } from "@benchmax/core";
import { readBody } from "../http-body.js";
import { HttpError } from "../http-error.js";
import { openEnvTools, stateOf, stepRollout } from "../openenv.js";
import { isMessages, type ServedRollout } from "../service/rollout-service.js";
import { badRequest, conflict } from "../service/service-error.js";
import type { HostContext, RouteHandlers, RoutesOf } from "./host-context.js";
import { answerCreate, createFrom, rolloutToken, taskRefOf } from "./http-rollouts.js";

/**
 * The rollout API under `/v1`, mapped onto the rollout service: create, call, reward, fork, step and release a
 * rollout named by its id and capability token (`X-Rollout-Token`); the tools, the tasks without their gold, the
 * group reward and the record feed. Errors are thrown; the host answers them with their status and code.
 */
export function rolloutApiHandlers(ctx: HostContext): Pick<RouteHandlers, RoutesOf<"Rollout API">> {
  const { env, service, mcp, feed, maxBody, send } = ctx;

  const created = (r: ServedRollout) => ({
    rolloutId: r.id,
    token: r.token,
    taskId: r.task.id,
    systemPrompt: service.systemPrompt(r.task),
    idleTimeoutMs: service.idleTimeoutMs,
    /** The env parses actions its own way: send replies to `/step` rather than parsing tool calls client-side. */
    customActions: typeof env.capabilities?.episode?.parseActions === "function",
    /** Echoed when the client set a turn limit: `/step` then ends the episode there (SkyRL's rule). */
    ...(r.maxTurns !== undefined ? { maxTurns: r.maxTurns } : {}),
  });

  /** `POST /v1/rollouts {session, …}`: the harness moves an open MCP session onto a new rollout it picks the task of. */
  const createForSession = async (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => {
    const sid = body.session;
    const unknown = () => new HttpError(404, "UNKNOWN_SESSION", `unknown MCP session ${String(sid)}`);
    if (typeof sid !== "string" || !mcp.sessions.rolloutOf(sid)) throw unknown();
    const r = await createFrom(ctx, req, body, "v1", { maxTurns: body.maxTurns as number | undefined });
    if (!(await mcp.sessions.move(sid, r))) {
      await service.release(r);
      throw unknown();
    }
    send(res, 201, created(r));
  };

  /** The rollout a `/v1/rollouts/:id/…` request names, with its capability token. */
  const own = (req: IncomingMessage, id: string, body?: Record<string, unknown>) =>
    service.get(id, rolloutToken(req, body));

  return {
    tools: (_req, res) => send(res, 200, { tools: env.listTools(), openenv: openEnvTools(env) }),
    tasks: async (_req, res, _id, query) => {
      const q = new URLSearchParams(query);
      const limit = Number(q.get("limit") ?? Number.POSITIVE_INFINITY);
      // `include=systemPrompt`: each task's system prompt (without the tools section), read without a rollout
      const withPrompt = q.getAll("include").some((v) => v.split(",").includes("systemPrompt"));
      const tasks = (await service.tasks()).slice(0, limit);
      // gold data stays on the server
      send(res, 200, {
        tasks: tasks.map((t) => {
          const row: Record<string, unknown> = { id: t.id, prompt: t.prompt, messages: t.messages, meta: t.meta };
          if (withPrompt) row.systemPrompt = service.systemPrompt(t);
          return row;
        }),
      });
    },
    create: async (req, res) => {
      const body = await readBody(req, maxBody);
      if (body.session !== undefined) return createForSession(req, res, body);
      const r = await createFrom(ctx, req, body, "v1", { maxTurns: body.maxTurns as number | undefined });
      answerCreate(ctx, res, r, () => send(res, 201, created(r)));
    },
    rolloutState: (req, res, id) => send(res, 200, stateOf(own(req, id))),
    delete: async (req, res, id) => {
      await service.release(own(req, id));
      send(res, 200, { released: true });
    },
    call: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const r = own(req, id, body);
      if (typeof body.name !== "string" || !body.name) throw badRequest(`"name" (the tool name) must be a string`);
      const args = body.arguments ?? {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw badRequest(`"arguments" must be an object`);
      }
      const call: ToolCallRequest = { name: body.name, arguments: args as Record<string, unknown> };
      if (typeof body.id === "string") call.id = body.id;
      send(res, 200, await service.callTool(r, call));
    },
    reward: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const r = own(req, id, body);
      if (body.messages !== undefined) {
        if (!isMessages(body.messages)) throw badRequest(`"messages" must be an array of {role, content} messages`);
        return send(res, 200, await service.score(r, { messages: body.messages }));
      }
      if (typeof body.completion === "string") {
        return send(res, 200, await service.score(r, { completion: body.completion }));
      }
      throw badRequest(`"messages" (the conversation) or "completion" (the final text) is required`);
    },
    fork: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const kids = await service.fork(own(req, id, body), (body.n ?? 1) as number);
      send(res, 200, { children: kids.map(created) });
    },
    release: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      await service.release(own(req, id, body));
      send(res, 200, { released: true });
    },
    rolloutStep: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      send(res, 200, await stepRollout(service, own(req, id, body), body.action));
    },
    recordFeed: (req, res) =>
      feed ? feed.handle(req, res) : Promise.reject(conflict("not recording: serve --record DIR", "NOT_RECORDING")),
    groupReward: async (req, res) => {
      const body = await readBody(req, maxBody);
      if (!env.capabilities?.groupReward) throw new HttpError(501, "NOT_SUPPORTED", `${env.name} has no group reward`);
      if (!Array.isArray(body.members)) throw badRequest(`"members" must be an array of {messages, rewards}`);
      const task = await service.resolveTask(taskRefOf(body));
      for (const [i, m] of (body.members as unknown[]).entries()) {
        const mm = m as Record<string, unknown> | null;
        if (!mm || typeof mm !== "object" || (mm.messages !== undefined && !isMessages(mm.messages))) {
          throw badRequest(`"members[${i}]" must be {messages: [...], rewards: {...}}`);
        }
        const rw = mm.rewards ?? {};
        if (typeof rw !== "object" || rw === null || Object.values(rw).some((x) => typeof x !== "number")) {
          throw badRequest(`"members[${i}].rewards" must be an object of numbers`);
        }
      }
      const members = (body.members as Array<Record<string, unknown>>).map((m, i) => ({
        rolloutId: typeof m.rolloutId === "string" ? m.rolloutId : `member-${i}`,
        messages: (Array.isArray(m.messages) ? m.messages : []) as Message[],
        rewards: (m.rewards ?? {}) as Record<string, number>,
      }));
      send(res, 200, await service.groupReward(task, members));
    },
  };
}
