"""BenchmaxTextEnv: a SkyRL text env that is a thin client of a benchmax env server.

The episode loop (tool-call parsing, running tools, turn limit, reward) lives in the server's episode engine: each
`step` sends the model's reply to `POST /v1/rollouts/<id>/step` and hands SkyRL what its generator reads.
"""

import json
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

from benchmax_client.env import text_of
from benchmax_client.transport import BenchmaxRolloutLost

from .client import BenchmaxClient, BenchmaxError, BenchmaxInfraError, Rollout

logger = logging.getLogger("benchmax_skyrl")

try:  # the real base class when SkyRL is installed
    from skyrl_gym.envs.base_text_env import BaseTextEnv  # type: ignore
except Exception:  # pragma: no cover - exercised where SkyRL is absent

    class BaseTextEnv:  # type: ignore[no-redef]
        """Stand-in with SkyRL's BaseTextEnv surface (skyrl-gym skyrl_gym/envs/base_text_env.py L17-90:
        init / step / close / get_metrics, `turns` and `max_turns`), for use without SkyRL."""

        def __init__(self):
            self.turns = 0
            self.max_turns = 1

        def init(self, prompt):
            return prompt, {}

        def step(self, action):
            raise NotImplementedError

        def close(self):
            pass

        def get_metrics(self):
            return {}


HAS_SKYRL = BaseTextEnv.__module__.startswith("skyrl_gym")


def _cfg(obj: Any) -> Dict[str, Any]:
    """A plain dict from a dict, an OmegaConf DictConfig, or None."""
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    try:
        return {k: obj[k] for k in obj.keys()}  # DictConfig and other mappings
    except Exception:
        return {}


def observations_of(results: List[str], role: str) -> List[Dict[str, str]]:
    """Tool results as the next observation: one user turn of <tool_response> blocks (as Qwen2.5's chat template
    renders tool results), or one `tool` message per result."""
    if not results:
        return []
    if role == "tool":
        return [{"role": "tool", "content": t} for t in results]
    return [{"role": "user", "content": "\n".join("<tool_response>\n%s\n</tool_response>" % t for t in results)}]


class BenchmaxTextEnv(BaseTextEnv):
    """SkyRL `BaseTextEnv` over a `benchmax serve` server.

    Built by `skyrl_gym.make(env_class, env_config=..., extras=...)` (skyrl_gym_generator.py L333-337): `extras` is
    the dataset row without `prompt` / `env_class` (skyrl/train/dataset/dataset.py L86-94) plus `max_turns`;
    `extra_info.task_id` names the task and `extra_info.task` may carry it inline. `env_config` (the
    `environment.skyrl_gym.<env_class>` config), the registration kwargs, or the environment give `endpoints`
    (BENCHMAX_ENDPOINTS), `token` (BENCHMAX_TOKEN), `retries`, `timeout_s`, `observation_role`, `on_lost`,
    `hang_after_s` (BENCHMAX_HANG_AFTER_S) and `migrate_timeout_s` (BENCHMAX_MIGRATE_TIMEOUT_S).

    `step(action)` sends the reply to the server, which parses every tool call, runs them and answers with the
    results, or — a reply without a tool call, or the `max_turns`-th reply — ends the episode with the reward.
    A failure is retried, then raised (BenchmaxInfraError / BenchmaxEnvError), never turned into a reward of 0;
    on a failure the rollout is released at once, since SkyRL's generator only calls `close()` on success.

    A lost server costs nothing: the client migrates the rollout to a live server (benchmax_client.transport). A
    rollout that cannot be migrated (no live server left, or a nondeterministic tool's replay differs) has no
    failed-sample path in SkyRL (@ a9564572: `generate` gathers every `agent_loop` with no exception handling,
    skyrl_gym_generator.py L857, and `agent_loop` calls `env.step` with none, L447), so raising would fail the whole
    generation step. With `on_lost: "end"` (the default) the episode ends there with reward 0.0, marked: metadata
    `lost: True`, `get_metrics()["lost_rollouts"] == 1` (SkyRL logs env metrics per env class) and a warning logged.
    `on_lost: "raise"` (or BENCHMAX_ON_LOST=raise) raises instead.
    """

    def __init__(
        self,
        env_config: Any = None,
        extras: Any = None,
        client: Optional[BenchmaxClient] = None,
        endpoints: Any = None,
        token: Optional[str] = None,
    ):
        super().__init__()
        cfg = _cfg(env_config)
        ex = _cfg(extras)
        info = _cfg(ex.get("extra_info"))
        self.max_turns = int(ex.get("max_turns") or cfg.get("max_turns") or os.environ.get("BENCHMAX_MAX_TURNS") or 10)
        self.turns = 0
        self.task_id: Optional[str] = info.get("task_id") or ex.get("task_id")
        task = info.get("task")
        if isinstance(task, str) and task:
            try:
                task = json.loads(task)
            except ValueError:
                task = None
        self.task: Optional[Dict[str, Any]] = task if isinstance(task, dict) else None
        # SkyRL's global step, when the caller put it in the extras (or BENCHMAX_TRAINER_STEP): tags the recording
        step = ex.get("trainer_step", info.get("trainer_step", ex.get("global_step", os.environ.get("BENCHMAX_TRAINER_STEP"))))
        try:
            self.trainer_step: Optional[int] = int(step) if step is not None and str(step).strip() != "" else None
        except (TypeError, ValueError):
            self.trainer_step = None
        self.observation_role = str(cfg.get("observation_role") or os.environ.get("BENCHMAX_OBSERVATION_ROLE") or "user")
        self._own_client = client is None
        self.client = client or BenchmaxClient(
            cfg.get("endpoints") or endpoints,
            token=cfg.get("token") or token,
            retries=int(cfg.get("retries", os.environ.get("BENCHMAX_RETRIES", 3))),
            timeout_s=float(cfg.get("timeout_s", os.environ.get("BENCHMAX_TIMEOUT_S", 120))),
            hang_after_s=float(cfg["hang_after_s"]) if cfg.get("hang_after_s") is not None else None,
            migrate_timeout_s=float(cfg.get("migrate_timeout_s", os.environ.get("BENCHMAX_MIGRATE_TIMEOUT_S", 30))),
        )
        self.rollout: Optional[Rollout] = None
        self.messages: List[Dict[str, Any]] = []
        self.done = False
        self.final: Optional[Dict[str, Any]] = None
        self.counts = {
            "tool_calls": 0,
            "tool_errors": 0,
            "parse_errors": 0,
            "infra_errors": 0,
            "env_errors": 0,
            "lost_rollouts": 0,
        }
        self.on_lost = str(cfg.get("on_lost") or os.environ.get("BENCHMAX_ON_LOST") or "end")
        if self.on_lost not in ("end", "raise"):
            raise ValueError("on_lost must be 'end' or 'raise', got %r" % (self.on_lost,))

    # -- SkyRL interface ---------------------------------------------------------------------------------
    def init(self, prompt: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        if self.task_id is None and self.task is None:
            raise BenchmaxError("no task: the row's extra_info needs task_id (benchmax export skyrl writes it)")
        self.messages = [dict(m) for m in prompt]
        try:
            self.rollout = self._guard(lambda: self.client.create_rollout(self.task_id, self.task, self.max_turns, trainer_step=self.trainer_step))
        except BenchmaxRolloutLost as e:
            if self.on_lost == "raise":
                self.close()
                raise
            self._init_lost: Optional[BaseException] = e  # the first step ends the episode, lost and counted
            return prompt, {"rollout_id": None, "task_id": self.task_id, "lost": True}
        except BaseException:
            self.close()  # SkyRL will not call close() after a failed init
            raise
        return prompt, {"rollout_id": self.rollout.rollout_id, "task_id": self.rollout.task_id}

    def attach(self, rollout: Rollout, prompt: List[Dict[str, Any]]) -> None:
        """Use a rollout created elsewhere (a fork of a group)."""
        self.rollout = rollout
        self.messages = [dict(m) for m in prompt]

    def step(self, action: str) -> Dict[str, Any]:
        """BaseTextEnvStepOutput (base_text_env.py L9-14): observations, reward, done, metadata, postprocessed_action."""
        lost_at_init = getattr(self, "_init_lost", None)
        if lost_at_init is not None and not self.done:
            self.turns += 1
            return self._lost(lost_at_init)
        if self.rollout is None:
            raise BenchmaxError("step() before init()")
        if self.done:
            raise BenchmaxError("step() after the episode ended")
        self.turns += 1
        try:
            out = self.step_raw(action)
        except BenchmaxRolloutLost as e:
            if self.on_lost == "raise":
                self.close()
                raise
            return self._lost(e)
        except BaseException:
            # SkyRL calls close() only after a finished episode (skyrl_gym_generator.py L518-521, not in the
            # `finally` of L605): free the rollout now so it does not wait for the server's idle expiry
            self.close()
            raise
        if out["done"]:
            return {
                "observations": [],
                "reward": out["reward"],
                "done": True,
                "metadata": out["metadata"],
                "postprocessed_action": None,
            }
        return {
            "observations": observations_of(out["results"], self.observation_role),
            "reward": 0.0,
            "done": False,
            "metadata": {"turn": self.turns, "tool_calls": len(out["results"])},
            "postprocessed_action": None,
        }

    def _lost(self, e: BaseException) -> Dict[str, Any]:
        """End an episode that could not be migrated: reward 0.0, marked and counted (SkyRL has no failed-sample
        path; see the class docstring)."""
        self.counts["lost_rollouts"] += 1
        logger.warning(
            "benchmax: rollout %s of task %s lost and not migrated; ended with reward 0.0, counted in lost_rollouts: %s",
            self.rollout.rollout_id if self.rollout else "?",
            self.task_id,
            e,
        )
        self.release_quietly()
        self.done = True
        self.final = {"reward": 0.0, "rewards": {}, "passed": None, "lost": True}
        return {
            "observations": [],
            "reward": 0.0,
            "done": True,
            "metadata": {"lost": True, "error": str(e), "task_id": self.task_id},
            "postprocessed_action": None,
        }

    def get_metrics(self) -> Dict[str, Any]:
        out: Dict[str, Any] = dict(self.counts)
        out["retries"] = self.client.stats["retries"]
        out["migrations"] = self.rollout.migrations if self.rollout is not None else 0
        out["turns"] = self.turns
        if self.final is not None:
            out["reward"] = self.final.get("reward")
            for k, v in (self.final.get("rewards") or {}).items():
                out["reward/" + k] = v
        return out

    def close(self) -> None:
        self.release_quietly()
        if self._own_client:
            self.client.close()

    # -- the turn, shared with the cookbook adapter ---------------------------------------------------------
    def step_raw(self, content: Optional[str], tool_calls: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """One turn on the server: {done, reward, results (tool result texts), metadata}. `self.turns` is the turn
        just taken (the caller counts it)."""
        msg: Dict[str, Any] = {"role": "assistant", "content": content or ""}
        if tool_calls:
            msg["tool_calls"] = tool_calls
        self.messages.append(msg)
        res = self._guard(lambda: self.client.step(self.rollout, content, tool_calls))
        obs = res.get("observation") or {}
        if res.get("done"):
            return self._finished(res.get("reward"), obs.get("rewards"), obs.get("passed"), obs.get("truncated") or False)
        results: List[str] = []
        for item in obs.get("tool_results") or []:
            results.append(text_of(item.get("result")))
            if item.get("tool_name") is None and item.get("error"):
                self.counts["parse_errors"] += 1
            else:
                self.counts["tool_calls"] += 1
            if item.get("error"):
                self.counts["tool_errors"] += 1
        self.messages.extend(obs.get("messages") or [])
        if self.turns >= self.max_turns and self.rollout.max_turns is None:
            # a server without a turn limit ran this reply's tools: score the conversation here, as SkyRL's
            # BaseTextEnv ends at max_turns (multiply env: done = turns >= max_turns)
            out = self._guard(lambda: self.client.reward(self.rollout, self.messages))
            self.client.release(self.rollout)
            return self._finished(out.get("reward"), out.get("rewards"), out.get("passed"), True)
        return {"done": False, "reward": 0.0, "results": results, "metadata": {}}

    def release_quietly(self) -> None:
        if self.rollout is not None and not self.done:
            self.done = True
            self.client.release_quietly(self.rollout)

    # -- internals ---------------------------------------------------------------------------------------
    def _finished(self, reward: Any, rewards: Any, passed: Any, truncated: Any) -> Dict[str, Any]:
        """`truncated`: False, True, or what ended the episode ("max_turns", "max_tokens", "deadline")."""
        if not isinstance(reward, (int, float)) or isinstance(reward, bool):
            self.counts["env_errors"] += 1
            raise BenchmaxError("the env server ended the episode without a numeric reward: %r" % (reward,))
        self.final = {"reward": float(reward), "rewards": dict(rewards or {}), "passed": passed}
        self.done = True
        return {
            "done": True,
            "reward": float(reward),
            "results": [],
            "metadata": {
                "rewards": dict(rewards or {}),
                "passed": passed,
                "truncated": bool(truncated),
                "truncated_by": (truncated if isinstance(truncated, str) else "max_turns") if truncated else None,
                "task_id": self.rollout.task_id,
                "rollout_id": self.rollout.rollout_id,
            },
        }

    def _guard(self, fn):
        try:
            return fn()
        except BenchmaxInfraError:
            self.counts["infra_errors"] += 1
            raise
        except BenchmaxError:
            self.counts["env_errors"] += 1
            raise
