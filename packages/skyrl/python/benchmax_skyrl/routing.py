"""Mixed-env runs: one SkyRL env class per benchmax env, each routed to its own env servers.

SkyRL reads `env_class` per dataset row (skyrl/train/dataset/dataset.py L86-94) and builds each trajectory's env
with `skyrl_gym.make(env_class, env_config=..., extras=...)` (skyrl_gym_generator.py L336-337); `make` merges the
registration's `kwargs` with its own (skyrl_gym/envs/registration.py `make`, "Update the env spec kwargs"). So each
class is registered with its endpoints as a registration kwarg.
"""

import os
from typing import Callable, Dict, List, Optional

ENTRY_POINT = "benchmax_skyrl.text_env:BenchmaxTextEnv"


def env_classes_from(spec: Optional[str] = None, environ: Optional[Dict[str, str]] = None) -> Dict[str, List[str]]:
    """`BENCHMAX_ENV_CLASSES="benchmax_math=http://h:8000,http://h:8001;benchmax_excel=http://h:8100"` → {class:
    [endpoints]}. Without it: {BENCHMAX_ENV_CLASS (default "benchmax"): BENCHMAX_ENDPOINTS}."""
    env = os.environ if environ is None else environ
    spec = spec if spec is not None else env.get("BENCHMAX_ENV_CLASSES", "")
    out: Dict[str, List[str]] = {}
    if spec.strip():
        for part in spec.split(";"):
            part = part.strip()
            if not part:
                continue
            name, sep, urls = part.partition("=")
            name = name.strip()
            endpoints = [u.strip() for u in urls.split(",") if u.strip()]
            if not sep or not name or not endpoints:
                raise ValueError(
                    "BENCHMAX_ENV_CLASSES: %r must be env_class=http://host:port[,http://host2:port]" % part
                )
            if name in out:
                raise ValueError("BENCHMAX_ENV_CLASSES names %s twice" % name)
            for u in endpoints:
                if not u.startswith(("http://", "https://")):
                    raise ValueError("BENCHMAX_ENV_CLASSES: endpoint %r of %s must be an http(s) URL" % (u, name))
            out[name] = endpoints
        return out
    name = env.get("BENCHMAX_ENV_CLASS", "benchmax")
    endpoints = [u.strip() for u in (env.get("BENCHMAX_ENDPOINTS") or "").split(",") if u.strip()]
    out[name] = endpoints  # empty: BenchmaxTextEnv reads BENCHMAX_ENDPOINTS itself and names what is missing
    return out


def register_env_classes(register: Callable[..., None], classes: Dict[str, List[str]]) -> List[str]:
    """Register each class with `register(id=..., entry_point=..., kwargs={"endpoints": [...]})` (skyrl_gym's)."""
    for name, endpoints in classes.items():
        kwargs = {"endpoints": list(endpoints)} if endpoints else {}
        register(id=name, entry_point=ENTRY_POINT, kwargs=kwargs)
    return list(classes)
