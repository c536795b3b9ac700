"""A verifiers v1 taskset over a benchmax env server: export `BenchmaxTaskset` from your taskset package.

    BENCHMAX_ENDPOINTS=http://127.0.0.1:8000 BENCHMAX_TOKEN=… uv run eval <your-taskset-id> …
    # or per run: --env.taskset.task.url http://127.0.0.1:8000 --env.taskset.task.max-turns 10

Each task is one of the server's tasks (prompt and system prompt read without a rollout); each rollout is one
episode on the server; the env's tools reach MCP-capable harnesses through `BenchmaxToolset`; the reward
`benchmax` is the env's. Needs verifiers (v1) and the benchmax-client wheel.
"""

from benchmax_client.verifiers import BenchmaxTaskset, load_taskset

__all__ = ["BenchmaxTaskset", "load_taskset"]
