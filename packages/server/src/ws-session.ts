import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { errorMessage } from "@benchmax/core";
import { type WebSocket, WebSocketServer } from "ws";
import type { AccessTokens } from "./auth.js";
import { drainingError } from "./drain.js";
import { checkOrigin, clientOf, markSession, type OriginPolicy } from "./edge.js";
import { type WsCode, wsCodeOf } from "./error-codes.js";
import { DRAINING_HEADER } from "./http-client.js";
import { listToolsResult, NO_EPISODE_STATE, resetObservationJson, stateOf, stepRollout } from "./openenv.js";
import type { RolloutService, ServedRollout } from "./service/rollout-service.js";
import { RolloutServiceError } from "./service/service-error.js";
import { taskRefOf } from "./transports/http-rollouts.js";
import type { McpCaller, McpJsonRpc } from "./transports/mcp.js";

export interface WsOptions {
  /** The tokens the server accepts (none: Origin / Host checks instead). */
  access?: AccessTokens;
  /** Origin / Host checks of a server with no token. */
  originPolicy: OriginPolicy;
  maxPayload: number;
  isClosing(): boolean;
  /** Past the drain: the server is closing (the refusal says "shutting down" rather than "draining"). */
  isShuttingDown?(): boolean;
  /** MCP JSON-RPC over `{"type": "mcp", "data": <request>}` (the MCP SDK's Server over the rollout service). */
  mcp: McpJsonRpc;
}

const sessionError = (message: string) => new RolloutServiceError("bad_request", message, { reason: "SESSION_ERROR" });

function rejectUpgrade(socket: Duplex, status: number, message: string): void {
  const reason: Record<number, [string, string]> = {
    401: ["Unauthorized", "UNAUTHORIZED"],
    403: ["Forbidden", "FORBIDDEN"],
    404: ["Not Found", "NOT_FOUND"],
    503: ["Service Unavailable", "DRAINING"],
  };
  const [text, code] = reason[status] ?? ["Error", "ERROR"];
  const body = JSON.stringify({ error: { message, code } });
  // a draining server says so on the refusal too, as on every HTTP answer (clients take it out of rotation)
  const draining = status === 503 ? `${DRAINING_HEADER}: 1\r\nretry-after: 1\r\n` : "";
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\n${draining}` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * OpenEnv's WebSocket `/ws`: one connection is one session, and a session holds one rollout at a time.
 * Messages: `{type: "reset", data}`, `{type: "step", data: <action>}`, `{type: "state"}`, `{type: "close"}`.
 */
export function attachWebSocket(
  server: Server,
  service: RolloutService,
  options: WsOptions,
): { close(): Promise<void> } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    if (path !== "/ws") return rejectUpgrade(socket, 404, `no WebSocket endpoint ${path} (use /ws)`);
    // OpenEnv's EnvClient sends no custom headers: the token rides as URL user info (-> Basic) or `?token=`
    let auth = req.headers.authorization;
    if (!auth && q >= 0) {
      const t = new URLSearchParams(url.slice(q + 1)).get("token");
      if (t) auth = `Bearer ${t}`;
    }
    const err = options.access ? options.access.check(auth) : checkOrigin(req, options.originPolicy);
    if (err) return rejectUpgrade(socket, err.status, err.message);
    if (options.isClosing()) return rejectUpgrade(socket, 503, drainingError(options.isShuttingDown?.()).message);
    const client = clientOf(req, options.access, auth);
    wss.handleUpgrade(req, socket, head, (ws) => session(ws, client, socket as Socket));
  });

  function session(ws: WebSocket, client: string, socket: Socket): void {
    let rollout: ServedRollout | undefined;
    markSession(socket, () => rollout !== undefined && !rollout.released);
    let queue: Promise<void> = Promise.resolve();
    /** Send `{type, data}` with `data` already serialized. */
    const replyJson = (type: string, json: string) => {
      if (ws.readyState === ws.OPEN) ws.send(`{"type":${JSON.stringify(type)},"data":${json}}`);
    };
    const reply = (type: string, data: unknown) => replyJson(type, JSON.stringify(data));
    const fail = (e: unknown, code?: WsCode) => reply("error", { message: errorMessage(e), code: code ?? wsCodeOf(e) });
    const caller: McpCaller = {
      client,
      session: () => (rollout && !rollout.released ? rollout : undefined),
      startSession: async () => {
        rollout = await service.create({ client, origin: "ws" });
        return rollout;
      },
    };
    const drop = async () => {
      const r = rollout;
      rollout = undefined;
      if (r && !r.released) await service.release(r);
    };

    async function handle(raw: string): Promise<void> {
      let msg: { type?: unknown; data?: unknown };
      try {
        msg = JSON.parse(raw);
      } catch (e) {
        return fail(new Error(`malformed JSON message: ${(e as Error).message}`), "INVALID_JSON");
      }
      if (!msg || typeof msg !== "object" || Array.isArray(msg)) {
        return fail(new Error("a message must be a JSON object {type, data}"), "INVALID_JSON");
      }
      try {
        switch (msg.type) {
          case "reset": {
            const data = (msg.data ?? {}) as Record<string, unknown>;
            if (typeof data !== "object" || Array.isArray(data)) {
              throw new RolloutServiceError("bad_request", "data must be an object", { reason: "VALIDATION_ERROR" });
            }
            // a bad reset leaves the session's episode as it was
            // no await where the task resolves at once (the dataset is loaded), none where nothing is live to drop
            const ref = taskRefOf(data);
            const task = service.resolveTaskLoaded(ref) ?? (await service.resolveTask(ref));
            if (data.episode_id !== rollout?.id) service.checkId(data.episode_id);
            if (rollout && !rollout.released) await drop();
            else rollout = undefined;
            rollout = await service.create({ task, id: data.episode_id as string | undefined, client, origin: "ws" });
            return replyJson("observation", resetObservationJson(service, rollout));
          }
          case "step": {
            const r = rollout;
            const action = msg.data as { type?: unknown } | null;
            // OpenEnv allows a tool list before any reset
            if (!r && action && typeof action === "object" && action.type === "list_tools") {
              return reply("observation", listToolsResult(service.env));
            }
            // OpenEnv's MCPToolClient calls tools with no reset (its sync example): the session's episode starts
            // on the default task, as a `{"type": "mcp"}` tools/call does; an answer still needs a reset
            if (!r && action && typeof action === "object" && action.type === "call_tool") {
              return reply("observation", await stepRollout(service, await caller.startSession!(), msg.data));
            }
            if (!r) throw sessionError("no episode in this session: send reset first");
            if (r.released && !r.done) throw sessionError("the episode expired: send reset");
            const out = await stepRollout(service, r, msg.data);
            return reply("observation", out);
          }
          case "state":
            // before any reset: OpenEnv's State defaults
            return reply("state", rollout ? stateOf(rollout) : NO_EPISODE_STATE);
          case "mcp": {
            if (!msg.data || typeof msg.data !== "object" || Array.isArray(msg.data)) {
              throw new RolloutServiceError(
                "bad_request",
                `an mcp message needs "data": a JSON-RPC 2.0 request object`,
                { reason: "VALIDATION_ERROR" },
              );
            }
            const out = await options.mcp.handle(msg.data, caller);
            if (out) reply("mcp", out);
            return;
          }
          case "close":
            await drop();
            ws.close(1000, "closed by client");
            return;
          default:
            return fail(
              new Error(`unknown message type ${JSON.stringify(msg.type)} (reset, step, state, close, mcp)`),
              "UNKNOWN_TYPE",
            );
        }
      } catch (e) {
        fail(e);
      }
    }

    ws.on("message", (data, isBinary) => {
      const text = isBinary ? Buffer.from(data as Buffer).toString("utf8") : data.toString();
      queue = queue.then(() => handle(text));
    });
    ws.on("close", () => {
      queue = queue.then(drop);
    });
    ws.on("error", () => {
      /* the close handler releases the rollout */
    });
  }

  return {
    async close() {
      for (const c of wss.clients) c.close(1001, "server shutting down");
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
