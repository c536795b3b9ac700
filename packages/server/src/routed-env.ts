import {
  type Env,
  type EnvCapabilities,
  errorMessage,
  type GroupMember,
  InfraError,
  type LoadTasksOptions,
  type Message,
  type RewardComponents,
  type Task,
  type ToolCallRequest,
  type ToolResult,
  type ToolSpec,
} from "@benchmax/core";
import { isEndpointDown } from "./http-client.js";
import {
  callMigrating,
  isRolloutLost,
  liveRollout,
  type MigrationHost,
  migrationFailed,
  type RolloutLostError,
} from "./migrating-call.js";
import { isUnavailable, type RemoteEnv } from "./remote-env.js";
import { isReplayDiverged, type MigrationEvent, type MigrationStats, newStats } from "./rollout-log.js";

export interface RoutedEnvOptions {
  /** How often endpoints marked dead or draining are probed with GET /health (ms). Default 5 s. */
  healthIntervalMs?: number;
  /** Called after every migration of a rollout, successful or not. */
  onMigration?: (e: MigrationEvent) => void;
}

interface Endpoint {
  env: RemoteEnv;
  /** Reachable: new rollouts may go here (unless it drains). Set false at the first failure, true when /health answers. */
  alive: boolean;
}

/**
 * One Env over N env servers. A new rollout goes to the live, non-draining endpoint with the fewest rollouts;
 * every later call of a rollout — and its forks — goes to the endpoint that holds it.
 *
 * A rollout is a log (its create body, fork lineage, and tool calls with results; see RemoteEnv). When its endpoint
 * dies (refused, reset), hangs (no answer, and no answer on /health), restarts (a new instance) or forgets it (404),
 * the rollout migrates: it is re-created on another live endpoint — on the same URL only if that answers as a new
 * instance — and its logged calls are replayed there in order, each result checked against the log; then the call
 * that failed runs there. The runner sees nothing. A replayed result that differs, or no endpoint left, fails the
 * call with an InfraError "migration failed: …" (the runner's infra_error: never scored). A dead endpoint leaves the
 * rotation at once and is probed every `healthIntervalMs`; a draining one (503 DRAINING, a draining /health, or
 * `x-benchmax-draining: 1`) gets no new rollouts while its live ones stay until it goes away.
 */
export class RoutedEnv implements Env {
  readonly name: string;
  /**
   * The first endpoint's `reward` and `metadata`, passed on whole; `tasks`, `fork` and `groupReward` routed here (to
   * a live endpoint, or to the one holding the rollout).
   */
  readonly capabilities: EnvCapabilities;
  readonly endpoints: Endpoint[];
  /** Migrations, replayed calls and failed migrations so far. */
  readonly stats: MigrationStats = newStats();
  private readonly affinity = new Map<string, Endpoint>();
  /** Rollouts whose migration failed: their calls fail with the same InfraError until release. */
  private readonly broken = new Map<string, InfraError>();
  /** Calls follow their rollout: a lost one migrates to another endpoint, then the call runs again there. */
  private readonly migrating: MigrationHost<Endpoint> = {
    moving: new Map(),
    whereIs: (id) => this.route(id),
    failedAt: (e, err) => this.markDown(e, err),
    movedFrom: (id, e) => this.affinity.get(id) !== e || !e.env.holds(id),
    giveUp: (id, e, err) => {
      this.stats.failedMigrations++;
      this.fail(id, e, err);
    },
    migrate: (id, e, lost) => this.migrate(id, e, lost),
  };
  private readonly prober: NodeJS.Timeout;
  private readonly onMigration?: (e: MigrationEvent) => void;
  private next = 0;

  constructor(envs: RemoteEnv[], options: RoutedEnvOptions = {}) {
    if (envs.length === 0) throw new InfraError("RoutedEnv needs at least one endpoint", { retryable: false });
    const first = envs[0]!;
    for (const e of envs) {
      if (e.name !== first.name) {
        throw new InfraError(`endpoints serve different envs: ${first.url} is ${first.name}, ${e.url} is ${e.name}`, {
          retryable: false,
        });
      }
    }
    this.endpoints = envs.map((env) => ({ env, alive: true }));
    this.name = first.name;
    this.onMigration = options.onMigration;
    const own = first.capabilities;
    this.capabilities = {
      ...(own.reward ? { reward: own.reward } : {}),
      ...(own.metadata ? { metadata: own.metadata } : {}),
      tasks: { loadTasks: (source, o) => this.listTasks(source, o) },
      ...(own.fork ? { fork: { fork: (id, kids) => this.forkRollout(id, kids) } } : {}),
      ...(own.groupReward ? { groupReward: { computeGroupReward: (g) => this.groupReward(g) } } : {}),
    };
    this.prober = setInterval(() => void this.probe(), options.healthIntervalMs ?? 5000);
    this.prober.unref();
  }

  systemPrompt = (task: Task): string => {
    const e = this.endpoints.find((p) => p.alive) ?? this.endpoints[0]!;
    return typeof e.env.systemPrompt === "function" ? e.env.systemPrompt(task) : e.env.systemPrompt;
  };

  listTools(): ToolSpec[] {
    return this.endpoints[0]!.env.listTools();
  }

  /** Endpoints currently considered alive (draining ones included: they still serve their rollouts). */
  get alive(): string[] {
    return this.endpoints.filter((e) => e.alive).map((e) => e.env.url);
  }

  /** Endpoints that said they drain: no new rollouts go there. */
  get draining(): string[] {
    return this.endpoints.filter((e) => e.alive && e.env.draining).map((e) => e.env.url);
  }

  /** Probe dead and draining endpoints now: those whose /health answers come back (a draining one stays out). */
  async probe(): Promise<void> {
    await Promise.all(this.endpoints.filter((e) => !e.alive || e.env.draining).map((e) => this.probeOne(e)));
  }

  private async probeOne(e: Endpoint): Promise<void> {
    const p = await e.env.probe();
    if (p.state === "healthy" || p.state === "draining") e.alive = true;
    else if (p.state === "down") e.alive = false;
  }

  private markDown(e: Endpoint, err: unknown): void {
    if (isEndpointDown(err) || (isRolloutLost(err) && (err as RolloutLostError).endpointDown)) e.alive = false;
  }

  /** Live endpoints by load (fewest rollouts first, round-robin among equals); then dead ones; draining ones last. */
  private candidates(): Endpoint[] {
    const start = this.next++;
    const n = this.endpoints.length;
    const order = this.endpoints.map((_, i) => this.endpoints[(start + i) % n]!);
    const live = order
      .filter((e) => e.alive && !e.env.draining)
      .sort((a, b) => a.env.activeRollouts - b.env.activeRollouts);
    return [...live, ...order.filter((e) => !e.alive), ...order.filter((e) => e.alive && e.env.draining)];
  }

  private route(rolloutId: string): Endpoint {
    return liveRollout(this.name, rolloutId, this.affinity, this.broken);
  }

  private fail(rolloutId: string, from: Endpoint, err: InfraError): void {
    from.env.detach(rolloutId);
    this.affinity.delete(rolloutId);
    this.broken.set(rolloutId, err);
  }

  /**
   * Rebuild a lost rollout from its log on another live endpoint (by load), else on a dead one that answers /health
   * again, else on its own URL if that answers as a new instance.
   */
  private async migrate(rolloutId: string, from: Endpoint, lost: RolloutLostError): Promise<void> {
    const t0 = performance.now();
    const oldInstance = from.env.instanceOf(rolloutId);
    const log = from.env.detach(rolloutId, { stale: lost.endpointDown });
    if (!log) throw lost;
    let replayed = 0;
    const errors: string[] = [];
    const tried = new Set<Endpoint>([from]);
    let probedDead = false;
    let triedSame = false;
    const event = (ok: boolean, to?: string, error?: string) => {
      const ev: MigrationEvent = { rolloutId, from: from.env.url, ok, reason: lost.message, replayed, ms: 0 };
      if (to !== undefined) ev.to = to;
      if (error !== undefined) ev.error = error;
      ev.ms = performance.now() - t0;
      this.onMigration?.(ev);
    };
    const giveUp = (why: string): never => {
      this.stats.failedMigrations++;
      const err = migrationFailed(rolloutId, lost, why);
      this.affinity.delete(rolloutId);
      this.broken.set(rolloutId, err);
      event(false, undefined, why);
      throw err;
    };
    for (;;) {
      let target = this.candidates().find((e) => !tried.has(e) && e.alive && !e.env.draining);
      if (!target && !probedDead) {
        // endpoints marked dead may be back (a restart the prober has not seen yet)
        probedDead = true;
        await Promise.all(this.endpoints.filter((e) => !tried.has(e) && !e.alive).map((e) => this.probeOne(e)));
        continue;
      }
      if (!target && !triedSame) {
        // last: the rollout's own URL, only if it answers as a new instance (never the one that lost it)
        triedSame = true;
        const p = await from.env.probe();
        if (p.state === "healthy" && p.instance && p.instance !== oldInstance) {
          from.alive = true;
          target = from;
        } else {
          errors.push(
            `${from.env.url}: ${p.state === "healthy" ? "the same instance, which lost the rollout" : p.state}`,
          );
        }
      }
      if (!target) return giveUp(`no live endpoint left to take it (${errors.join("; ") || "none"})`);
      tried.add(target);
      try {
        await target.env.rebuild(rolloutId, log, () => {
          replayed++;
          this.stats.replayedCalls++;
        });
      } catch (err) {
        if (isReplayDiverged(err)) return giveUp(errorMessage(err));
        // that endpoint failed too (down, hung, restarted meanwhile, full or draining): the next one
        if (isRolloutLost(err) || isEndpointDown(err) || isUnavailable(err)) {
          this.markDown(target, err);
          errors.push(`${target.env.url}: ${errorMessage(err)}`);
          continue;
        }
        return giveUp(`re-creating it on ${target.env.url}: ${errorMessage(err)}`);
      }
      this.affinity.set(rolloutId, target);
      this.stats.migrations++;
      event(true, target.env.url);
      return;
    }
  }

  async init(rolloutId: string, task: Task): Promise<void> {
    const errors: string[] = [];
    this.broken.delete(rolloutId);
    for (const e of this.candidates()) {
      try {
        await e.env.init(rolloutId, task);
        e.alive = true;
        this.affinity.set(rolloutId, e);
        return;
      } catch (err) {
        // only an unreachable, full or draining endpoint is worth another try; anything else is the env's answer
        if (!isEndpointDown(err) && !isUnavailable(err)) throw err;
        this.markDown(e, err);
        errors.push(errorMessage(err));
      }
    }
    throw new InfraError(`no env server could take rollout "${rolloutId}": ${errors.join("; ")}`);
  }

  private async forkRollout(rolloutId: string, childIds: string[]): Promise<void> {
    await callMigrating(this.migrating, rolloutId, (e) => e.env.forkHere(rolloutId, childIds));
    // the parent may have migrated before the fork: the children are where it is now
    const e = this.route(rolloutId);
    for (const id of childIds) {
      this.broken.delete(id);
      this.affinity.set(id, e);
    }
  }

  runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    return callMigrating(this.migrating, rolloutId, (e) => e.env.runToolHere(rolloutId, call));
  }

  computeReward(rolloutId: string, messages: Message[], _task: Task): Promise<RewardComponents> {
    return callMigrating(this.migrating, rolloutId, (e) => e.env.computeRewardHere(rolloutId, messages));
  }

  private async groupReward(group: GroupMember[]): Promise<RewardComponents[]> {
    let last: unknown;
    for (const e of this.candidates()) {
      try {
        return await e.env.capabilities.groupReward!.computeGroupReward(group);
      } catch (err) {
        if (!isEndpointDown(err)) throw err;
        this.markDown(e, err);
        last = err;
      }
    }
    throw last instanceof Error ? last : new InfraError("no env server reachable for the group reward");
  }

  /** Free the rollout where it lives; on an endpoint known dead (or after a failed migration) this is a no-op. */
  async release(rolloutId: string): Promise<void> {
    this.broken.delete(rolloutId);
    const e = this.affinity.get(rolloutId);
    if (!e) return;
    this.affinity.delete(rolloutId);
    if (!e.alive) {
      e.env.forget(rolloutId);
      return;
    }
    try {
      await e.env.release(rolloutId);
    } catch (err) {
      this.markDown(e, err);
      throw err;
    }
  }

  private async listTasks(source?: string, options?: LoadTasksOptions): Promise<Task[]> {
    let last: unknown;
    for (const e of this.candidates()) {
      try {
        return await e.env.listTasks(source, options);
      } catch (err) {
        if (!isEndpointDown(err)) throw err;
        this.markDown(e, err);
        last = err;
      }
    }
    throw last;
  }

  async close(): Promise<void> {
    clearInterval(this.prober);
    await Promise.all(this.endpoints.map((e) => e.env.close().catch(() => {})));
  }
}
