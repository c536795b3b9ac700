#!/usr/bin/env bash
# One SkyRL GRPO run over several benchmax envs at once (default: math and excel).
#
#   examples/skyrl-mixed/run.sh [--dry-run] [extra SkyRL overrides key=value …]
#   BENCHMAX_ENV=math,excel,wikipedia examples/skyrl-mixed/run.sh
#
# Each env is exported to DATA_DIR/<env> (rows carry env_class=benchmax_<env>) and served on its own port; SkyRL
# trains on all the train.parquet files as one dataset, and the shim registers one env class per env, each routed
# to its own servers (BENCHMAX_ENV_CLASSES). Every setting is an environment variable (--help lists them); a fleet
# per env is BENCHMAX_ENV_CLASSES="benchmax_math=URL[,URL];benchmax_excel=URL"; DATASET_<ENV> picks a dataset.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

export BENCHMAX_ENV="${BENCHMAX_ENV:-math,excel}"
export DATA_DIR="${DATA_DIR:-$HOME/data/benchmax/mixed}"
export MODEL="${MODEL:-Qwen/Qwen2.5-3B-Instruct}"
# the largest needs of the envs: excel's turns and replies, its prompt (the workbook tools section)
export MAX_TURNS="${MAX_TURNS:-10}"
export MAX_PROMPT_LENGTH="${MAX_PROMPT_LENGTH:-8192}"
export MAX_GENERATE_LENGTH="${MAX_GENERATE_LENGTH:-2048}"
export N_SAMPLES="${N_SAMPLES:-5}"
export RUN_NAME="${RUN_NAME:-benchmax_mixed_grpo}"

launcher="${BENCHMAX_SKYRL_LAUNCHER:-$here/../../packages/skyrl/scripts/skyrl-launch.sh}"
if [ ! -f "$launcher" ]; then
  # installed from npm: the launcher ships in @benchmax/skyrl
  launcher="$(cd "$here" && node -p "require('path').join(require('path').dirname(require.resolve('@benchmax/skyrl/package.json')), 'scripts', 'skyrl-launch.sh')")"
fi
exec bash "$launcher" "$@"
