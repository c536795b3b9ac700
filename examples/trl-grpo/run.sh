#!/usr/bin/env bash
# GRPO with TRL on a benchmax env: installs the benchmax-client package (packages/skyrl/python), serves the env,
# trains, and stops the server on every exit path.
#
#   examples/trl-grpo/run.sh            BENCHMAX_ENV=math PORT=8000 MODEL=Qwen/Qwen3-0.6B
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
BENCHMAX_ENV="${BENCHMAX_ENV:-math}"
PORT="${PORT:-8000}"
export BENCHMAX_TOKEN="${BENCHMAX_TOKEN:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}"
export BENCHMAX_URL="http://127.0.0.1:$PORT"
PYTHON="${PYTHON:-python3}"

# setuptools builds it (pyproject.toml; no dependencies). Offline, where setuptools and wheel are installed:
# PIP_NO_BUILD_ISOLATION=0 PIP_NO_INDEX=1 examples/trl-grpo/run.sh     (pip reads the 0 as "build without isolation")
"$PYTHON" -m pip install --no-deps "$root/packages/skyrl/python"

set -m
node "$root/packages/cli/bin/benchmax.js" serve "$BENCHMAX_ENV" --port "$PORT" --token "$BENCHMAX_TOKEN" &
server=$!
set +m
trap 'kill -TERM -- "-$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 120); do
  node -e "fetch(process.argv[1]+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" "$BENCHMAX_URL" && break
  kill -0 "$server" 2>/dev/null || { echo "benchmax serve exited" >&2; exit 1; }
  sleep 0.5
done
"$PYTHON" "$here/train.py"
