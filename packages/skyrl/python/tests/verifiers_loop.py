"""verifiers' MultiTurnEnv rollout loop, step by step, without verifiers' dependencies (written by us; no code copied).

Read from PrimeIntellect-ai/verifiers @ a60a606ecc4d309247edf9ff92c3eabca362781f (the v0 stack, verifiers/legacy):
- envs/environment.py: __init__ L256-257 discovers @stop conditions and @cleanup handlers (decorators.py
  discover_decorated: by priority, then name); init_state L540-600 (prompt, info, trajectory [],
  final_env_response None, error None); is_completed L660-666 (first stop condition that fires); cleanup L614-629
  (every handler, called with the named args it takes); _run_group_states L691-722: gather the group's rollouts,
  then the rubric scores them, then rubric cleanup.
- envs/multiturn_env.py: rollout L167-224: setup_state; while not is_completed: get_prompt_messages (from the 2nd
  turn: the last prompt + completion + `env_response(messages, state)`), `continue` when final_env_response is set,
  get_model_response, add_model_response (a TrajectoryStep); finally cleanup (render_state at priority 100 renders
  state["completion"] first). Stop conditions: has_error, prompt_too_long, max_turns_reached (len(trajectory) >=
  max_turns), max_total_completion_tokens_reached, has_final_env_response.

`VERIFIERS_CHECKOUT=<a verifiers checkout>` makes `MultiTurnEnvStandIn` use verifiers' own `rollout`,
`get_prompt_messages`, `render_completion`, `render_state`, `add_trajectory_step`, `add_model_response`, stop
conditions, `is_completed`, `_render_stop`, `cleanup` and decorators from that checkout's source (exec'd with
shims for the pydantic message types and response parsing), so the same tests run the library's loop code.
"""

import ast
import asyncio
import inspect
import os
import textwrap
import time
import typing
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, Dict, List


class VfError(Exception):
    pass


class OverlongPromptError(VfError):
    pass


async def maybe_call_with_named_args(fn: Callable[..., Any], **kwargs: Any) -> Any:
    params = inspect.signature(fn).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    out = fn(**kwargs)
    return await out if inspect.isawaitable(out) else out


def _decorators() -> ModuleType:
    checkout = os.environ.get("VERIFIERS_CHECKOUT")
    mod = ModuleType("decorators")
    if checkout:
        with open(os.path.join(checkout, "verifiers", "legacy", "decorators.py"), encoding="utf-8") as f:
            exec(compile(f.read(), "verifiers/legacy/decorators.py", "exec"), mod.__dict__)
        return mod

    def mark(attr: str):
        def deco(func=None, priority: int = 0):
            def apply(f):
                setattr(f, attr, True)
                setattr(f, attr + "_priority", priority)
                return f

            return apply if func is None else apply(func)

        return deco

    def discover_decorated(obj: Any, attr: str) -> list:
        ms = [m for _, m in inspect.getmembers(obj, predicate=inspect.ismethod) if hasattr(m, attr)]
        ms.sort(key=lambda m: (-getattr(m, attr + "_priority", 0), m.__name__))
        return ms

    mod.stop, mod.cleanup, mod.discover_decorated = mark("stop"), mark("cleanup"), discover_decorated
    return mod


DEC = _decorators()


class MultiTurnEnvStandIn:
    """verifiers.legacy MultiTurnEnv as the rollout loop sees it; `client(prompt_messages, tool_defs)` is the model."""

    source = "replica"

    def __init__(self, max_turns: int = -1, tool_defs=None, rubric_funcs=(), timeout_seconds=None, **_kw: Any):
        self.max_turns = max_turns
        self.max_total_completion_tokens = -1
        self.max_seq_len = None
        self.timeout_seconds = timeout_seconds
        self.tool_defs = tool_defs or []
        self.rubric_funcs = list(rubric_funcs)
        self._stop_conditions = DEC.discover_decorated(self, "stop")
        self._cleanup_handlers = DEC.discover_decorated(self, "cleanup")

    async def init_state(self, input, client, model, sampling_args=None):
        state: Dict[str, Any] = {"input": dict(input), "info": dict(input.get("info") or {})}
        state["prompt"] = [dict(m) for m in input["prompt"]]
        state.update(client=client, model=model, sampling_args=sampling_args, is_completed=False, is_truncated=False)
        state["tool_defs"] = list(self.tool_defs)
        state.update(trajectory=[], completion=None, trajectory_id="t", reward=None, metrics=None, error=None, final_env_response=None)
        span = lambda: SimpleNamespace(start=0.0, end=0.0, spans=[])  # noqa: E731
        state["timing"] = SimpleNamespace(generation=span(), setup=span(), env=span(), model=span(), scoring=span())
        return state

    async def get_model_response(self, state, prompt_messages):
        msg = await state["client"](prompt_messages, state["tool_defs"])
        return SimpleNamespace(message=SimpleNamespace(is_truncated=False, **msg))

    def get_state_usage(self, state):
        return None

    # -- replicas of verifiers' loop (replaced by verifiers' own source under VERIFIERS_CHECKOUT) ---------------
    @DEC.stop(priority=100)
    async def has_error(self, state, **kwargs):
        return state.get("error") is not None

    @DEC.stop
    async def max_turns_reached(self, state):
        return len(state["trajectory"]) >= self.max_turns and self.max_turns > 0

    @DEC.stop
    async def has_final_env_response(self, state):
        return state.get("final_env_response") is not None

    async def is_completed(self, state, **kwargs):
        for condition in self._stop_conditions:
            if await maybe_call_with_named_args(condition, state=state, env=self, **kwargs):
                state["is_completed"] = True
                state["stop_condition"] = condition.__name__
                return True
        return False

    async def get_prompt_messages(self, state):
        if not state["trajectory"]:
            return state["prompt"]
        messages = state["trajectory"][-1]["prompt"] + state["trajectory"][-1]["completion"]
        return messages + list(await self.env_response(messages, state))

    @DEC.cleanup(priority=100)
    async def render_state(self, state):
        if not state["trajectory"]:
            state["completion"] = []
            return
        full = state["trajectory"][-1]["prompt"] + state["trajectory"][-1]["completion"] + list(state.get("final_env_response") or [])
        state["completion"] = full[len(state["prompt"]) :]

    async def add_model_response(self, state, prompt_messages, response):
        completion = [{k: v for k, v in vars(response.message).items() if k != "is_truncated"}]
        state["trajectory"].append({"prompt": prompt_messages, "completion": completion, "response": response, "tokens": None})

    async def cleanup(self, state, task=None, resources=None):
        for handler in self._cleanup_handlers:
            await maybe_call_with_named_args(handler, task=task, state=state, env=self, resources=resources)

    async def rollout(self, input, client, model, sampling_args=None):
        state = await self.init_state(input, client, model, sampling_args)
        try:
            s = await self.setup_state(state)
            state = s if s is not None else state
            while not await self.is_completed(state):
                prompt_messages = await self.get_prompt_messages(state)
                if state.get("final_env_response") is not None:
                    continue
                response = await self.get_model_response(state, prompt_messages)
                await self.add_model_response(state, prompt_messages, response)
        finally:
            await self.cleanup(state)
        return state

    async def setup_state(self, state):
        return state

    # -- _run_group_states: the group's rollouts, then the rubric -------------------------------------------------
    async def run_group(self, inputs, client, model="scripted"):
        states = await asyncio.gather(*[self.rollout(i, client, model) for i in inputs])
        for s in states:
            s["reward"] = 0.0
            for f in self.rubric_funcs:
                s["reward"] += await maybe_call_with_named_args(f, state=s, completion=s["completion"], prompt=s["prompt"])
        return states


def _install_verifiers_source(checkout: str) -> None:
    """Replace the replicas above with verifiers' own methods, read from the checkout."""

    def methods(path: str, cls: str, names: List[str]) -> Dict[str, str]:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        body = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == cls).body
        found = {n.name: ast.get_source_segment(src, n) for n in body if isinstance(n, ast.AsyncFunctionDef) and n.name in names}
        # decorators are part of the source segment only from the `def`: keep them
        for n in body:
            if isinstance(n, ast.AsyncFunctionDef) and n.name in names and n.decorator_list:
                start = n.decorator_list[0].lineno
                lines = src.splitlines()[start - 1 : n.end_lineno]
                found[n.name] = "\n".join(lines)
        missing = set(names) - set(found)
        if missing:
            raise RuntimeError("not in %s: %s" % (path, sorted(missing)))
        return found

    def parse_response_message(response):
        async def go():
            return [{k: v for k, v in vars(response.message).items() if k != "is_truncated"}]

        return go()

    async def parse_response_tokens(response, max_seq_len=None):
        return None

    ns: Dict[str, Any] = {
        "vf": SimpleNamespace(stop=DEC.stop, cleanup=DEC.cleanup, Error=VfError, OverlongPromptError=OverlongPromptError),
        "asyncio": asyncio,
        "time": time,
        "final": typing.final,
        "concat_messages": lambda parts: [m for p in parts for m in p],
        "maybe_normalize_messages": lambda m, field_name=None: list(m),
        "parse_response_message": parse_response_message,
        "parse_response_tokens": parse_response_tokens,
        "TimeSpan": lambda start, end: SimpleNamespace(start=start, end=end),
        "TrajectoryStep": dict,
        "maybe_call_with_named_args": maybe_call_with_named_args,
        "ErrorChain": repr,
        "State": dict,
        "Messages": list,
        "Response": object,
        "RolloutInput": dict,
        "SamplingArgs": dict,
        "Client": object,
        "TrajectoryStep_": dict,
    }
    base = os.path.join(checkout, "verifiers", "legacy", "envs")
    mt = methods(
        os.path.join(base, "multiturn_env.py"),
        "MultiTurnEnv",
        ["has_error", "prompt_too_long", "max_turns_reached", "max_total_completion_tokens_reached", "has_final_env_response",
         "get_prompt_messages", "render_completion", "render_state", "add_trajectory_step", "add_model_response", "rollout"],
    )
    ev = methods(os.path.join(base, "environment.py"), "Environment", ["cleanup", "_render_stop", "is_completed"])
    for name, code in list(mt.items()) + list(ev.items()):
        exec(compile(textwrap.dedent(code), "verifiers/legacy/envs/" + name, "exec"), ns)
        setattr(MultiTurnEnvStandIn, name, ns[name])
    MultiTurnEnvStandIn.logger = SimpleNamespace(error=lambda *a, **k: None)
    MultiTurnEnvStandIn.source = checkout


if os.environ.get("VERIFIERS_CHECKOUT"):
    _install_verifiers_source(os.environ["VERIFIERS_CHECKOUT"])
