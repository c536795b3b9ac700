"""A benchmax env server as a verifiers environment, on both APIs verifiers ships (PrimeIntellect-ai/verifiers,
read at a60a606ecc4d309247edf9ff92c3eabca362781f).

**v1** (`verifiers.v1`, the current API: tasksets × harnesses × runtimes). `BenchmaxTaskset` is a `vf.Taskset` of
the server's tasks; each `BenchmaxTask` is one episode on the server:

    from benchmax_client.verifiers import load_taskset
    taskset = load_taskset("http://127.0.0.1:8000", token)     # a vf.Taskset (BenchmaxTaskset)

- `load()` reads the tasks, their system prompts and nothing else (`GET /v1/tasks?include=systemPrompt`: no rollout);
- `BenchmaxTask.setup` starts the task's episode on the server; the env's tools reach the harness through
  `BenchmaxToolset`, an MCP tool server (as verifiers' own NeMo Gym taskset bridges a remote resource server:
  `list_tools` / `call_tool` on the rollout's state); a model's bad call is a tool error it reads;
- the reward `benchmax` asks the server to score the trace's conversation (the components are metrics), then
  releases the episode.
- A failure talking to the server (unreachable, `BenchmaxRolloutLost`) raises from the hook, a plain error as v1
  wants from extension code (v1/errors.py L1-22): verifiers attributes it (`boundary`, v1/errors.py L85-99) and
  records it on the trace (`Rollout.fail`, v1/rollout.py L157-174 → `Trace.record_error`, v1/trace.py L585-600:
  `ok = False`, stop `error`, no reward scored), never a reward of 0. `Rollout.close` skips finalize and scoring
  after a failure (v1/rollout.py L472), so such an episode is freed by the server's idle sweep.

**legacy** (`verifiers.legacy`, the v0 stack: `MultiTurnEnv`), kept while verifiers ships it:

    env = load_environment("http://127.0.0.1:8000", token, max_turns=5)   # a vf.MultiTurnEnv

- `setup_state` starts an episode on the row's `info.task_id` (or inline `info.task`);
- `env_response` sends the model's last message (text, or native tool calls in any shape verifiers' clients build:
  its flat `ToolCall {id, name, arguments}`) to the server's episode engine and returns its tool messages; when the
  episode ends it sets `state["final_env_response"]` and keeps the env's reward;
- a cleanup handler scores an episode that stopped early (max_turns, a timeout) on its conversation, then releases;
- the rubric's one function, `benchmax_reward`, returns the env's reward (components in `state["benchmax_rewards"]`).
- A failure talking to the server fails the sample the verifiers way: raised as a `vf.InfraError` (a
  `vf.Error` for an env error) from `setup_state` / `env_response`, which `MultiTurnEnv.rollout` stores in
  `state["error"]` (legacy/envs/multiturn_env.py L184-185, L211-216) and its `has_error` stop ends the rollout
  (L68-70); the output keeps the error (legacy/utils/save_utils.py L288-295) and `maybe_retry` re-runs a group
  whose state holds a `vf.InfraError` (legacy/utils/async_utils.py L145-183). The group's other rollouts go on.
  The error raised is both the benchmax error (`BenchmaxRolloutLost`, …) and the verifiers one.

The dataset holds the server's tasks (`{prompt, info: {task_id}}`, no gold data); reading it creates no rollout.
Nothing here imports verifiers until a verifiers class is asked for.
"""

import asyncio
import json
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .env import BenchmaxEnv, openai_messages, openai_tool_calls, task_prompts, text_of
from .transport import BenchmaxClient, BenchmaxEnvError, BenchmaxError, BenchmaxInfraError, Rollout


def _plain(m: Any) -> Dict[str, Any]:
    """A message as a dict (verifiers keeps pydantic message objects in its state)."""
    if isinstance(m, dict):
        return m
    if hasattr(m, "model_dump"):
        return m.model_dump(exclude_none=True)
    return dict(vars(m))


_WRAPPED: Dict[Tuple[type, type], type] = {}


def as_verifiers_error(e: BaseException, error: Optional[type], infra_error: Optional[type]) -> BaseException:
    """`e` (a benchmax error) as an instance of both its own class and verifiers' error class: `infra_error`
    (`vf.InfraError`) for an infrastructure failure (unreachable, restarted, `BenchmaxRolloutLost`), `error`
    (`vf.Error`) for anything else. Unchanged when verifiers' classes are not given."""
    base = infra_error if isinstance(e, BenchmaxInfraError) else error
    if base is None or isinstance(e, base):
        return e
    key = (type(e), base)
    cls = _WRAPPED.get(key)
    if cls is None:
        cls = _WRAPPED[key] = type(type(e).__name__, (type(e), base), {"__module__": type(e).__module__})
    out = cls(*e.args)
    out.__cause__ = e
    return out


class BenchmaxVerifiersMixin:
    """The benchmax side of a verifiers (legacy) MultiTurnEnv; mix it in before the verifiers base class.

    `vf_error` / `vf_infra_error` are verifiers' `Error` and `InfraError` (`load_environment` sets them): a failure
    raised as one of them fails the sample through verifiers' own `state["error"]` instead of crashing the group."""

    benchmax_client: BenchmaxClient
    vf_error: Optional[type] = None
    vf_infra_error: Optional[type] = None
    #: verifiers' ToolMessage: env_response returns its own message type (else plain dicts, which it normalizes)
    vf_tool_message: Optional[type] = None

    def _vf(self, e: BaseException) -> BaseException:
        return as_verifiers_error(e, self.vf_error, self.vf_infra_error)

    async def setup_state(self, state: Any, **kwargs: Any) -> Any:
        info = state.get("info") or {}
        if isinstance(info, str):
            info = json.loads(info)
        task_id, task = info.get("task_id"), info.get("task")
        if task_id is None and task is None:
            raise self._vf(BenchmaxEnvError("the dataset row's info names no task (task_id or task)"))
        env = BenchmaxEnv(client=self.benchmax_client)
        state["benchmax_env"] = env
        try:
            await asyncio.to_thread(env.start, task_id, task)
        except BenchmaxError as e:
            raise self._vf(e) from e
        state["benchmax_rollout_id"] = env.rollout.rollout_id if env.rollout else None
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> List[Dict[str, Any]]:
        env: BenchmaxEnv = state["benchmax_env"]
        last = _plain(messages[-1]) if messages else {}
        if last.get("role") != "assistant":
            raise self._vf(BenchmaxError("env_response expects the model's message last, got %r" % last.get("role")))
        try:
            out = await asyncio.to_thread(env.step, text_of(last.get("content")), openai_tool_calls(last.get("tool_calls")))
        except BenchmaxError as e:
            raise self._vf(e) from e
        if out["done"]:
            state["benchmax_reward"] = float(out["reward"])
            state["benchmax_rewards"] = dict(out["info"].get("rewards") or {})
            state["final_env_response"] = []
            return []
        msgs = [
            {k: v for k, v in m.items() if k in ("role", "content", "tool_call_id", "name")}
            for m in out["observation"].get("messages") or []
        ]
        make = self.vf_tool_message
        return [make(**m) if make is not None and m.get("role") == "tool" else m for m in msgs]

    async def benchmax_cleanup(self, state: Any, **kwargs: Any) -> None:
        """Score an episode that stopped before the env ended it (max_turns, a timeout: on prompt + completion),
        then release it. Cleanup runs outside the rollout's error capture, so a failure here is stored in
        `state["error"]` the way the rollout loop stores one (a raise would crash the whole group)."""
        env: Optional[BenchmaxEnv] = state.get("benchmax_env")
        if env is None:
            return
        try:
            if "benchmax_reward" not in state and not env.done and state.get("error") is None:
                convo = [_plain(m) for m in list(state.get("prompt") or []) + list(state.get("completion") or [])]
                out = await asyncio.to_thread(env.reward, openai_messages(convo))
                state["benchmax_reward"] = float(out["reward"])
                state["benchmax_rewards"] = dict(out.get("rewards") or {})
        except BenchmaxError as e:
            state["error"] = self._vf(e)
        finally:
            await asyncio.to_thread(env.release)

    # verifiers' @vf.cleanup marks (legacy/decorators.py): run after render_state (priority 100) has set the completion
    benchmax_cleanup.cleanup = True  # type: ignore[attr-defined]
    benchmax_cleanup.cleanup_priority = 0  # type: ignore[attr-defined]


async def benchmax_reward(state: Any, **kwargs: Any) -> float:
    """The rubric function: the env's reward for this rollout. A failed rollout has none: this raises, and verifiers'
    rubric logs it (its `state["error"]` is what marks the sample failed)."""
    r = state.get("benchmax_reward")
    if r is None:
        raise BenchmaxError("this rollout has no env reward (its episode failed: %r)" % (state.get("error"),))
    return float(r)


def dataset_rows(client: BenchmaxClient, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """`[{prompt, info: {task_id}}]` from the server's tasks, the system prompt the env's own (no rollout made)."""
    return [{"prompt": r["prompt"], "info": {"task_id": r["task_id"]}} for r in task_prompts(client, limit)]


def tool_defs(client: BenchmaxClient) -> List[Dict[str, Any]]:
    """The env's tools as verifiers' provider-agnostic tool definitions ({name, description, parameters})."""
    return [
        {"name": t["name"], "description": t.get("description") or "", "parameters": t.get("parameters") or {"type": "object"}}
        for t in client.metadata().get("tools") or []
    ]


def load_environment(url: Any = None, token: Optional[str] = None, max_turns: int = 10, limit: Optional[int] = None, **kwargs: Any) -> Any:
    """A legacy `vf.MultiTurnEnv` over the benchmax server at `url` (verifiers' `load_environment` entry point)."""
    import verifiers.legacy as vf  # type: ignore

    client = BenchmaxClient(url, token=token)
    rows = dataset_rows(client, limit)

    def dataset() -> Any:
        from datasets import Dataset  # type: ignore  (verifiers depends on it)

        return Dataset.from_list(rows)

    cls = type(
        "BenchmaxEnv",
        (BenchmaxVerifiersMixin, vf.MultiTurnEnv),
        {"vf_error": vf.Error, "vf_infra_error": vf.InfraError, "vf_tool_message": vf.ToolMessage},
    )
    env = cls(
        dataset=dataset,
        rubric=vf.Rubric(funcs=[benchmax_reward], weights=[1.0]),
        tool_defs=tool_defs(client),
        max_turns=max_turns,
        **kwargs,
    )
    env.benchmax_client = client
    return env


# -- v1: the episode operations, without verifiers (the v1 classes below call them) ------------------------------

_CLIENTS: Dict[Tuple[str, Optional[str]], BenchmaxClient] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(url: str, token: Optional[str]) -> BenchmaxClient:
    """One client per (endpoints, token) in this process: the task hooks and the tool server each keep theirs."""
    key = (url, token or None)
    with _CLIENTS_LOCK:
        c = _CLIENTS.get(key)
        if c is None:
            c = _CLIENTS[key] = BenchmaxClient(url, token=token)
        return c


def v1_tasks(url: str, token: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """`[{task_id, prompt, system_prompt}]`: the user turns (the system prompt apart, as verifiers' `TaskData`
    keeps it), read without a rollout."""
    out = []
    for r in task_prompts(_client(url, token), limit):
        out.append({"task_id": r["task_id"], "prompt": [m for m in r["prompt"] if m.get("role") != "system"], "system_prompt": r["system_prompt"] or None})
    return out


def v1_start(state: Any, url: str, token: Optional[str], task_id: str, max_turns: Optional[int] = None) -> None:
    """Start the task's episode; its coordinates go into the rollout's verifiers state (shared with the tool server,
    never serialized into the trace)."""
    r = _client(url, token).create_rollout(task_id, max_turns=max_turns)
    state.url, state.token = url, token or ""
    state.endpoint, state.rollout_id, state.rollout_token, state.task_id = r.endpoint, r.rollout_id, r.token, r.task_id
    state.released = False


def _rollout_of(state: Any) -> Rollout:
    if not getattr(state, "rollout_id", ""):
        raise BenchmaxError("no benchmax episode in this rollout's state (BenchmaxTask.setup did not run)")
    return Rollout(state.endpoint, state.rollout_id, state.rollout_token, state.task_id)


def v1_call_tool(state: Any, name: str, arguments: Optional[Dict[str, Any]]) -> Tuple[str, bool]:
    """One tool call on the rollout's episode: (text, is_error). A model's mistake (unknown tool, bad arguments) is
    `is_error` with a message it reads; a lost server raises."""
    res = _client(state.url, state.token or None).call_tool(_rollout_of(state), name, dict(arguments or {}))
    return text_of(res.get("content")), bool(res.get("isError"))


def v1_score(state: Any, messages: Sequence[Any]) -> Tuple[float, Dict[str, float]]:
    """The env's reward for the conversation, then the episode is released: (reward, components)."""
    c = _client(state.url, state.token or None)
    r = _rollout_of(state)
    try:
        out = c.reward(r, openai_messages([_plain(m) for m in messages]))
    finally:
        state.released = True
        c.release(r)
    reward = out.get("reward")
    if not isinstance(reward, (int, float)) or isinstance(reward, bool):
        raise BenchmaxEnvError("the env server returned no numeric reward: %r" % (reward,))
    return float(reward), {k: float(v) for k, v in (out.get("rewards") or {}).items()}


def v1_tools(url: str, token: Optional[str]) -> List[Dict[str, Any]]:
    return tool_defs(_client(url, token))


def _v1_classes() -> Dict[str, Any]:
    """The v1 classes, built on first use (they subclass verifiers.v1's)."""
    import os

    import verifiers.v1 as vf  # type: ignore
    from pydantic import Field  # type: ignore  (verifiers depends on it)

    class BenchmaxTaskConfig(vf.TaskConfig):
        url: str = Field(default_factory=lambda: os.environ.get("BENCHMAX_ENDPOINTS") or os.environ.get("BENCHMAX_ENDPOINT") or "")
        """The env server (or a fleet: comma-separated URLs)."""
        token: Optional[str] = Field(default_factory=lambda: os.environ.get("BENCHMAX_TOKEN") or None)
        """The server's bearer token (default: BENCHMAX_TOKEN)."""
        max_turns: Optional[int] = None
        """A server-enforced turn limit per episode."""

    class BenchmaxTasksetConfig(vf.TasksetConfig):
        limit: Optional[int] = None
        """Load at most this many of the server's tasks."""
        tools: vf.SharedToolsetConfig = vf.SharedToolsetConfig()
        task: BenchmaxTaskConfig = Field(default_factory=BenchmaxTaskConfig)

    class BenchmaxData(vf.TaskData):
        task_id: str

    class BenchmaxState(vf.State):
        url: str = ""
        token: str = ""
        endpoint: str = ""
        rollout_id: str = ""
        rollout_token: str = ""
        task_id: str = ""
        released: bool = False

    class BenchmaxToolset(vf.Toolset[vf.SharedToolsetConfig, BenchmaxState]):
        """The env's tools, served to the harness over MCP; each call runs on the calling rollout's episode."""

        TOOL_PREFIX = None

        def register(self, mcp: Any) -> None:
            server = mcp._mcp_server
            server.list_tools()(self._with_state(self.list_tools))
            server.call_tool(validate_input=False)(self._with_state(self.call_tool))

        async def list_tools(self) -> List[Any]:
            from mcp.types import Tool  # type: ignore

            specs = await asyncio.to_thread(v1_tools, self.state.url, self.state.token or None)
            return [Tool(name=t["name"], description=t["description"] or None, inputSchema=t["parameters"]) for t in specs]

        async def call_tool(self, name: str, arguments: Dict[str, Any]) -> Any:
            from mcp.types import CallToolResult, TextContent  # type: ignore

            text, is_error = await asyncio.to_thread(v1_call_tool, self.state, name, arguments)
            return CallToolResult(content=[TextContent(type="text", text=text)], isError=is_error)

    class BenchmaxTask(vf.Task[BenchmaxData, BenchmaxState, BenchmaxTaskConfig]):
        @property
        def key(self) -> str:
            return self.data.task_id

        async def setup(self, trace: Any, runtime: Any) -> None:
            await asyncio.to_thread(v1_start, trace.state, self.config.url, self.config.token, self.data.task_id, self.config.max_turns)

        @vf.reward(weight=1.0)
        async def benchmax(self, trace: Any) -> float:
            messages = list(trace.messages)
            if self.data.system_prompt and not any(getattr(m, "role", None) == "system" for m in messages):
                messages.insert(0, {"role": "system", "content": self.data.system_prompt})
            reward, components = await asyncio.to_thread(v1_score, trace.state, messages)
            trace.record_metrics(components)
            return reward

    class BenchmaxTaskset(vf.Taskset[BenchmaxTask, BenchmaxTasksetConfig]):
        @classmethod
        def toolsets(cls, config: Any) -> List[Any]:
            return [BenchmaxToolset(config.tools)]

        def load(self) -> List[Any]:
            cfg = self.config.task
            return [
                BenchmaxTask(
                    BenchmaxData(idx=i, name=t["task_id"], prompt=t["prompt"], system_prompt=t["system_prompt"], task_id=t["task_id"]),
                    cfg,
                )
                for i, t in enumerate(v1_tasks(cfg.url, cfg.token, self.config.limit))
            ]

    return {
        "BenchmaxData": BenchmaxData,
        "BenchmaxState": BenchmaxState,
        "BenchmaxTask": BenchmaxTask,
        "BenchmaxTaskConfig": BenchmaxTaskConfig,
        "BenchmaxTaskset": BenchmaxTaskset,
        "BenchmaxTasksetConfig": BenchmaxTasksetConfig,
        "BenchmaxToolset": BenchmaxToolset,
    }


_V1: Dict[str, Any] = {}


def load_taskset(url: Any = None, token: Optional[str] = None, limit: Optional[int] = None, max_turns: Optional[int] = None) -> Any:
    """A v1 `BenchmaxTaskset` over the server at `url` (default BENCHMAX_ENDPOINTS; token default BENCHMAX_TOKEN)."""
    cls = __getattr__("BenchmaxTaskset")
    task: Dict[str, Any] = {"max_turns": max_turns}
    if url is not None:
        task["url"] = url if isinstance(url, str) else ",".join(url)
    if token is not None:
        task["token"] = token
    config = __getattr__("BenchmaxTasksetConfig")(limit=limit, task=__getattr__("BenchmaxTaskConfig")(**task))
    return cls(config)


def __getattr__(name: str) -> Any:
    """`BenchmaxTaskset`, `BenchmaxTask`, `BenchmaxToolset`, …: verifiers.v1 classes, built on first access."""
    if name.startswith("Benchmax") and name not in globals():
        if not _V1:
            _V1.update(_v1_classes())
        if name in _V1:
            return _V1[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "BenchmaxVerifiersMixin",
    "as_verifiers_error",
    "benchmax_reward",
    "dataset_rows",
    "load_environment",
    "load_taskset",
    "tool_defs",
    "v1_call_tool",
    "v1_score",
    "v1_start",
    "v1_tasks",
]
