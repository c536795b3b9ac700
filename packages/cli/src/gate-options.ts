import type { CompareOptions } from "@benchmax/report";
import { DEFAULT_MAX_ERROR_RATE_INCREASE, type MismatchKind } from "@benchmax/report";
import type { Command } from "commander";
import { parseNumberFlag } from "./policy-options.js";

/** The regression gate's flags, shared by `compare` and `report --baseline` so both judge runs alike. */
export interface GateFlags {
  maxDrop: number;
  maxErrorRateIncrease: number;
  allowDifferentEnv?: boolean;
  allowDifferentDataset?: boolean;
  allowPartial?: boolean;
  allowDifferentConfig?: boolean;
}

/** The flag that accepts each kind of mismatch. */
export const OVERRIDE_FLAG: Record<MismatchKind, string> = {
  env: "--allow-different-env",
  dataset: "--allow-different-dataset",
  rollouts: "--allow-partial",
  config: "--allow-different-config",
};

export function addGateOptions(cmd: Command): Command {
  return cmd
    .option(
      "--max-drop <x>",
      "tolerated drop in mean reward, pass rate and each component",
      (v) => parseNumberFlag(v, "--max-drop", 0),
      0,
    )
    .option(
      "--max-error-rate-increase <x>",
      "tolerated rise in the share of env_error + infra_error rollouts (the default lets one transient error in 200 rollouts pass)",
      (v) => parseNumberFlag(v, "--max-error-rate-increase", 0, 1),
      DEFAULT_MAX_ERROR_RATE_INCREASE,
    )
    .option(OVERRIDE_FLAG.env, "compare runs of two different envs")
    .option(OVERRIDE_FLAG.dataset, "compare runs on different datasets (or --limit subsets)")
    .option(OVERRIDE_FLAG.rollouts, "compare runs with different rollout counts, or an interrupted or killed run")
    .option(
      OVERRIDE_FLAG.config,
      "compare runs with different sampling (temperature, top_p, max_tokens, seed, sampling args), max turns, tool format, group size or env options (another model, endpoint or checkpoint needs no flag)",
    );
}

export function gateOptions(flags: GateFlags): CompareOptions {
  return {
    maxDrop: flags.maxDrop,
    maxErrorRateIncrease: flags.maxErrorRateIncrease,
    allow: {
      env: flags.allowDifferentEnv,
      dataset: flags.allowDifferentDataset,
      rollouts: flags.allowPartial,
      config: flags.allowDifferentConfig,
    },
  };
}
