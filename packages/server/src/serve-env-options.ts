import type { Task } from "@benchmax/core";
import type { ConnectionLimits } from "./edge.js";
import type { ServiceLimits } from "./service/rollout-service.js";

/**
 * `serveEnv`'s options. The rollout limits (`initTimeoutMs`, `toolTimeoutMs`, `rewardTimeoutMs`, `releaseTimeoutMs`,
 * `deadlineMs`) go to the rollout service, which enforces them through core's Episode timers on every transport.
 */
export interface ServeEnvOptions extends ConnectionLimits, ServiceLimits {
  /** Default 127.0.0.1. A non-loopback host with no token is refused unless `insecure`. */
  host?: string;
  /** Serve on a non-loopback host with no token (anyone who reaches the port can drive rollouts). */
  insecure?: boolean;
  /** Without a token: more Host names and Origins to accept besides loopback ones (see `checkOrigin`). */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /**
   * Live rollouts one client may hold (default: maxRollouts); beyond it 429 CLIENT_LIMIT. A client is the token it
   * presents (see `clientTokens`), or its remote address on a server without a token.
   */
  maxRolloutsPerClient?: number;
  /**
   * At capacity, a client within its fair share (maxRollouts / clients) takes the place of the least recently used
   * rollout of the client most over its share; only rollouts unused this long are taken (default 0: at once).
   */
  reclaimIdleMs?: number;
  /** JSON-RPC messages in one `POST /mcp` batch at most (default 64). */
  maxBatch?: number;
  /**
   * MCP sessions one rollout token may hold open on `/mcp` (default 4): a further `initialize` with that token ends
   * the rollout's oldest session.
   */
  maxSessionsPerRollout?: number;
  /** Default 0 (a free port). */
  port?: number;
  /** Bearer token every endpoint but /health requires (the operator's). */
  token?: string;
  /**
   * More bearer tokens, one per client (needs `token`): each is accepted wherever `token` is, with the same rights,
   * and is a client of its own for admission (fair share, `maxRolloutsPerClient`). Callers sharing a token are one
   * client, whatever their source addresses.
   */
  clientTokens?: string[];
  /** Live rollouts at most (default 1024); beyond it creation answers 503 CAPACITY_REACHED. */
  maxRollouts?: number;
  /** A rollout unused this long is released (default 10 min). */
  idleTimeoutMs?: number;
  /** Request bodies (and WebSocket messages) larger than this get 413 (default 8 MiB). */
  maxBodyBytes?: number;
  /** The dataset `/reset` and `{taskId}` draw from (default: `env.loadTasks()`). */
  tasks?: Task[];
  /** How long `close()` waits for requests in flight (default 10 s). */
  drainTimeoutMs?: number;
  /**
   * How long `drain()` serves the live rollouts at most (default 30 s): it closes once they are all released, or when
   * this much time has passed, whichever comes first.
   */
  drainGraceMs?: number;
  /** Extra metadata for `/metadata` (version, readme_content, …). */
  metadata?: Record<string, unknown>;
  /**
   * Client-built tasks (`{task}` in `/reset` or `/v1/rollouts`) may name host files only under this directory;
   * without it, a client task naming a host path is refused (403 HOST_PATH).
   */
  dataRoot?: string;
  /** `serve --record DIR`: append every finished rollout, from every transport, to DIR as a run dir. */
  record?: string;
  /** What `--record` writes to run.json about the served tasks: the dataset path and score-shaping settings. */
  recordRun?: { dataset?: string; config?: Record<string, unknown> };
}
