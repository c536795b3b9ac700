#!/usr/bin/env bash
# GRPO with TRL on a benchmax env: builds the benchmax-client wheel, installs it, serves the env, trains, and stops
# the server on every exit path.
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

wheels="$(mktemp -d)"
"$PYTHON" "$root/packages/skyrl/python/build_wheel.py" --out "$wheels" --package benchmax_client
"$PYTHON" -m pip install --no-index "$wheels"/benchmax_client-*.whl

set -m
node "$root/packages/cli/bin/benchmax.js" serve "$BENCHMAX_ENV" --port "$PORT" --token "$BENCHMAX_TOKEN" &
server=$!
set +m
trap 'kill -TERM -- "-$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$wheels"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 120); do
  node -e "fetch(process.argv[1]+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" "$BENCHMAX_URL" && break
  kill -0 "$server" 2>/dev/null || { echo "benchmax serve exited" >&2; exit 1; }
  sleep 0.5
done
"$PYTHON" "$here/train.py"
