"""benchmax_client: a Python client for benchmax env servers (standard library only).

- `BenchmaxEnv(url, token)` / `AsyncBenchmaxEnv`: reset, step, call_tool, reward, fork, close.
- `BenchmaxClient`: the HTTP transport (keep-alive, retries, fleet failover, instance check) the SkyRL shim and the
  tinker-cookbook adapter (`benchmax_skyrl`) use too.
- Trainer adapters, importable without their trainer installed: `benchmax_client.trl` (GRPOTrainer's
  `environment_factory` and `rollout_func`), `benchmax_client.verifiers` (a verifiers MultiTurnEnv).
"""

from .env import AsyncBenchmaxEnv, BenchmaxEnv, openai_messages, openai_tool_calls, text_of
from .transport import (
    BenchmaxClient,
    BenchmaxEnvError,
    BenchmaxError,
    BenchmaxInfraError,
    BenchmaxRolloutLost,
    Rollout,
)

__all__ = [
    "AsyncBenchmaxEnv",
    "BenchmaxClient",
    "BenchmaxEnv",
    "BenchmaxEnvError",
    "BenchmaxError",
    "BenchmaxInfraError",
    "BenchmaxRolloutLost",
    "Rollout",
    "openai_messages",
    "openai_tool_calls",
    "text_of",
]

from ._version import __version__  # noqa: E402  (packages/skyrl/package.json, the one place it is set)
