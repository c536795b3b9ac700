"""A benchmax env as tinker-cookbook RL envs (tinker_cookbook/rl/types.py: Env, EnvGroupBuilder, RLDataset).

Duck-typed on the cookbook's interfaces, stdlib only at import time (the cookbook and tinker are imported lazily,
when present, for `StepResult` and `ModelInput`), so it is importable and testable without them.

- `BenchmaxCookbookEnv` is token-level: `initial_observation()` renders the conversation with the renderer the
  cookbook passes (`build_generation_prompt`, `get_stop_sequences`); `step(action_tokens)` parses the tokens with
  `renderer.parse_response` and sends the reply to the env server's episode engine, which runs its tool calls or
  ends the episode with the reward.
- `BenchmaxEnvGroupBuilder.make_envs()` sets a group up once: one rollout is created and forked G-1 times.
- Every reward is counted once: the env's reward arrives as the final step's reward; `compute_group_rewards`
  returns only what the group adds on top (the env's group-relative components, or 0.0), since the cookbook's
  total is sum(step rewards) + group reward (types.py TrajectoryGroup.get_total_rewards).
- `cleanup()` releases every rollout the group still holds; builders pickle (configuration only, no connections).
- The conversation the renderer sees is kept in the cookbook's own message types: the assistant turn is the message
  `renderer.parse_response` returned (its `ToolCall` objects, ids filled in), each tool result a `tool` message
  with `tool_call_id` and `name`, so every renderer that renders tool calls (Qwen3, Qwen3.5, Llama3, DeepSeek V3,
  gpt-oss, Kimi K2) renders the history. OpenAI-style dict tool calls in a prompt are converted to `ToolCall`.
  With `renderer_tools=True` the env's tools are announced the renderer's way
  (`renderer.create_conversation_prefix_with_tools`) instead of the env's system prompt.
"""

import asyncio
import functools
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from .client import BenchmaxClient, Rollout
from .text_env import BenchmaxTextEnv, observations_of, text_of


@dataclass
class StepResultLike:
    """The fields of tinker_cookbook.rl.types.StepResult (types.py L121-149), used when the cookbook is absent."""

    reward: float
    episode_done: bool
    next_observation: Any
    next_stop_condition: Any
    metrics: Dict[str, Any] = field(default_factory=dict)
    logs: Dict[str, Any] = field(default_factory=dict)


def _step_result(**kw: Any) -> Any:
    try:
        from tinker_cookbook.rl.types import StepResult  # type: ignore

        return StepResult(**kw)
    except Exception:
        return StepResultLike(**kw)


async def _in_thread(fn, *args, **kwargs):
    """Run a blocking HTTP call off the event loop (the cookbook runs a group's rollouts with asyncio.gather)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def _call_id(call: Any, i: int) -> str:
    return _get(call, "id") or "call_%d" % i


def _message_parts(message: Any) -> Any:
    """(text content, OpenAI tool calls or None) of the renderer's parsed message (a dict or an object).

    Tool calls the renderer could not parse (`unparsed_tool_calls`) go to the server as text, so its parser answers
    with a readable tool error where the text is a tool call in its format, and the episode ends otherwise."""
    content = text_of(_get(message, "content"))
    calls = _get(message, "tool_calls") or None
    out_calls = None
    if calls:
        out_calls = []
        for i, c in enumerate(calls):
            fn = _get(c, "function") or {}
            args = _get(fn, "arguments")
            if not isinstance(args, str):
                args = json.dumps(args if args is not None else {})
            out_calls.append({"id": _call_id(c, i), "type": "function", "function": {"name": _get(fn, "name"), "arguments": args}})
    unparsed = _get(message, "unparsed_tool_calls") or []
    raw = [str(_get(u, "raw_text") or "") for u in unparsed]
    if any(raw) and not out_calls:
        content = "\n".join([content] + [r for r in raw if r and r not in content]) if content else "\n".join(raw)
    return content, out_calls


def _cookbook_tool_call_type() -> Any:
    """tinker_cookbook.renderers.base.ToolCall, or None where the cookbook is absent."""
    try:
        from tinker_cookbook.renderers.base import ToolCall  # type: ignore

        return ToolCall
    except Exception:
        return None


def _with_ids(message: Any) -> Any:
    """The renderer's parsed message with an id on every tool call (the id the server echoes in its tool messages)."""
    calls = _get(message, "tool_calls")
    if not calls or not isinstance(message, dict):
        return message
    fixed = []
    for i, c in enumerate(calls):
        if _get(c, "id"):
            fixed.append(c)
        elif isinstance(c, dict):
            fixed.append(dict(c, id=_call_id(c, i)))
        elif hasattr(c, "model_copy"):
            fixed.append(c.model_copy(update={"id": _call_id(c, i)}))
        else:
            fixed.append(c)
    out = dict(message)
    out["tool_calls"] = fixed
    return out


def to_cookbook_message(message: Dict[str, Any]) -> Dict[str, Any]:
    """An OpenAI-style message as a cookbook Message: dict tool calls become the cookbook's ToolCall objects."""
    out = dict(message)
    if out.get("content") is None:
        out["content"] = ""  # OpenAI's null content beside tool calls; renderers take text
    calls = message.get("tool_calls")
    tool_call = _cookbook_tool_call_type()
    if not calls or tool_call is None:
        return out
    converted = []
    for i, c in enumerate(calls):
        if isinstance(c, dict):
            fn = c.get("function") or {}
            args = fn.get("arguments")
            if not isinstance(args, str):
                args = json.dumps(args if args is not None else {})
            c = tool_call(function=tool_call.FunctionBody(name=fn.get("name") or "", arguments=args), id=_call_id(c, i))
        converted.append(c)
    out["tool_calls"] = converted
    return out


class BenchmaxCookbookEnv:
    """One episode of a group (tinker_cookbook Env, types.py L195-257): single use."""

    def __init__(
        self,
        episode: BenchmaxTextEnv,
        renderer: Any,
        stop_condition: Optional[List[Any]] = None,
        history: Optional[List[Any]] = None,
    ):
        self.episode = episode
        self.renderer = renderer
        self.stop_condition = stop_condition
        #: the conversation in the cookbook's types, what the renderer renders (episode.messages is the OpenAI form)
        self.history: List[Any] = list(history) if history is not None else [to_cookbook_message(m) for m in episode.messages]

    @property
    def rollout(self) -> Optional[Rollout]:
        return self.episode.rollout

    @property
    def messages(self) -> List[Dict[str, Any]]:
        return self.episode.messages

    def _stop(self) -> Any:
        return self.stop_condition if self.stop_condition is not None else self.renderer.get_stop_sequences()

    def _observe(self) -> Any:
        return self.renderer.build_generation_prompt(self.history)

    async def initial_observation(self):
        return self._observe(), self._stop()

    async def step(self, action: List[int], *, extra: Optional[Dict[str, Any]] = None):
        ep = self.episode
        parsed = self.renderer.parse_response(list(action))
        message, termination = parsed if isinstance(parsed, tuple) else (parsed, None)
        message = _with_ids(message)
        content, tool_calls = _message_parts(message)
        ep.turns += 1
        try:
            out = await _in_thread(ep.step_raw, content, tool_calls)
        except BaseException:
            await _in_thread(ep.release_quietly)
            raise
        self.history.append(message)
        metrics: Dict[str, Any] = {"turn": ep.turns}
        if termination is not None:
            metrics["parse/%s" % getattr(termination, "value", termination)] = 1.0
        if out["done"]:
            meta = out["metadata"]
            for k, v in (meta.get("rewards") or {}).items():
                if isinstance(v, (int, float)):
                    metrics["reward/" + k] = v
            # one-hot stop reason (types.py StopReason, STOP_METRIC_PREFIX "stop/")
            by = meta.get("truncated_by")
            reason = {"deadline": "rollout_timeout"}.get(by, by) if by else "completed"
            metrics["stop/" + reason] = 1.0
            return _step_result(
                reward=out["reward"],
                episode_done=True,
                next_observation=self._observe(),
                next_stop_condition=self._stop(),
                metrics=metrics,
                logs={"rollout_id": meta.get("rollout_id") or "", "task_id": meta.get("task_id") or ""},
            )
        # the tool results join the conversation as the renderer's tool messages (tool_call_id and name: Kimi K2
        # and gpt-oss render them, Qwen3.5 groups consecutive ones)
        new = ep.messages[-len(out["results"]) :] if out["results"] else []
        if not all(isinstance(m, dict) and m.get("role") == "tool" for m in new):
            new = observations_of(out["results"], "tool")
            ep.messages.extend(new)
        names = {c["id"]: c["function"]["name"] for c in tool_calls or []}
        for i, m in enumerate(new):
            tm: Dict[str, Any] = {"role": "tool", "content": text_of(m.get("content"))}
            cid = m.get("tool_call_id") or (tool_calls[i]["id"] if tool_calls and i < len(tool_calls) else None)
            if cid:
                tm["tool_call_id"] = cid
            name = m.get("name") or names.get(cid or "")
            if name:
                tm["name"] = name
            self.history.append(tm)
        metrics["tool_calls"] = len(out["results"])
        return _step_result(
            reward=0.0,
            episode_done=False,
            next_observation=self._observe(),
            next_stop_condition=self._stop(),
            metrics=metrics,
        )


class BenchmaxEnvGroupBuilder:
    """G episodes of one task (tinker_cookbook EnvGroupBuilder, types.py L305-396), set up once by fork.

    Picklable: it holds configuration (endpoints, token, the task, the renderer) and builds its HTTP client and
    rollouts in `make_envs()`.
    """

    def __init__(
        self,
        endpoints: Any,
        prompt: List[Dict[str, Any]],
        renderer: Any,
        task_id: Optional[str] = None,
        task: Optional[Dict[str, Any]] = None,
        group_size: int = 4,
        max_turns: int = 10,
        token: Optional[str] = None,
        tags: Optional[List[str]] = None,
        stop_condition: Optional[List[Any]] = None,
        renderer_tools: Any = False,
        trainer_step: Optional[int] = None,
    ):
        """`renderer_tools`: announce tools the renderer's way (`create_conversation_prefix_with_tools`): True takes
        the env server's tools (`/metadata`), a list gives them ({name, description, parameters}); the prompt's
        system message becomes the prefix's system prompt. `trainer_step` (the batch index `RLDataset.get_batch`
        was given) tags the group's rollouts in a `serve --record` recording."""
        if group_size < 1:
            raise ValueError("group_size must be >= 1, got %r" % (group_size,))
        if task_id is None and task is None:
            raise ValueError("a group needs task_id or an inline task")
        self.endpoints = endpoints
        self.token = token
        self.prompt = [dict(m) for m in prompt]
        self.renderer = renderer
        self.task_id = task_id
        self.task = task
        self.group_size = int(group_size)
        self.max_turns = int(max_turns)
        self.tags = list(tags or ["benchmax"])
        self.stop_condition = stop_condition
        self.renderer_tools = renderer_tools
        self.trainer_step = trainer_step
        self._client: Optional[BenchmaxClient] = None
        self._rollouts: List[Rollout] = []
        self._episodes: List[BenchmaxTextEnv] = []
        self._has_group_reward: Optional[bool] = None

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None  # rebuilt where it is unpickled
        state["_rollouts"] = []
        state["_episodes"] = []
        return state

    def client(self) -> BenchmaxClient:
        if self._client is None:
            self._client = BenchmaxClient(self.endpoints, token=self.token)
        return self._client

    def _setup(self) -> List[Rollout]:
        c = self.client()
        first = c.create_rollout(self.task_id, self.task, self.max_turns, trainer_step=self.trainer_step)
        rollouts = [first]
        if self.group_size > 1:
            try:
                rollouts += c.fork(first, self.group_size - 1)
            except BaseException:
                c.release(first)
                raise
        return rollouts

    def _history(self) -> List[Any]:
        """The prompt in the cookbook's message types; with renderer_tools, behind the renderer's tool prefix."""
        prompt = [to_cookbook_message(m) for m in self.prompt]
        if not self.renderer_tools:
            return prompt
        tools = self.renderer_tools
        if tools is True:
            tools = self.client().metadata().get("tools") or []
        specs = [{"name": t["name"], "description": t.get("description", ""), "parameters": t.get("parameters") or {}} for t in tools]
        system = "\n\n".join(text_of(m.get("content")) for m in prompt if m.get("role") == "system")
        rest = [m for m in prompt if m.get("role") != "system"]
        return list(self.renderer.create_conversation_prefix_with_tools(specs, system)) + rest

    async def make_envs(self) -> Sequence[BenchmaxCookbookEnv]:
        rollouts = await _in_thread(self._setup)
        self._rollouts.extend(rollouts)
        try:
            history = await _in_thread(self._history)
        except BaseException:
            await self.cleanup()
            raise
        envs = []
        for r in rollouts:
            ep = BenchmaxTextEnv(
                {"observation_role": "tool"},
                {"max_turns": self.max_turns, "extra_info": {"task_id": r.task_id}},
                client=self.client(),
            )
            ep.attach(r, self.prompt)
            self._episodes.append(ep)
            envs.append(BenchmaxCookbookEnv(ep, self.renderer, self.stop_condition, list(history)))
        return envs

    async def compute_group_rewards(
        self, trajectory_group: List[Any], env_group: Sequence[BenchmaxCookbookEnv]
    ) -> List[Any]:
        """(reward, metrics) per trajectory, added to its step rewards (which already hold the env's reward)."""
        if len(trajectory_group) != len(env_group):
            raise ValueError("compute_group_rewards: %d trajectories for %d envs" % (len(trajectory_group), len(env_group)))
        eps = [e.episode for e in env_group]
        for e in eps:
            if e.final is None:
                raise RuntimeError("compute_group_rewards: an env of the group has not finished its episode")
        c = self.client()
        if self._has_group_reward is None:
            meta = await _in_thread(c.metadata)
            self._has_group_reward = bool(meta.get("hasGroupReward"))
        if not self._has_group_reward:
            return [(0.0, {}) for _ in eps]
        members = [
            {"rolloutId": e.rollout.rollout_id, "messages": e.messages, "rewards": e.final.get("rewards") or {}}
            for e in eps
        ]
        res = await _in_thread(c.group_reward, self.task_id, self.task, members)
        out = []
        for e, extra, combined in zip(eps, res["rewards"], res["combined"]):
            # the step rewards already hold e.final["reward"]: add only the difference the group makes
            metrics = {"group/" + k: v for k, v in (extra or {}).items() if isinstance(v, (int, float))}
            out.append((float(combined) - float(e.final["reward"]), metrics))
        return out

    async def cleanup(self) -> None:
        """Release every rollout of the group still held (idempotent, never raises: types.py L367-378)."""
        eps, self._episodes = self._episodes, []
        rollouts, self._rollouts = self._rollouts, []
        done = {e.rollout.rollout_id for e in eps if e.done and e.rollout is not None}
        pending = [r for r in rollouts if r.rollout_id not in done]
        client = self._client
        if client is None:
            return
        try:
            for r in pending:
                try:
                    await _in_thread(client.release, r)
                except Exception:
                    pass
        finally:
            try:
                client.close()
            except Exception:
                pass

    def logging_tags(self) -> List[str]:
        return list(self.tags)


class BenchmaxRLDataset:
    """Batches of group builders (tinker_cookbook RLDataset, types.py L445-486) over exported rows.

    `rows` are SkyRL-export rows (dicts with `prompt` and `extra_info.task_id` / `extra_info.task`), e.g. read
    from train.parquet with pandas, or built by hand.
    """

    def __init__(
        self,
        rows: Sequence[Dict[str, Any]],
        endpoints: Any,
        renderer: Any,
        batch_size: int,
        group_size: int = 4,
        max_turns: int = 10,
        token: Optional[str] = None,
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1, got %r" % (batch_size,))
        if len(rows) < batch_size:
            raise ValueError("%d rows cannot fill one batch of %d" % (len(rows), batch_size))
        self.rows = list(rows)
        self.endpoints = endpoints
        self.renderer = renderer
        self.batch_size = int(batch_size)
        self.group_size = int(group_size)
        self.max_turns = int(max_turns)
        self.token = token

    def builder(self, row: Dict[str, Any], trainer_step: Optional[int] = None) -> BenchmaxEnvGroupBuilder:
        import json

        info = row.get("extra_info") or {}
        task = info.get("task")
        if isinstance(task, str):
            task = json.loads(task) if task else None
        env = info.get("env") or str(row.get("data_source") or "benchmax").split("/")[-1]
        return BenchmaxEnvGroupBuilder(
            self.endpoints,
            list(row["prompt"]),
            self.renderer,
            task_id=info.get("task_id"),
            task=task,
            group_size=self.group_size,
            max_turns=self.max_turns,
            token=self.token,
            tags=[env, "benchmax"],
            trainer_step=trainer_step,
        )

    def get_batch(self, index: int) -> Sequence[BenchmaxEnvGroupBuilder]:
        if not 0 <= index < len(self):
            raise IndexError("batch %d of %d" % (index, len(self)))
        start = index * self.batch_size
        # the batch index is the cookbook's training step: it tags every rollout of the batch
        return [self.builder(r, trainer_step=index) for r in self.rows[start : start + self.batch_size]]

    def __len__(self) -> int:
        return len(self.rows) // self.batch_size
