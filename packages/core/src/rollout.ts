import type { Env } from "./env.js";
import { Episode, type EpisodeOptions } from "./episode.js";
import { errorMessage, InfraError, isInfraError } from "./errors.js";
import type { Policy, PolicyReply } from "./policy.js";
import type { RolloutResult } from "./rollout-result.js";
import { DeadlineExceeded, withTimeout } from "./timeout.js";
import type { Task } from "./types.js";

export interface RolloutOptions extends EpisodeOptions {
  signal?: AbortSignal;
}

function policyFailure(e: unknown, policy: Policy): Error {
  return isInfraError(e)
    ? (e as Error)
    : new InfraError(`policy ${policy.name} failed: ${errorMessage(e)}`, { cause: e });
}

function act(policy: Policy, ep: Episode<any>, signal: AbortSignal | undefined): Promise<PolicyReply> {
  const left = ep.remainingMs();
  const reply = policy.act(ep.policyInput(signal));
  return left === undefined ? reply : withTimeout(reply, left, () => new DeadlineExceeded());
}

/**
 * Drive one episode with a policy: policy → `Episode.step` (tool calls → observations) → … until the model
 * answers without a tool call or a limit hits; then score and release. Env failures end as env_error,
 * infrastructure failures (the policy's included) as infra_error — with no reward.
 */
export function runRollout<T extends Task>(
  env: Env<T>,
  task: T,
  policy: Policy,
  options: RolloutOptions = {},
): Promise<RolloutResult> {
  // not async: one async frame per rollout (playEpisode's), with 100,000 rollouts alive at once
  return playEpisode(Episode.start(env, task, options), policy, options.signal);
}

/**
 * Drive a started episode (`Episode.start`, a member of an `EpisodeGroup`) to its end with a policy: `policy.act`
 * then `episode.step`, until done; then `finish` and `close`. Its result.
 */
export async function playEpisode<T extends Task>(
  episode: Episode<T> | Promise<Episode<T>>,
  policy: Policy,
  signal?: AbortSignal,
): Promise<RolloutResult> {
  const ep = episode instanceof Promise ? await episode : episode;
  try {
    while (!ep.done) {
      if (signal?.aborted) {
        await ep.finish({ error: new InfraError("rollout aborted", { retryable: false }) });
        break;
      }
      let reply: PolicyReply;
      try {
        reply = await act(policy, ep, signal);
      } catch (e) {
        await ep.finish(
          e instanceof DeadlineExceeded ? { truncatedBy: "deadline" } : { error: policyFailure(e, policy) },
        );
        break;
      }
      try {
        // the loop reads the conversation, not the step's lists
        await ep.step(reply, { lists: false });
      } catch (e) {
        // env failures end the episode inside `step`; what is thrown is a reply `step` refuses (the policy's fault)
        await ep.finish({ error: policyFailure(e, policy) });
        break;
      }
    }
    await ep.finish();
  } finally {
    await ep.close();
  }
  return ep.result();
}

export { buildInitialMessages } from "./initial-messages.js";
