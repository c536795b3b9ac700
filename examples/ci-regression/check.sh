#!/usr/bin/env bash
# The CI gate, locally: eval the candidate, compare with the stored baseline, write the report.
# Usage (repo root, after `npm run setup`): bash examples/ci-regression/check.sh [MAX_DROP]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
base="$here/baseline/math"
cand="${CANDIDATE_DIR:-runs/candidate/math}"
rm -rf "$cand"
npx benchmax eval math --limit 12 --out "$cand" --quiet
status=0
npx benchmax compare "$base" "$cand" --max-drop "${1:-0.02}" || status=$?
npx benchmax report "$cand" --baseline "$base" --max-drop "${1:-0.02}"
exit "$status"
