import { finalAnswerText } from "./answer.js";
import { assertFiniteRewards } from "./reward.js";
import type { Message, RewardComponents, Task } from "./types.js";

export interface RewardContext<T extends Task = Task, S = unknown> {
  rolloutId: string;
  task: T;
  messages: Message[];
  /** The model's final answer: the last assistant message's text, tool-call blocks removed (`finalAnswerText`). */
  completion: string;
  /** The env's per-rollout state (when the env has one). */
  state: S;
  /**
   * When the caller's reward time limit runs out (`performance.now()` clock), when it gave one: past it the rollout
   * ends env_error. An env that runs the model's work while scoring can stop it before then (the model's failure).
   */
  endsAt?: number;
}

export interface RubricComponent<T extends Task = Task, S = unknown> {
  name: string;
  /** Weight in the combined reward; 0 (or absent with `weight: 0`) = reported only. Default 1. */
  weight?: number;
  score(ctx: RewardContext<T, S>): number | boolean | Promise<number | boolean>;
}

/** Weighted, named reward components. */
export class Rubric<T extends Task = Task, S = unknown> {
  readonly components: RubricComponent<T, S>[];
  constructor(components: RubricComponent<T, S>[]) {
    const names = new Set<string>();
    for (const c of components) {
      if (names.has(c.name)) throw new Error(`Rubric: duplicate component "${c.name}"`);
      names.add(c.name);
    }
    this.components = components;
  }

  get weights(): Record<string, number> {
    return Object.fromEntries(this.components.map((c) => [c.name, c.weight ?? 1]));
  }

  async score(ctx: RewardContext<T, S>): Promise<RewardComponents> {
    const out: RewardComponents = {};
    const values = await Promise.all(this.components.map((c) => c.score(ctx)));
    this.components.forEach((c, i) => {
      const v = values[i];
      out[c.name] = typeof v === "boolean" ? (v ? 1 : 0) : (v as number);
    });
    return assertFiniteRewards(out, "Rubric");
  }
}

/** The final answer text: the last assistant message, its tool-call blocks removed (see `finalAnswerText`). */
export function lastAssistantText(messages: Message[]): string {
  return finalAnswerText(messages);
}
