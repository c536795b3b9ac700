import { type Env, rewardWeightsOf, type ScoreCase, type ScoreContext, type ScoreResult } from "./env.js";
import { DatasetError, EnvError } from "./errors.js";
import { assertFiniteRewards, combineRewards } from "./reward.js";
import { DEFAULT_TIMEOUTS, withTimeout } from "./timeout.js";
import type { Message, Task } from "./types.js";

/**
 * Score one `benchmax score` case: the env's own `scoreCase` when it has one, else the task row is parsed and
 * `completion` is scored as the final assistant message through `computeReward`.
 */
export async function scoreCase<T extends Task>(env: Env<T>, c: ScoreCase, ctx: ScoreContext): Promise<ScoreResult> {
  const own = env.capabilities?.scoring;
  if (own) return own.scoreCase(c, ctx);
  const tasks = env.capabilities?.tasks;
  if (!tasks?.parseTask) throw new Error(`env ${env.name} cannot parse task rows (no parseTask)`);
  if (c.task === undefined) throw new DatasetError('case has no "task"', undefined, "task");
  if (typeof c.completion !== "string")
    throw new DatasetError('case has no "completion" string', undefined, "completion");
  const task = tasks.parseTask(c.task);
  const rolloutId = `score:${c.id}:${Math.random().toString(36).slice(2)}`;
  const limit = (what: string, ms: number) => () => new EnvError(`${env.name}.${what} did not return within ${ms} ms`);
  try {
    await withTimeout(env.init(rolloutId, task), DEFAULT_TIMEOUTS.initMs, limit("init", DEFAULT_TIMEOUTS.initMs));
    const messages: Message[] = [{ role: "assistant", content: c.completion }];
    const raw = await withTimeout(
      env.computeReward(rolloutId, messages, task, { timeoutMs: DEFAULT_TIMEOUTS.rewardMs }),
      DEFAULT_TIMEOUTS.rewardMs,
      limit("computeReward", DEFAULT_TIMEOUTS.rewardMs),
    );
    const rewards = assertFiniteRewards(raw);
    return { reward: combineRewards(rewards, rewardWeightsOf(env)), rewards };
  } finally {
    await withTimeout(
      env.release(rolloutId),
      DEFAULT_TIMEOUTS.releaseMs,
      limit("release", DEFAULT_TIMEOUTS.releaseMs),
    ).catch(() => {});
  }
}
