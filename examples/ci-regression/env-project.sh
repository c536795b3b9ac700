#!/usr/bin/env bash
# The CI steps for YOUR env project (user-project-audit.yml runs this): benchmax installed from npm, no monorepo build.
#   1. audit   — adversarial policies and gold-leak scans, in process, over HTTP and over MCP (exit 1 on a finding)
#   2. eval    — the env's reference policy over its fixtures, into a candidate run dir
#   3. compare — the candidate against the stored baseline run (exit 1 on a regression)
#   4. rescore — the baseline's stored rollouts re-scored with the current reward code (no model, no tools)
#   5. compare — the baseline against its re-scored copy: what the reward change did, task by task (exit 1 on a drop)
# Usage (the project root): bash env-project.sh [ENV] [BASELINE_DIR] [RUNS_DIR]
#   ENV           the env: "." (this package), a path, or an installed env's name ("math"); default "."
#   BASELINE_DIR  a run dir made once with `npx benchmax eval ENV --out BASELINE_DIR` and committed
#   RUNS_DIR      where the new runs go (default runs/ci; replaced)
# MAX_DROP (default 0.02) is the tolerance of both gates. Each step's time is printed, then the total.
set -euo pipefail
env="${1:-.}"
base="${2:-benchmarks/baseline}"
runs="${3:-runs/ci}"
max_drop="${MAX_DROP:-0.02}"
[ -f "$base/results.jsonl" ] || {
  echo "env-project.sh: no baseline run in $base (make one: npx benchmax eval $env --out $base)" >&2
  exit 2
}
rm -rf "$runs"
mkdir -p "$runs"
total_start=$(date +%s)
step() {
  local name=$1
  shift
  local s
  s=$(date +%s)
  echo "::group::$name"
  "$@"
  echo "::endgroup::"
  echo "$name: $(($(date +%s) - s)) s"
}
step audit npx benchmax audit "$env"
step eval npx benchmax eval "$env" --out "$runs/candidate" --quiet
step compare npx benchmax compare "$base" "$runs/candidate" --max-drop "$max_drop"
step rescore npx benchmax rescore "$base" --env "$env" --out "$runs/rescored"
step compare-rescored npx benchmax compare "$base" "$runs/rescored" --max-drop "$max_drop"
echo "env-project CI steps: $(($(date +%s) - total_start)) s (audit + eval + compare + rescore + compare)"
