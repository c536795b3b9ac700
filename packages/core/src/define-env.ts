import {
  type ArtifactData,
  type Env,
  type EnvCapabilities,
  type EpisodeCapability,
  type EpisodeDefaults,
  type ExplainCapability,
  type GroupMember,
  type LoadTasksOptions,
  type RewardReads,
  rewardCapability,
  type ScoreCase,
  type ScoreContext,
  type ScoreResult,
} from "./env.js";
import { EnvError } from "./errors.js";
import type { Policy } from "./policy.js";
import { assertFiniteRewards } from "./reward.js";
import { lastAssistantText, type RewardContext, Rubric } from "./rubric.js";
import type { StateView } from "./state-view.js";
import {
  capToolResult,
  formatZodError,
  type Tool,
  ToolError,
  toolErrorResult,
  toolSpec,
  toToolResult,
} from "./tool.js";
import type { Message, RewardComponents, Task, ToolCallRequest, ToolResult, ToolSpec } from "./types.js";

/**
 * What `defineEnv` takes: one flat object. defineEnv maps it onto `Env`'s core and its capabilities (`loadTasks` →
 * `capabilities.tasks`, `rewardWeights` → `capabilities.reward.weights`, …), so an author never writes the
 * capabilities object by hand.
 */
export interface DefineEnvConfig<T extends Task, S> {
  name: string;
  description?: string;
  systemPrompt: string | ((task: T) => string);
  tools?: Tool<S, any>[];
  /** Create per-rollout state (default: an empty object). */
  initState?(task: T, rolloutId: string): S | Promise<S>;
  /** Copy a state for a forked child (default: structuredClone). */
  forkState?(state: S, childId: string, task: T): S | Promise<S>;
  /** Free a state's resources (temp dirs, handles). */
  releaseState?(state: S, rolloutId: string): void | Promise<void>;
  /** Reward: a Rubric, or a function returning named components (then give `rewardWeights`). */
  reward: Rubric<T, S> | ((ctx: RewardContext<T, S>) => RewardComponents | Promise<RewardComponents>);
  rewardWeights?: Record<string, number>;
  passThreshold?: number;
  /** The range every reward component lies in (default [0, 1]): see `RewardCapability.componentRange`. */
  rewardComponentRange?: readonly [number, number];
  computeGroupReward?(group: GroupMember<T>[]): Promise<RewardComponents[]>;
  /** Time limit per tool call (ms) → a tool error the model sees. Default 30 s. */
  toolTimeoutMs?: number;
  /** Output cap per tool call (characters). Default 20,000. */
  maxOutputChars?: number;
  loadTasks?(source?: string, options?: LoadTasksOptions): Promise<T[]>;
  parseTask?(row: unknown, where?: string): T;
  referencePolicy?(): Policy;
  scoreCase?(c: ScoreCase, ctx: ScoreContext): Promise<ScoreResult>;
  parseActions?: EpisodeCapability["parseActions"];
  /** Episode limits when the driver sets none (a default deadline, a per-reply tool-call cap). */
  episodeDefaults?: EpisodeDefaults;
  rolloutMetadata?(rolloutId: string, state: S): Record<string, unknown> | undefined;
  /** Explain a scored rollout's reward to a person (reports only): see `ExplainCapability`. */
  explainReward?: ExplainCapability<T>["explainReward"];
  /** What the reward reads: see `RewardCapability.reads` ("conversation" lets `benchmax rescore` re-score stored rollouts). */
  rewardReads?: RewardReads;
  /** The final-state artifacts the reward reads, from the rollout's state (see `ArtifactsCapability`). */
  artifacts?(
    state: S,
    rolloutId: string,
  ): Record<string, ArtifactData> | undefined | Promise<Record<string, ArtifactData> | undefined>;
  /** Put stored artifacts back into a fresh state (see `ArtifactsCapability.restoreArtifacts`). */
  restoreArtifacts?(state: S, artifacts: Record<string, Uint8Array>, rolloutId: string): void | Promise<void>;
  /**
   * The rollout's state as a person would see it (a grid, or text): gives the env the optional capability
   * `stateView` (`benchmax play` shows it after every tool call). Must not change the state.
   */
  renderState?(state: S, rolloutId: string): StateView | undefined | Promise<StateView | undefined>;
  close?(): void | Promise<void>;
}

interface Slot<T, S> {
  task: T;
  state: S;
}

/** The common way to write an env: tools with zod schemas, per-rollout state, a rubric. */
export function defineEnv<T extends Task = Task, S = Record<string, never>>(cfg: DefineEnvConfig<T, S>): Env<T> {
  const tools = new Map<string, Tool<S, any>>();
  for (const t of cfg.tools ?? []) {
    if (tools.has(t.name)) throw new Error(`defineEnv(${cfg.name}): duplicate tool "${t.name}"`);
    tools.set(t.name, t);
  }
  const specs: ToolSpec[] = [...tools.values()].map(toolSpec);
  const slots = new Map<string, Slot<T, S>>();
  const rubric = cfg.reward instanceof Rubric ? cfg.reward : undefined;
  const weights = cfg.rewardWeights ?? rubric?.weights ?? {};
  const range = cfg.rewardComponentRange;
  if (range && !(Number.isFinite(range[0]) && Number.isFinite(range[1]) && range[0] <= range[1]))
    throw new Error(`defineEnv(${cfg.name}): rewardComponentRange must be [min, max] with finite min ≤ max`);
  const defaultTimeout = cfg.toolTimeoutMs ?? 30_000;
  const defaultMaxOut = cfg.maxOutputChars ?? 20_000;
  const toolNames = () => [...tools.keys()].join(", ") || "(none)";

  function slot(rolloutId: string): Slot<T, S> {
    const s = slots.get(rolloutId);
    if (!s) throw new EnvError(`${cfg.name}: unknown rollout "${rolloutId}" (not initialised, or already released)`);
    return s;
  }

  async function execute(t: Tool<S, any>, args: unknown, s: Slot<T, S>, rolloutId: string): Promise<ToolResult> {
    const timeoutMs = t.timeoutMs ?? defaultTimeout;
    let controller: AbortController | undefined;
    let timer: NodeJS.Timeout | undefined;
    const ctx = {
      rolloutId,
      state: s.state,
      // created on first use: most tools never look at it
      get signal() {
        controller ??= new AbortController();
        return controller.signal;
      },
    };
    try {
      const ret = t.execute(args, ctx);
      // a synchronous tool has already finished: no timer needed
      const out =
        !(ret instanceof Promise) || !(timeoutMs > 0 && Number.isFinite(timeoutMs))
          ? await ret
          : await Promise.race([
              ret,
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => {
                  controller?.abort();
                  reject(
                    Object.assign(new ToolError(`Tool "${t.name}" timed out after ${timeoutMs} ms`), { timeout: true }),
                  );
                }, timeoutMs);
              }),
            ]);
      return capToolResult(toToolResult(out), t.maxOutputChars ?? defaultMaxOut);
    } catch (e) {
      if (e instanceof ToolError || (e instanceof Error && e.name === "ToolError")) {
        // a tool's own ToolError carries no metadata; a timeout is marked for transports (MCP/OpenEnv error types)
        return (e as { timeout?: boolean }).timeout
          ? toolErrorResult(`Error: ${e.message}`, { errorType: "timeout" })
          : toolErrorResult(`Error: ${e.message}`);
      }
      throw e instanceof Error && (e.name === "InfraError" || e.name === "EnvError")
        ? e
        : new EnvError(`tool "${t.name}" threw: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /** The flat options, mapped onto the capabilities: a capability is there when the config gives any of it. */
  function capabilities(): EnvCapabilities<T> {
    const caps: EnvCapabilities<T> = {
      fork: {
        async fork(rolloutId, childIds) {
          const parent = slot(rolloutId);
          for (const id of childIds) {
            const state = cfg.forkState
              ? await cfg.forkState(parent.state, id, parent.task)
              : (structuredClone(parent.state) as S);
            slots.set(id, { task: parent.task, state });
          }
        },
      },
      reward: rewardCapability({
        weights,
        passThreshold: cfg.passThreshold,
        componentRange: range,
        reads: cfg.rewardReads,
      }),
    };
    if (cfg.loadTasks || cfg.parseTask)
      caps.tasks = {
        ...(cfg.loadTasks ? { loadTasks: cfg.loadTasks } : {}),
        ...(cfg.parseTask ? { parseTask: cfg.parseTask } : {}),
      };
    if (cfg.computeGroupReward) caps.groupReward = { computeGroupReward: cfg.computeGroupReward };
    if (cfg.scoreCase) caps.scoring = { scoreCase: cfg.scoreCase };
    if (cfg.explainReward) caps.explain = { explainReward: cfg.explainReward };
    if (cfg.referencePolicy) caps.reference = { referencePolicy: cfg.referencePolicy };
    if (cfg.parseActions || cfg.episodeDefaults)
      caps.episode = {
        ...(cfg.episodeDefaults ? { defaults: cfg.episodeDefaults } : {}),
        ...(cfg.parseActions ? { parseActions: cfg.parseActions } : {}),
      };
    if (cfg.description !== undefined || cfg.rolloutMetadata) {
      const meta = cfg.rolloutMetadata;
      caps.metadata = {
        ...(cfg.description !== undefined ? { description: cfg.description } : {}),
        ...(meta
          ? {
              rolloutMetadata: (id: string) => {
                const s = slots.get(id);
                return s ? meta(id, s.state) : undefined;
              },
            }
          : {}),
      };
    }
    if (cfg.artifacts) {
      const take = cfg.artifacts;
      const put = cfg.restoreArtifacts;
      caps.artifacts = {
        artifacts: (id) => take(slot(id).state, id),
        ...(put
          ? {
              restoreArtifacts: async (id: string, artifacts: Record<string, Uint8Array>) => {
                await put(slot(id).state, artifacts, id);
              },
            }
          : {}),
      };
    }
    if (cfg.renderState) {
      const render = cfg.renderState;
      caps.stateView = {
        renderState: (id) => {
          const s = slots.get(id);
          return s ? render(s.state, id) : undefined;
        },
      };
    }
    return caps;
  }

  const env: Env<T> = {
    name: cfg.name,
    systemPrompt: cfg.systemPrompt,
    listTools: () => specs,

    async init(rolloutId, task) {
      const state = cfg.initState ? await cfg.initState(task, rolloutId) : ({} as S);
      slots.set(rolloutId, { task, state });
    },

    async runTool(rolloutId, call: ToolCallRequest) {
      const s = slot(rolloutId);
      const t = tools.get(call.name);
      if (!t) {
        return toolErrorResult(`Error: unknown tool "${call.name}". Available tools: ${toolNames()}`, {
          errorType: "tool_not_found",
        });
      }
      const parsed = t.parameters.safeParse(call.arguments ?? {});
      if (!parsed.success) {
        return toolErrorResult(`Error: invalid arguments for ${t.name}: ${formatZodError(parsed.error)}`, {
          errorType: "invalid_args",
        });
      }
      return execute(t, parsed.data, s, rolloutId);
    },

    async computeReward(rolloutId, messages: Message[], task, options) {
      const s = slot(rolloutId);
      const ctx: RewardContext<T, S> = {
        rolloutId,
        task,
        messages,
        completion: lastAssistantText(messages),
        state: s.state,
      };
      if (options?.timeoutMs !== undefined && options.timeoutMs > 0 && Number.isFinite(options.timeoutMs))
        ctx.endsAt = performance.now() + options.timeoutMs;
      const out = rubric
        ? await rubric.score(ctx)
        : await (cfg.reward as Exclude<typeof cfg.reward, Rubric<T, S>>)(ctx);
      return assertFiniteRewards(out, `${cfg.name}.computeReward`);
    },

    async release(rolloutId) {
      const s = slots.get(rolloutId);
      if (!s) return;
      slots.delete(rolloutId);
      await cfg.releaseState?.(s.state, rolloutId);
    },

    async close() {
      const ids = [...slots.keys()];
      for (const id of ids) await env.release(id);
      await cfg.close?.();
    },
    capabilities: capabilities(),
  };
  return env;
}
