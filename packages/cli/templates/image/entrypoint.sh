#!/bin/sh
# Start one benchmax env server. A fleet server is never open: without BENCHMAX_TOKEN it refuses to start.
# BENCHMAX_DRAIN_GRACE (seconds): how long the server (rollout API or MCP), on SIGTERM, serves its live rollouts at most
# while it refuses new ones (`--drain-grace`; default 30). exec keeps benchmax as PID 1, so the SIGTERM reaches it.
set -eu
if [ -z "${BENCHMAX_TOKEN:-}" ]; then
  echo "benchmax-entrypoint: BENCHMAX_TOKEN is required (a Kubernetes Secret / SkyPilot secret); refusing to serve without one" >&2
  exit 64
fi
if [ -n "${BENCHMAX_DRAIN_GRACE:-}" ]; then set -- --drain-grace "$BENCHMAX_DRAIN_GRACE" "$@"; fi
case "${BENCHMAX_MODE:-rollout}" in
  rollout) exec benchmax serve "$BENCHMAX_ENV" --host 0.0.0.0 --port "${BENCHMAX_PORT:-8000}" "$@" ;;
  mcp) exec benchmax serve "$BENCHMAX_ENV" --mcp --host 0.0.0.0 --port "${BENCHMAX_PORT:-8080}" "$@" ;;
  *) echo "benchmax-entrypoint: BENCHMAX_MODE must be rollout or mcp, got ${BENCHMAX_MODE}" >&2; exit 64 ;;
esac
