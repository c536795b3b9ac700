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
export async function runRollout<T extends Task>(
  env: Env<T>,
  task: T,
  policy: Policy,
  options: RolloutOptions = {},
): Promise<RolloutResult> {
  const ep = await Episode.start(env, task, options);
  try {
    while (!ep.done) {
      if (options.signal?.aborted) {
        ep.fail(new InfraError("rollout aborted", { retryable: false }));
        break;
      }
      let reply: PolicyReply;
      try {
        reply = await act(policy, ep, options.signal);
      } catch (e) {
        if (e instanceof DeadlineExceeded) ep.truncate("deadline");
        else ep.fail(policyFailure(e, policy));
        break;
      }
      // the step's pieces driven inline (Episode.step composes the same ones): one async frame per rollout
      try {
        const actions = ep.actions(reply);
        const turn = ep.takeReply(reply, actions instanceof Promise ? await actions : actions);
        if (!turn) break;
        const items = turn.items;
        let i = 0;
        for (; i < items.length; i++) {
          const ran = ep.runCall(items[i]!);
          if (ran !== true && !(await ran)) break;
        }
        if (i < items.length || !ep.endTurn(turn.overTokens)) break;
      } catch (e) {
        ep.fail(e);
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
