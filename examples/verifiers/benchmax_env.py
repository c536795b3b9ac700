"""A verifiers environment module over a benchmax env server (verifiers' `load_environment` convention).

    vf-eval benchmax_env -a '{"url": "http://127.0.0.1:8000", "token": "...", "max_turns": 5}' -m gpt-4.1-mini

Each rollout is one episode on the server; the env's tools are offered natively (tool_defs); the reward is the
env's. Needs verifiers and the benchmax-client wheel.
"""

import os

from benchmax_client.verifiers import load_environment as _load


def load_environment(url: str = "", token: str = "", max_turns: int = 10, limit: int = 0, **kwargs):
    return _load(
        url or os.environ.get("BENCHMAX_URL", "http://127.0.0.1:8000"),
        token or os.environ.get("BENCHMAX_TOKEN"),
        max_turns=max_turns,
        limit=limit or None,
        **kwargs,
    )
