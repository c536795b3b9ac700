"""benchmax_skyrl: train on benchmax env servers from SkyRL and the tinker cookbook (stdlib only).

`BenchmaxTextEnv` is a SkyRL `BaseTextEnv`, a thin client of a `benchmax serve` server's episode engine;
`benchmax_skyrl.cookbook` adapts an env to tinker-cookbook's `Env` / `EnvGroupBuilder` / `RLDataset`.
"""

from .client import BenchmaxClient, BenchmaxEnvError, BenchmaxError, BenchmaxInfraError, Rollout
from .cookbook import BenchmaxCookbookEnv, BenchmaxEnvGroupBuilder, BenchmaxRLDataset
from .routing import env_classes_from, register_env_classes
from .text_env import BenchmaxTextEnv

__all__ = [
    "BenchmaxClient",
    "BenchmaxCookbookEnv",
    "BenchmaxEnvError",
    "BenchmaxEnvGroupBuilder",
    "BenchmaxError",
    "BenchmaxInfraError",
    "BenchmaxRLDataset",
    "BenchmaxTextEnv",
    "Rollout",
    "env_classes_from",
    "register_env_classes",
]

from benchmax_client._version import __version__  # noqa: E402  (one version: benchmax-client's)
