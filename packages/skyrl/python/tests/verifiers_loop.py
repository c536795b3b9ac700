"""verifiers' legacy group and rollout loop: our step-by-step copy (CI), or verifiers' own package (VERIFIERS_CHECKOUT).

Read from PrimeIntellect-ai/verifiers @ a60a606ecc4d309247edf9ff92c3eabca362781f (written by us; no code copied):
- legacy/envs/environment.py: `run_group` L772-821 → `_run_group_states` L691-723 (gather the group's `rollout`s,
  then `rubric.score_group`, then rubric cleanup), then `state_to_output` per state; `init_state` L540-599;
  `cleanup` L614-630 (every @cleanup handler, by priority); `_render_stop` / `is_completed` L640-665.
- legacy/envs/multiturn_env.py: `rollout` L166-224: `setup_state` (a `vf.Error` goes to `state["error"]`, L184-185);
  while not `is_completed`: `get_prompt_messages` (from the 2nd turn: the last prompt + completion +
  `env_response`), `continue` once `final_env_response` is set, `get_model_response`, `add_model_response`; a
  `vf.Error` in the loop goes to `state["error"]` (L211-216); finally `cleanup` (`render_state`, priority 100, sets
  `state["completion"]` first). Stops: `has_error` (priority 100, L68-70), `max_turns_reached` (L76-78),
  `has_final_env_response` (L94-97), …
- legacy/rubrics/rubric.py: `score_group` L363-417; a reward function that raises scores 0.0 (L204-217): a failed
  rollout is told apart by its `state["error"]`, which `state_to_output` keeps (legacy/utils/save_utils.py L288-295).
- legacy/clients/openai_chat_completions_client.py `from_native_response` L376-428: a chat.completion's tool calls
  become verifiers' flat `ToolCall(id, name, arguments)` (legacy/types.py), whose `model_dump` is
  `{id, name, arguments}`.

`load()` gives the loop the tests run: the replica below, or, with `VERIFIERS_CHECKOUT=<a verifiers checkout>`,
verifiers' own `verifiers.legacy` package imported from that checkout (its `MultiTurnEnv`, `Environment.run_group`,
`Rubric`, `OpenAIChatCompletionsClient` parsing, message types), with the third-party modules it imports but never
runs here (openai, anthropic, datasets, tenacity, zmq, …) replaced by empty stand-ins: that needs pydantic 2.
"""

import asyncio
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import types
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional

# -- the replica ---------------------------------------------------------------------------------------------------


class VfError(Exception):
    """verifiers.legacy.errors.Error"""


class InfraError(VfError):
    """verifiers.legacy.errors.InfraError"""


class OverlongPromptError(VfError):
    pass


class Model:
    """verifiers' CustomBaseModel as the loop uses it: attributes, item access, `get`, `model_dump`."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    def __getitem__(self, k: str) -> Any:
        return getattr(self, k)

    def get(self, k: str, d: Any = None) -> Any:
        return getattr(self, k, d)

    def model_dump(self, exclude_none: bool = False) -> Dict[str, Any]:
        def dump(v: Any) -> Any:
            if isinstance(v, Model):
                return v.model_dump(exclude_none)
            if isinstance(v, list):
                return [dump(x) for x in v]
            return v

        return {k: dump(v) for k, v in self.__dict__.items() if not (exclude_none and v is None)}


class ToolCall(Model):
    """verifiers' flat ToolCall: `{id, name, arguments}` (arguments a JSON string)."""

    def __init__(self, id: str, name: str, arguments: str):
        super().__init__(id=id, name=name, arguments=arguments)


class ToolMessage(Model):
    def __init__(self, **fields: Any):
        super().__init__(role="tool", **{k: v for k, v in fields.items() if k != "role"})


def from_native_response(native: Dict[str, Any]) -> Model:
    """A chat.completion as verifiers' OpenAI client parses it: `Response(message=ResponseMessage(content,
    tool_calls=[ToolCall(id, name, arguments)], finish_reason, is_truncated))`."""
    choice = native["choices"][0]
    msg = choice["message"]
    calls = [ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]
    return Model(
        id=native["id"],
        message=Model(
            role="assistant",
            content=msg.get("content"),
            tool_calls=calls or None,
            finish_reason=choice.get("finish_reason"),
            is_truncated=choice.get("finish_reason") == "length",
        ),
    )


def to_native_prompt(messages: List[Any]) -> List[Dict[str, Any]]:
    """verifiers' messages as OpenAI chat messages (its OpenAI client's `to_native_prompt`)."""
    out = []
    for m in messages:
        d = m.model_dump(exclude_none=True) if isinstance(m, Model) else dict(m)
        if d.get("tool_calls"):
            d["tool_calls"] = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in d["tool_calls"]]
        out.append(d)
    return out


async def maybe_call_with_named_args(fn: Callable[..., Any], **kwargs: Any) -> Any:
    params = inspect.signature(fn).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    out = fn(**kwargs)
    return await out if inspect.isawaitable(out) else out


def _discover(obj: Any, attr: str) -> list:
    ms = [m for _, m in inspect.getmembers(obj, predicate=inspect.ismethod) if getattr(m, attr, False)]
    ms.sort(key=lambda m: (-getattr(m, attr + "_priority", 0), m.__name__))
    return ms


def _mark(attr: str, priority: int = 0) -> Callable[[Any], Any]:
    def apply(f: Any) -> Any:
        setattr(f, attr, True)
        setattr(f, attr + "_priority", priority)
        return f

    return apply


class Rubric:
    """verifiers.legacy Rubric with individual reward functions: `score_group` (a raise scores 0.0)."""

    def __init__(self, funcs=(), weights=()):
        self.funcs, self.weights = list(funcs), list(weights)

    async def score_group(self, states: List[Dict[str, Any]]) -> None:
        totals = [0.0] * len(states)
        metrics: Dict[str, List[float]] = {}
        for f, w in zip(self.funcs, self.weights):
            for i, s in enumerate(states):
                try:
                    v = float(await maybe_call_with_named_args(f, state=s, prompt=s["prompt"], completion=s["completion"]))
                except Exception:
                    v = 0.0
                totals[i] += v * w
                metrics.setdefault(f.__name__, [0.0] * len(states))[i] = v
        for i, s in enumerate(states):
            s["reward"] = totals[i]
            s["metrics"] = {k: v[i] for k, v in metrics.items()}


class MultiTurnEnv:
    """verifiers.legacy MultiTurnEnv as `run_group` drives it; the client is the model."""

    source = "replica"

    def __init__(self, dataset=None, rubric=None, tool_defs=None, max_turns: int = -1, **_kw: Any):
        self.rubric = rubric or Rubric()
        self.tool_defs = [dict(t) for t in tool_defs or []]
        self.max_turns = max_turns
        self._stop_conditions = _discover(self, "stop")
        self._cleanup_handlers = _discover(self, "cleanup")

    @_mark("stop", 100)
    async def has_error(self, state, **kwargs):
        return state.get("error") is not None

    @_mark("stop")
    async def max_turns_reached(self, state):
        return len(state["trajectory"]) >= self.max_turns and self.max_turns > 0

    @_mark("stop")
    async def has_final_env_response(self, state):
        return state.get("final_env_response") is not None

    async def is_completed(self, state):
        for cond in self._stop_conditions:
            if await maybe_call_with_named_args(cond, state=state, env=self):
                state["is_completed"] = True
                state["stop_condition"] = cond.__name__
                return True
        return False

    async def init_state(self, input, client, model):
        prompt = [Model(**m) for m in input["prompt"]]
        return {
            "input": dict(input), "info": dict(input.get("info") or {}), "example_id": input.get("example_id"),
            "prompt": prompt, "client": client, "model": model, "tool_defs": list(self.tool_defs),
            "is_completed": False, "trajectory": [], "completion": None, "reward": None, "metrics": None,
            "error": None, "final_env_response": None,
        }  # fmt: skip

    async def setup_state(self, state):
        return state

    async def get_prompt_messages(self, state):
        if not state["trajectory"]:
            return state["prompt"]
        messages = state["trajectory"][-1]["prompt"] + state["trajectory"][-1]["completion"]
        env = await self.env_response(messages, state)
        return messages + [m if isinstance(m, Model) else Model(**m) for m in env]

    async def get_model_response(self, state, prompt_messages):
        native = await state["client"].create(to_native_prompt(prompt_messages), state["tool_defs"])
        return from_native_response(native)

    async def add_model_response(self, state, prompt_messages, response):
        m = response.message
        completion = [Model(role="assistant", content=m.content, tool_calls=m.tool_calls)]
        state["trajectory"].append({"prompt": prompt_messages, "completion": completion, "response": response})

    @_mark("cleanup", 100)
    async def render_state(self, state):
        if not state["trajectory"]:
            state["completion"] = []
            return
        full = state["trajectory"][-1]["prompt"] + state["trajectory"][-1]["completion"]
        full += [m if isinstance(m, Model) else Model(**m) for m in state.get("final_env_response") or []]
        state["completion"] = full[len(state["prompt"]) :]

    async def cleanup(self, state):
        for handler in self._cleanup_handlers:
            await maybe_call_with_named_args(handler, state=state, env=self)

    async def rollout(self, input, client, model, sampling_args=None):
        state = await self.init_state(input, client, model)
        try:
            try:
                s = await self.setup_state(state)
                state = s if s is not None else state
            except VfError as e:
                state["error"] = e
            while not await self.is_completed(state):
                try:
                    prompt_messages = await self.get_prompt_messages(state)
                    if state.get("final_env_response") is not None:
                        continue
                    response = await self.get_model_response(state, prompt_messages)
                    await self.add_model_response(state, prompt_messages, response)
                except VfError as e:
                    if isinstance(e, OverlongPromptError):
                        state["prompt_too_long"] = True
                    else:
                        state["error"] = e
        finally:
            await self.cleanup(state)
        return state

    async def _run_group_states(self, inputs, client, model, sampling_args):
        states = await asyncio.gather(*[self.rollout(i, client, model, sampling_args) for i in inputs])
        await self.rubric.score_group(states)
        return states

    async def run_group(self, inputs, client, model, sampling_args, max_retries=0, state_columns=None, **kw):
        states = await self._run_group_states(inputs, client, model, sampling_args)
        return [state_to_output(s, state_columns or []) for s in states]


def state_to_output(state: Dict[str, Any], columns: List[str]) -> Dict[str, Any]:
    """The fields of verifiers' `state_to_output` the tests read (legacy/utils/save_utils.py L207-300: tool calls
    as JSON strings)."""
    completion = []
    for m in state.get("completion") or []:
        d = m.model_dump() if isinstance(m, Model) else dict(m)
        if d.get("tool_calls"):  # sanitize_tool_calls (legacy/utils/message_utils.py L478-525)
            d = {"role": d["role"], "content": d.get("content") or "", "tool_calls": [json.dumps(c) for c in d["tool_calls"]]}
        completion.append(d)
    out = {
        "example_id": state.get("example_id"), "reward": state.get("reward"), "metrics": state.get("metrics"),
        "stop_condition": state.get("stop_condition"), "is_completed": state.get("is_completed"),
        "completion": completion,
    }  # fmt: skip
    err = state.get("error")
    if err is not None:
        out["error"] = {"error": type(err).__name__, "message": str(err)}
    for c in columns:
        out[c] = state.get(c)
    return out


REPLICA = SimpleNamespace(
    source="replica", MultiTurnEnv=MultiTurnEnv, Rubric=Rubric, Error=VfError, InfraError=InfraError, ToolMessage=ToolMessage
)


# -- verifiers' own package ---------------------------------------------------------------------------------------


class _Stand(type):
    """An empty stand-in class for a name of a third-party module verifiers imports but does not run here."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stand(name)

    def __call__(cls, *a: Any, **k: Any) -> Any:
        return dict(k) if k and not a else cls  # openai's `…Param` TypedDicts build dicts

    def __getitem__(cls, k: Any) -> Any:
        return cls

    def __or__(cls, o: Any) -> Any:
        return cls

    __ror__ = __or__


def _stand(name: str) -> type:
    def schema(cls: Any, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema  # type: ignore

        return core_schema.any_schema()

    return _Stand(name, (), {"__get_pydantic_core_schema__": classmethod(schema)})


class _StandModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        v = _stand(name)
        setattr(self, name, v)
        return v


class _StandFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module nothing else found (and that is not stdlib, verifiers or ours) is a stand-in.
    Open (any name) only while verifiers is being imported (`opened`); after that only the top-level names it stood
    in for then, so other tests' imports fail as they would without it."""

    OWN = ("verifiers", "benchmax_client", "benchmax_skyrl", "pydantic", "pydantic_core", "typing_extensions")

    def __init__(self) -> None:
        self.open = False
        self.tops: set = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        top = fullname.split(".")[0]
        if top in self.OWN or top in sys.stdlib_module_names or not (self.open or top in self.tops):
            return None
        self.tops.add(top)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> Any:
        m = _StandModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module: Any) -> None:
        pass


class opened:  # noqa: N801 (a context manager)
    """Stand-ins for any missing module while the block imports verifiers."""

    def __enter__(self) -> "_StandFinder":
        f = next((f for f in sys.meta_path if isinstance(f, _StandFinder)), None)
        if f is None:
            f = _StandFinder()
            sys.meta_path.append(f)
        f.open = True
        self.f = f
        return f

    def __exit__(self, *exc: Any) -> None:
        self.f.open = False


def _real(checkout: str) -> SimpleNamespace:
    sys.path.insert(0, checkout)
    with opened():
        import verifiers.legacy as vf  # type: ignore
        from verifiers.legacy.clients.openai_chat_completions_client import OpenAIChatCompletionsClient  # type: ignore

    if not os.path.realpath(vf.__file__).startswith(os.path.realpath(checkout)):
        raise RuntimeError("verifiers was imported from %s, not from VERIFIERS_CHECKOUT" % vf.__file__)

    class NativeMessage(SimpleNamespace):
        def model_dump(self) -> Dict[str, Any]:
            return dict(vars(self))

    class ScriptedClient(OpenAIChatCompletionsClient):
        """verifiers' OpenAI chat client; only the HTTP call is the scripted model's (its prompt conversion,
        response checks and parsing into verifiers' Response / ToolCall are verifiers' own)."""

        def __init__(self, model: Any):
            super().__init__(SimpleNamespace(base_url="http://127.0.0.1:1/v1"))
            self.model = model

        async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
            native = await self.model.create([dict(m) for m in prompt], [t["function"] for t in tools or []])
            choice = native["choices"][0]
            msg = NativeMessage(**choice["message"])
            return SimpleNamespace(
                id=native["id"], created=0, model=model, usage=None,
                choices=[SimpleNamespace(index=0, message=msg, finish_reason=choice["finish_reason"])],
            )  # fmt: skip

    with opened():
        return SimpleNamespace(
            source=checkout, MultiTurnEnv=vf.MultiTurnEnv, Rubric=vf.Rubric, Error=vf.Error, InfraError=vf.InfraError,
            ToolMessage=vf.ToolMessage, client=ScriptedClient, vf=vf,
        )  # fmt: skip


_LOADED: Optional[SimpleNamespace] = None


def load() -> SimpleNamespace:
    """The loop under test: verifiers' own (VERIFIERS_CHECKOUT) or the replica."""
    global _LOADED
    if _LOADED is None:
        checkout = os.environ.get("VERIFIERS_CHECKOUT")
        _LOADED = _real(checkout) if checkout else REPLICA
    return _LOADED


def make_env_class(mixin: type, v: SimpleNamespace) -> type:
    """mixin × verifiers' MultiTurnEnv, as `load_environment` composes them; keeps the group's states for the test."""

    class Env(mixin, v.MultiTurnEnv):  # type: ignore[misc, valid-type]
        vf_error = v.Error
        vf_infra_error = v.InfraError
        vf_tool_message = v.ToolMessage
        last_states: List[Any] = []

        async def _run_group_states(self, *a: Any, **k: Any) -> Any:
            states = await super()._run_group_states(*a, **k)
            type(self).last_states = list(states)
            return states

    return Env


def client_for(v: SimpleNamespace, model: Any) -> Any:
    """What `run_group` gets as its client: verifiers' OpenAI client over the scripted model, or the model itself."""
    return v.client(model) if hasattr(v, "client") else model
