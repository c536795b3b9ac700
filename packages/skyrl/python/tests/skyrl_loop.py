"""A faithful copy of SkyRL's calling sequence for a text env, without SkyRL (CI cannot install it).

Read from NovaSky-AI/SkyRL @ a9564572eb8e91076be43c1bd5e4615e3de17265 (no code copied):
- skyrl-gym/skyrl_gym/envs/registration.py `register(id, entry_point, kwargs)` / `make(id, **kwargs)`: the spec's
  kwargs are deep-copied and updated with make's kwargs, then the entry point "module:Class" is called with them.
- skyrl/train/dataset/dataset.py L86-94: a row's `prompt` and `env_class` are popped; every other column is
  `env_extras`.
- skyrl/train/generators/skyrl_gym_generator.py `agent_loop` L333-521: `env_extras["max_turns"] = max_turns`;
  `env_config = getattr(skyrl_gym_cfg, env_class, dict())`; `env = make(env_class, env_config=env_config,
  extras=env_extras)`; `chat_history, _ = env.init(deepcopy(prompt))`; while not done: generate, then
  `env.step(output)` reading observations / reward / done / postprocessed_action; then `env.get_metrics()` and
  `env.close()` — on the success path only (the `finally` of L605 only finishes the inference session).
  `generate` (L811-870) runs every trajectory's agent_loop concurrently and gathers without return_exceptions, and
  env calls go through a ThreadPoolExecutor of `environment.skyrl_gym.max_env_workers` (L226-231).
"""

import asyncio
import copy
import importlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List

REGISTRY: Dict[str, Dict[str, Any]] = {}


def register(id: str, entry_point: str, kwargs: Dict[str, Any] = None) -> None:
    assert entry_point is not None, "`entry_point` must be provided"
    REGISTRY[id] = {"entry_point": entry_point, "kwargs": dict(kwargs or {})}


def make(id: str, **kwargs: Any):
    spec = REGISTRY[id]
    merged = copy.deepcopy(spec["kwargs"])
    merged.update(kwargs)
    module, _, name = spec["entry_point"].partition(":")
    return getattr(importlib.import_module(module), name)(**merged)


def row_to_input(row: Dict[str, Any]):
    """PromptDataset.__getitem__: (prompt, env_class, env_extras)."""
    row = dict(row)
    prompt = row.pop("prompt")
    env_class = row.pop("env_class", None)
    return prompt, env_class, {k: v for k, v in row.items()}


class SkyrlGymCfg:
    """environment.skyrl_gym: `max_env_workers` and per-env-class configs read with getattr."""

    def __init__(self, max_env_workers: int = 32, **per_class: Dict[str, Any]):
        self.max_env_workers = max_env_workers
        for k, v in per_class.items():
            setattr(self, k, v)


class Generator:
    """The non-batched multi-turn path of SkyRLGymGenerator, with `policy(chat_history) -> str` as the LLM."""

    def __init__(self, skyrl_gym_cfg: SkyrlGymCfg, max_turns: int, policy: Callable[[List[Dict[str, Any]]], str]):
        self.cfg = skyrl_gym_cfg
        self.max_turns = max_turns
        self.policy = policy
        self.executor = ThreadPoolExecutor(max_workers=skyrl_gym_cfg.max_env_workers) if skyrl_gym_cfg.max_env_workers > 0 else None
        self.envs: List[Any] = []

    async def _run(self, fn, *args):
        if self.executor is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def agent_loop(self, prompt, env_class, env_extras) -> Dict[str, Any]:
        env_extras["max_turns"] = self.max_turns
        env_config = getattr(self.cfg, env_class, dict())
        env = make(env_class, env_config=env_config, extras=env_extras)
        self.envs.append(env)
        chat_history = copy.deepcopy(prompt)
        chat_history, _ = await self._run(env.init, chat_history)
        done = False
        rewards: List[float] = []
        turns = 0
        while not done:
            output = self.policy(chat_history)
            out = await self._run(env.step, output)
            new_obs, reward, done = out["observations"], out["reward"], out["done"]
            if out.get("postprocessed_action", None) is not None:
                output = out["postprocessed_action"]
            rewards.append(reward)
            turns += 1
            chat_history = chat_history + [{"role": "assistant", "content": output}] + list(new_obs)
        env_metrics = env.get_metrics()
        await self._run(env.close)
        return {"reward": rewards[-1], "step_rewards": rewards, "turns": turns, "env_metrics": env_metrics, "chat": chat_history}

    async def generate(self, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        tasks = [self.agent_loop(*row_to_input(r)) for r in rows]
        return list(await asyncio.gather(*tasks))

    def close(self):
        if self.executor is not None:
            self.executor.shutdown(wait=True)
