import { type Env, type GroupMember, rewardWeightsOf } from "./env.js";
import { Episode, type EpisodeEnd, type EpisodeOptions } from "./episode.js";
import { EnvError, errorMessage, isInfraError, UsageError } from "./errors.js";
import { assertFiniteRewards, combineRewards } from "./reward.js";
import { isScored, type RolloutResult } from "./rollout-result.js";
import { DEFAULT_TIMEOUTS, withTimeout } from "./timeout.js";
import type { Message, RewardComponents, Task } from "./types.js";

export interface EpisodeGroupOptions extends Omit<EpisodeOptions, "rolloutId" | "sample" | "initialized"> {
  /** The members' rollout ids, one per member: the group size G is their count. */
  rolloutIds: string[];
  /** Each member's sample number (default: its index). */
  samples?: number[];
  /** Set the group up with `env.fork` where the env has it (default true); else every member inits on its own. */
  fork?: boolean;
}

/** How one member of a group ended, once the group is scored. */
export interface GroupMemberEnd extends EpisodeEnd {
  rolloutId: string;
  /** The member's own reward, before the group's components were added (set when it was scored). */
  memberReward?: number;
}

/**
 * The env's group reward for scored members, under a time limit (`rewardTimeoutMs`, default 600 s), checked: one
 * object of finite components per member, in order. Throws EnvError (or the env's InfraError) otherwise.
 */
export async function computeGroupRewards<T extends Task>(
  env: Env<T>,
  members: GroupMember<T>[],
  options: { rewardTimeoutMs?: number } = {},
): Promise<RewardComponents[]> {
  const group = env.capabilities?.groupReward;
  if (!group) throw new UsageError(`${env.name} has no group reward`);
  if (members.length === 0) return [];
  const ms = options.rewardTimeoutMs ?? DEFAULT_TIMEOUTS.rewardMs;
  const extra = await withTimeout(
    Promise.resolve(group.computeGroupReward(members)),
    ms,
    () => new EnvError(`${env.name}.computeGroupReward did not return within ${ms} ms`),
  );
  return checkGroupRewards(extra, members.length, `${env.name}.computeGroupReward`);
}

/** Check a group reward's shape: an array of `n` objects of finite components (an env or wire answer). */
export function checkGroupRewards(extra: unknown, n: number, source = "computeGroupReward"): RewardComponents[] {
  if (!Array.isArray(extra) || extra.length !== n) {
    throw new EnvError(
      `${source} returned ${Array.isArray(extra) ? `${extra.length} items` : typeof extra} for ${n} rollouts`,
    );
  }
  return extra.map((x) => assertFiniteRewards(x, source));
}

interface Scoring {
  r: RolloutResult;
  messages: Message[];
}

async function applyGroupReward<T extends Task>(
  env: Env<T>,
  task: T,
  members: Scoring[],
  rewardTimeoutMs: number | undefined,
): Promise<void> {
  if (!env.capabilities?.groupReward) return;
  const scored = members.filter((m) => isScored(m.r));
  if (scored.length === 0) return;
  try {
    const extra = await computeGroupRewards(
      env,
      scored.map(({ r, messages }) => ({ rolloutId: r.rolloutId, task, messages, rewards: r.rewards ?? {} })),
      { rewardTimeoutMs },
    );
    // combine every member before changing any: a failure leaves no member half-scored
    const combined = scored.map(({ r }, i) => {
      const rewards = { ...r.rewards, ...extra[i] };
      const reward = combineRewards(rewards, rewardWeightsOf(env));
      if (!Number.isFinite(reward)) throw new EnvError(`combined group reward is not finite (${reward})`);
      return { rewards, reward };
    });
    scored.forEach(({ r }, i) => {
      r.rewards = combined[i]!.rewards;
      r.reward = combined[i]!.reward;
    });
  } catch (e) {
    // the env failed, not the members: none of them is scored (never a reward of 0)
    for (const { r } of scored) {
      r.outcome = isInfraError(e) ? "infra_error" : "env_error";
      r.error = `group reward failed: ${errorMessage(e)}`;
      delete r.reward;
      delete r.rewards;
      delete r.truncatedBy;
    }
  }
}

/**
 * Add the env's group reward (`computeGroupReward`) to finished rollouts of one task, in place: each scored member's
 * `rewards` gains the group's components and `reward` is recombined. Members that ended in env_error / infra_error
 * are left out (they have no reward). When the group reward fails or passes its time limit, every scored member
 * becomes env_error (infra_error for an InfraError) with no reward. No-op for an env without a group reward.
 */
export function scoreGroup<T extends Task>(
  env: Env<T>,
  task: T,
  results: RolloutResult[],
  options: { rewardTimeoutMs?: number } = {},
): Promise<void> {
  return applyGroupReward(
    env,
    task,
    results.map((r) => ({ r, messages: r.messages })),
    options.rewardTimeoutMs,
  );
}

/**
 * G episodes of one task (a GRPO group): set up once — the first member's `env.init`, then `env.fork` to the others,
 * under `initTimeoutMs` — where the env has `fork`; otherwise, or when that set-up fails, each member inits on its
 * own (a member whose init fails is an episode already done with env_error: an outcome, never a throw). Members
 * are created on demand (`member(k)`), so a runner with less concurrency than G holds no more live state than
 * with fork. `finish` scores every member, then the group (`computeGroupReward`, under `rewardTimeoutMs`); `close`
 * releases every member. The runner, the server, SkyRL and Tinker-style group builders all set groups up here.
 */
export class EpisodeGroup<T extends Task = Task> {
  private readonly started: (Promise<Episode<T>> | undefined)[];
  /** The fork set-up: the first member, or undefined when it failed (every member then inits on its own). */
  private setup: Promise<Episode<T> | undefined> | undefined;
  private finishing: Promise<GroupMemberEnd[]> | undefined;
  private closing: Promise<void> | undefined;
  /** What every member's options share (made once: one object shape for every member's episode). */
  private readonly base: EpisodeOptions;

  constructor(
    readonly env: Env<T>,
    readonly task: T,
    private readonly options: EpisodeGroupOptions,
  ) {
    const ids = options.rolloutIds;
    if (ids.length === 0) throw new UsageError("a group needs at least one rollout id");
    if (new Set(ids).size !== ids.length) throw new UsageError("a group's rollout ids must be distinct");
    if (options.samples && options.samples.length !== ids.length) {
      throw new UsageError(`a group of ${ids.length} rollouts got ${options.samples.length} sample numbers`);
    }
    this.started = new Array(ids.length);
    // the group's own keys ride along unread: no object rest here, which leaves V8 a slow-mode object per member
    this.base = Object.assign({}, options, { groupId: options.groupId ?? task.id, attempt: options.attempt ?? 0 });
  }

  /** Set up a group and start every member (awaits them all). */
  static async start<T extends Task>(env: Env<T>, task: T, options: EpisodeGroupOptions): Promise<EpisodeGroup<T>> {
    const g = new EpisodeGroup(env, task, options);
    await g.episodes();
    return g;
  }

  /** G. */
  get size(): number {
    return this.options.rolloutIds.length;
  }

  get rolloutIds(): readonly string[] {
    return this.options.rolloutIds;
  }

  /** The group is set up with `env.fork` (once the first member was asked for). */
  get usesFork(): boolean {
    return this.size > 1 && this.options.fork !== false && !!this.env.capabilities?.fork;
  }

  private optionsOf(k: number, initialized: boolean): EpisodeOptions {
    return Object.assign({}, this.base, {
      rolloutId: this.options.rolloutIds[k],
      sample: this.options.samples?.[k] ?? k,
      initialized,
    });
  }

  /** Member `k` (0 ≤ k < G), started on first ask. */
  member(k: number): Promise<Episode<T>> {
    if (!Number.isInteger(k) || k < 0 || k >= this.size) {
      return Promise.reject(new UsageError(`no member ${k} in a group of ${this.size}`));
    }
    if (this.closing) return Promise.reject(new UsageError("the group is closed"));
    this.started[k] ??= this.startMember(k);
    return this.started[k]!;
  }

  /** Every member, started. */
  episodes(): Promise<Episode<T>[]> {
    return Promise.all(this.options.rolloutIds.map((_, k) => this.member(k)));
  }

  private async startMember(k: number): Promise<Episode<T>> {
    if (this.usesFork) {
      this.setup ??= this.forkAll();
      const first = await this.setup;
      // a forked member's episode is made when it is asked for: its clock (deadline, duration) starts then
      if (first) return k === 0 ? first : Episode.start(this.env, this.task, this.optionsOf(k, true));
    }
    return Episode.start(this.env, this.task, this.optionsOf(k, false));
  }

  /**
   * init the first member and fork its state to every other id (`env.fork` under `initTimeoutMs`); undefined, with
   * everything released, when that fails.
   */
  private async forkAll(): Promise<Episode<T> | undefined> {
    const first = await Episode.start(this.env, this.task, this.optionsOf(0, false));
    const ids = this.options.rolloutIds.slice(1);
    if (!first.done) {
      const ms = this.options.initTimeoutMs ?? DEFAULT_TIMEOUTS.initMs;
      try {
        await withTimeout(
          Promise.resolve(this.env.capabilities!.fork!.fork(first.rolloutId, ids)),
          ms,
          () => new EnvError(`${this.env.name}.fork did not return within ${ms} ms`),
        );
        return first;
      } catch {
        // a fork that failed part way may have created some children: free every id it was given
        await this.releaseIds(ids);
      }
    }
    // the first member's state is dropped: every member inits on its own
    await first.close();
    return undefined;
  }

  private async releaseIds(ids: string[]): Promise<void> {
    const ms = this.options.releaseTimeoutMs ?? DEFAULT_TIMEOUTS.releaseMs;
    for (const id of ids) {
      await withTimeout(
        Promise.resolve(this.env.release(id)),
        ms,
        () => new EnvError(`${this.env.name}.release did not return within ${ms} ms`),
      ).catch(() => {});
    }
  }

  /**
   * Score the group, once: finish every member (a member not yet done ends as completed and is scored; one never
   * started is started and scored as it stands), then add the env's group reward to the scored ones. A member's own
   * failure stays its own outcome; a failed group reward makes every scored member env_error / infra_error.
   */
  finish(): Promise<GroupMemberEnd[]> {
    this.finishing ??= this.score();
    return this.finishing;
  }

  private async score(): Promise<GroupMemberEnd[]> {
    const eps = await this.episodes();
    await Promise.all(eps.map((ep) => ep.finish()));
    const own = eps.map((ep) => ep.reward);
    await applyGroupReward(
      this.env,
      this.task,
      eps.map((ep) => ({ r: ep.result(), messages: ep.messages })),
      this.options.rewardTimeoutMs,
    );
    return eps.map((ep, k) => {
      const r = ep.result();
      const end: GroupMemberEnd = { rolloutId: ep.rolloutId, outcome: r.outcome };
      if (r.truncatedBy) end.truncatedBy = r.truncatedBy;
      if (r.reward !== undefined) end.reward = r.reward;
      if (r.rewards) end.rewards = r.rewards;
      if (r.error) end.error = r.error;
      if (own[k] !== undefined) end.memberReward = own[k];
      return end;
    });
  }

  /** Release every member started (and every forked one); idempotent, never throws. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const forked = this.setup ? await this.setup : undefined;
      // forked state of members never asked for is freed here (they have no episode)
      const untaken = forked ? this.options.rolloutIds.filter((_, k) => !this.started[k]) : [];
      const eps = await Promise.all(this.started.filter((p) => p !== undefined));
      await Promise.all([...eps.map((ep) => ep.close()), this.releaseIds(untaken)]);
    })();
    return this.closing;
  }

  /** The members' results (after `finish` and `close` for rewards, metadata and release errors). */
  async results(): Promise<RolloutResult[]> {
    const eps = await Promise.all(this.started.filter((p) => p !== undefined));
    return eps.map((ep) => ep.result());
  }
}
