"""SkyRL entry module: registers BenchmaxTextEnv and runs SkyRL's PPO/GRPO trainer.

    BENCHMAX_ENDPOINTS=http://127.0.0.1:8000 uv run --isolated --extra fsdp -m benchmax_skyrl.entrypoint \\
        data.train_data="['DIR/train.parquet']" environment.env_class=benchmax ...

The env ids registered: every class of BENCHMAX_ENV_CLASSES ("cls=url[,url];cls2=url", a mixed-env run, each class
routed to its own servers), else BENCHMAX_ENV_CLASS (default "benchmax") on BENCHMAX_ENDPOINTS. BENCHMAX_* settings
are handed to the Ray task that builds the envs.
"""

import os
import sys

from .routing import env_classes_from, register_env_classes


def _settings():
    return {k: v for k, v in os.environ.items() if k.startswith("BENCHMAX_")}


def main(argv=None) -> None:
    import ray  # type: ignore
    from skyrl_gym.envs import register  # type: ignore

    try:
        from skyrl.train.config import SkyRLTrainConfig  # type: ignore
        from skyrl.train.entrypoints.main_base import BasePPOExp, validate_cfg  # type: ignore
        from skyrl.train.utils import initialize_ray  # type: ignore
    except ImportError as e:  # pragma: no cover - depends on the SkyRL version
        raise SystemExit("benchmax_skyrl: this SkyRL has no skyrl.train entrypoints (%s); update SkyRL" % e)

    classes = env_classes_from()  # fails here, before Ray starts, on a malformed BENCHMAX_ENV_CLASSES

    @ray.remote(num_cpus=1)
    def skyrl_entrypoint(cfg, settings):
        os.environ.update(settings)
        register_env_classes(register, classes)
        BasePPOExp(cfg).run()

    cfg = SkyRLTrainConfig.from_cli_overrides(list(sys.argv[1:] if argv is None else argv))
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(skyrl_entrypoint.remote(cfg, _settings()))


if __name__ == "__main__":
    main()
