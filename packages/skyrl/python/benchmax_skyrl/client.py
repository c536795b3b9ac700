"""The HTTP client lives in `benchmax_client` (one client for SkyRL, the cookbook, TRL and verifiers)."""

from benchmax_client.transport import (  # noqa: F401
    TRANSIENT_STATUS,
    BenchmaxClient,
    BenchmaxEnvError,
    BenchmaxError,
    BenchmaxInfraError,
    Rollout,
)
