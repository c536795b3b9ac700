import {
  combineRewards,
  computeGroupRewards,
  type Env,
  EnvError,
  type Episode,
  EpisodeGroup,
  InfraError,
  type Message,
  type RewardComponents,
  rewardWeightsOf,
  type Task,
} from "@benchmax/core";

/** What one step of an episode gives back (the cookbook's StepResult, in chat messages). */
export interface EpisodeStep {
  observations: Message[];
  /** 0 until the episode ends; then the env's combined reward (counted here, once). */
  reward: number;
  done: boolean;
  metrics: Record<string, number>;
}

/** One member of a group: an episode of the engine over one rollout. */
export interface GroupEpisode {
  readonly rolloutId: string;
  readonly done: boolean;
  readonly messages: Message[];
  /** The reward components once done. */
  readonly rewards?: RewardComponents;
  /** The combined reward once done. */
  readonly reward?: number;
  initialObservation(): Message[];
  /** The model's reply: the engine runs its tool calls; a reply without one (or the last turn) ends the episode. */
  step(action: string): Promise<EpisodeStep>;
  /** Free the rollout (idempotent; `cleanup()` does it for the whole group). */
  release(): Promise<void>;
}

/**
 * What the group adds to an episode's return, as in tinker-cookbook's `compute_group_rewards` (rl/types.py): the
 * total is the sum of step rewards plus this `reward`, so it is 0 unless the env's group components change the
 * combined reward (the episode's own reward already came with its last step).
 */
export interface GroupReward {
  reward: number;
  /** Every component: the episode's own and the group's. */
  rewards: RewardComponents;
}

/** G episodes of one task, set up once (init + fork), scored together (the cookbook's EnvGroupBuilder). */
export interface EnvGroupBuilder<T extends Task = Task> {
  readonly task: T;
  readonly groupSize: number;
  makeEnvs(): Promise<GroupEpisode[]>;
  computeGroupRewards(episodes: GroupEpisode[]): Promise<GroupReward[]>;
  /** Release every rollout the group still holds; idempotent, never throws. */
  cleanup(): Promise<void>;
  loggingTags(): string[];
}

export interface GroupBuilderOptions {
  /** Episodes per task (G). Default 4. */
  groupSize?: number;
  /** Assistant turns per episode; a reply with tool calls on the last turn ends it unrun (SkyRL's rule). Default 10. */
  maxTurns?: number;
}

let counter = 0;

class EngineEpisode<T extends Task> implements GroupEpisode {
  constructor(readonly ep: Episode<T>) {}

  get rolloutId(): string {
    return this.ep.rolloutId;
  }
  get done(): boolean {
    return this.ep.done;
  }
  get messages(): Message[] {
    return this.ep.messages;
  }
  get rewards(): RewardComponents | undefined {
    return this.ep.rewards;
  }
  get reward(): number | undefined {
    return this.ep.reward;
  }

  initialObservation(): Message[] {
    return this.ep.messages.map((m) => ({ ...m }));
  }

  async step(action: string): Promise<EpisodeStep> {
    const s = await this.ep.step(action);
    const errors = s.tools.filter((t) => t.result.isError).length;
    if (!s.done)
      return {
        observations: s.observations,
        reward: 0,
        done: false,
        metrics: { tool_calls: s.tools.length, tool_errors: errors },
      };
    await this.ep.close();
    if (s.outcome === "env_error" || s.outcome === "infra_error" || s.reward === undefined) {
      // a failure is never a reward of 0
      const msg = `episode ${this.rolloutId} failed (${s.outcome}): ${s.error ?? "no reward"}`;
      throw s.outcome === "infra_error" ? new InfraError(msg) : new EnvError(msg);
    }
    return {
      observations: s.observations,
      reward: s.reward,
      done: true,
      metrics: Object.assign({}, s.rewards, { truncated: s.outcome === "truncated" ? 1 : 0 }),
    };
  }

  release(): Promise<void> {
    return this.ep.close();
  }
}

/** One group builder per task: G episodes made by `init` + `fork` (or G inits without fork). */
export function envGroupBuilders<T extends Task>(
  env: Env<T>,
  tasks: T[],
  options: GroupBuilderOptions = {},
): EnvGroupBuilder<T>[] {
  const G = options.groupSize ?? 4;
  const maxTurns = options.maxTurns ?? 10;
  if (!Number.isInteger(G) || G < 1) throw new EnvError(`groupSize must be a positive integer, got ${G}`);
  return tasks.map((task) => {
    const held: EngineEpisode<T>[] = [];
    return {
      task,
      groupSize: G,
      async makeEnvs() {
        const base = `${task.id}#g${counter++}`;
        // one set-up for every driver: init + fork (or an init per member), under the init time limit
        const group = await EpisodeGroup.start(env, task, {
          rolloutIds: Array.from({ length: G }, (_, k) => `${base}.${k}`),
          groupId: base,
          maxTurns,
          lastTurnTools: "skip",
        });
        const eps = await group.episodes();
        const failed = eps.find((e) => e.done);
        if (failed) {
          await group.close();
          throw new EnvError(`${env.name}: setting up ${failed.rolloutId} failed: ${failed.error}`);
        }
        const out = eps.map((e) => new EngineEpisode(e));
        held.push(...out);
        return out;
      },
      async computeGroupRewards(episodes) {
        for (const e of episodes) {
          if (!e.done || !e.rewards || e.reward === undefined)
            throw new EnvError(`computeGroupRewards: episode ${e.rolloutId} has not ended with a reward`);
        }
        if (!env.capabilities?.groupReward) return episodes.map((e) => ({ reward: 0, rewards: { ...e.rewards! } }));
        // checked and under the reward time limit, as every driver's group reward
        const extra = await computeGroupRewards(
          env,
          episodes.map((e) => ({ rolloutId: e.rolloutId, task, messages: e.messages, rewards: e.rewards! })),
        );
        return episodes.map((e, i) => {
          const rewards = { ...e.rewards!, ...extra[i] };
          return { reward: combineRewards(rewards, rewardWeightsOf(env)) - e.reward!, rewards };
        });
      },
      async cleanup() {
        const eps = held.splice(0);
        await Promise.all(eps.map((e) => e.release().catch(() => {})));
      },
      loggingTags: () => [env.name],
    };
  });
}
