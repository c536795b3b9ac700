import { InfraError } from "./errors.js";

/** The openai SDK module (a type only: nothing is loaded until first use). */
export type OpenAIModule = typeof import("openai");

let sdk: Promise<OpenAIModule> | undefined;

/**
 * The openai SDK, loaded on first use: an optional peer dependency of @benchmax/core, needed only by the openai
 * policy and the LLM judge. Missing → InfraError (not retryable) naming the fix.
 */
export function loadOpenAI(): Promise<OpenAIModule> {
  sdk ??= import("openai").catch((e: unknown) => {
    sdk = undefined;
    throw new InfraError(
      `install openai to use the openai policy or an LLM judge (npm install openai@^6): ${e instanceof Error ? e.message : String(e)}`,
      { retryable: false, cause: e },
    );
  });
  return sdk;
}

/** Check up front that the openai SDK can be loaded; throws the InfraError "install openai to use …" if not. */
export async function ensureOpenAI(): Promise<void> {
  await loadOpenAI();
}
