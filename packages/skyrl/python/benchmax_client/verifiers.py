"""A benchmax env server as a verifiers environment (verifiers' v0 stack, `verifiers.legacy`: MultiTurnEnv).

    import verifiers as vf
    from benchmax_client.verifiers import load_environment
    env = load_environment("http://127.0.0.1:8000", token, max_turns=5)   # a vf.MultiTurnEnv
    results = env.evaluate(client, model, num_examples=5, rollouts_per_example=4)

Each rollout is one episode on the server (verifiers' rollout loop: `setup_state`, then turns of the model and
`env_response`, then the cleanup handlers, then the rubric):
- `setup_state` starts an episode on the row's `info.task_id` (or inline `info.task`);
- `env_response` sends the model's last message (text, or native `tool_calls`) to the server's episode engine and
  returns its tool messages; when the episode ends it sets `state["final_env_response"]` (verifiers' stop signal)
  and keeps the env's reward;
- a cleanup handler scores an episode that stopped early (max_turns, a timeout) on its conversation and releases it;
- the rubric's one function, `benchmax_reward`, returns the env's reward; its components are in
  `state["benchmax_rewards"]`.
The env's tools are the environment's `tool_defs`, so the model is offered them natively; the dataset holds the
server's tasks (`{prompt, info: {task_id}}`, no gold data). A failure talking to the server raises (never a 0).

`BenchmaxVerifiersMixin` holds all of that without importing verifiers; `load_environment` composes it with
`vf.MultiTurnEnv` (verifiers must be installed for that part only).
"""

import asyncio
from typing import Any, Dict, List, Optional

from .env import BenchmaxEnv, openai_messages, openai_tool_calls, task_prompts, text_of
from .transport import BenchmaxClient, BenchmaxError


def _plain(m: Any) -> Dict[str, Any]:
    """A message as a dict (verifiers keeps pydantic message objects in its state)."""
    if isinstance(m, dict):
        return m
    if hasattr(m, "model_dump"):
        return m.model_dump(exclude_none=True)
    return dict(vars(m))


class BenchmaxVerifiersMixin:
    """The benchmax side of a verifiers MultiTurnEnv; mix it in before the verifiers base class."""

    benchmax_client: BenchmaxClient

    async def setup_state(self, state: Any, **kwargs: Any) -> Any:
        info = state.get("info") or {}
        if isinstance(info, str):
            import json

            info = json.loads(info)
        task_id, task = info.get("task_id"), info.get("task")
        if task_id is None and task is None:
            raise BenchmaxError("the dataset row's info names no task (task_id or task)")
        env = BenchmaxEnv(client=self.benchmax_client)
        await asyncio.to_thread(env.start, task_id, task)
        state["benchmax_env"] = env
        state["benchmax_rollout_id"] = env.rollout.rollout_id if env.rollout else None
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> List[Dict[str, Any]]:
        env: BenchmaxEnv = state["benchmax_env"]
        last = _plain(messages[-1]) if messages else {}
        if last.get("role") != "assistant":
            raise BenchmaxError("env_response expects the model's message last, got %r" % last.get("role"))
        out = await asyncio.to_thread(env.step, text_of(last.get("content")), openai_tool_calls(last.get("tool_calls")))
        if out["done"]:
            state["benchmax_reward"] = float(out["reward"])
            state["benchmax_rewards"] = dict(out["info"].get("rewards") or {})
            state["final_env_response"] = []
            return []
        return [
            {k: v for k, v in m.items() if k in ("role", "content", "tool_call_id", "name")}
            for m in out["observation"].get("messages") or []
        ]

    async def benchmax_cleanup(self, state: Any, **kwargs: Any) -> None:
        """Score an episode that stopped before the env ended it (on prompt + completion), then release it."""
        env: Optional[BenchmaxEnv] = state.get("benchmax_env")
        if env is None:
            return
        try:
            if "benchmax_reward" not in state and not env.done and state.get("error") is None:
                convo = [_plain(m) for m in list(state.get("prompt") or []) + list(state.get("completion") or [])]
                out = await asyncio.to_thread(env.reward, openai_messages(convo))
                state["benchmax_reward"] = float(out["reward"])
                state["benchmax_rewards"] = dict(out.get("rewards") or {})
        finally:
            await asyncio.to_thread(env.release)

    # verifiers' @vf.cleanup marks (decorators.py): run after render_state (priority 100) has set the completion
    benchmax_cleanup.cleanup = True  # type: ignore[attr-defined]
    benchmax_cleanup.cleanup_priority = 0  # type: ignore[attr-defined]


async def benchmax_reward(state: Any, **kwargs: Any) -> float:
    """The rubric function: the env's reward for this rollout."""
    r = state.get("benchmax_reward")
    if r is None:
        raise BenchmaxError("this rollout has no env reward (its episode failed: %r)" % (state.get("error"),))
    return float(r)


def dataset_rows(client: BenchmaxClient, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """`[{prompt, info: {task_id}}]` from the server's tasks, the system prompt the env's own."""
    return [{"prompt": r["prompt"], "info": {"task_id": r["task_id"]}} for r in task_prompts(client, limit)]


def tool_defs(client: BenchmaxClient) -> List[Dict[str, Any]]:
    """The env's tools as verifiers' provider-agnostic tool definitions ({name, description, parameters})."""
    return [
        {"name": t["name"], "description": t.get("description") or "", "parameters": t.get("parameters") or {"type": "object"}}
        for t in client.metadata().get("tools") or []
    ]


def load_environment(url: Any = None, token: Optional[str] = None, max_turns: int = 10, limit: Optional[int] = None, **kwargs: Any) -> Any:
    """A `vf.MultiTurnEnv` over the benchmax server at `url` (verifiers' `load_environment` entry point)."""
    import verifiers as vf  # type: ignore

    client = BenchmaxClient(url, token=token)
    from datasets import Dataset  # type: ignore  (verifiers depends on it)

    cls = type("BenchmaxEnv", (BenchmaxVerifiersMixin, vf.MultiTurnEnv), {})
    env = cls(
        dataset=Dataset.from_list(dataset_rows(client, limit)),
        rubric=vf.Rubric(funcs=[benchmax_reward], weights=[1.0]),
        tool_defs=tool_defs(client),
        max_turns=max_turns,
        **kwargs,
    )
    env.benchmax_client = client
    return env


__all__ = ["BenchmaxVerifiersMixin", "benchmax_reward", "dataset_rows", "load_environment", "tool_defs"]
