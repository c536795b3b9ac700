#!/usr/bin/env bash
# GRPO training of a Qwen2.5 instruct model on @benchmax/env-crm with SkyRL: CRMArena-Pro tasks over a CRM database, scored per the task's metric.
#
#   envs/crm/skyrl/run.sh [--dry-run] [extra SkyRL overrides key=value …]
#
# Starts `benchmax serve crm` (or uses the fleet in BENCHMAX_ENDPOINTS), exports the tasks as SkyRL parquet
# with the Python shim, and launches SkyRL's trainer from SKYRL_DIR (a SkyRL checkout). Every setting is an
# environment variable (see --help); --dry-run prints the exact commands and exits 0.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

export BENCHMAX_ENV="${BENCHMAX_ENV:-crm}"
export MODEL="${MODEL:-Qwen/Qwen2.5-3B-Instruct}"
export MAX_TURNS="${MAX_TURNS:-8}"
export MAX_PROMPT_LENGTH="${MAX_PROMPT_LENGTH:-8192}"
export MAX_GENERATE_LENGTH="${MAX_GENERATE_LENGTH:-1024}"
export N_SAMPLES="${N_SAMPLES:-5}"
# CRMArena's own action syntax (<execute>…</execute>) ends a reply as a tool call does
export STOP_STRINGS="${STOP_STRINGS-[\"</tool_call>\", \"</execute>\"]}"
export RUN_NAME="${RUN_NAME:-benchmax_crm_grpo}"

launcher="${BENCHMAX_SKYRL_LAUNCHER:-$here/../../../packages/skyrl/scripts/skyrl-launch.sh}"
if [ ! -f "$launcher" ]; then
  # installed from npm: the launcher ships in @benchmax/skyrl
  launcher="$(cd "$here" && node -p "require('path').join(require('path').dirname(require.resolve('@benchmax/skyrl/package.json')), 'scripts', 'skyrl-launch.sh')")"
fi
exec bash "$launcher" "$@"
