"""`BenchmaxEnv`: one episode at a time on a benchmax env server, sync; `AsyncBenchmaxEnv`: the same, awaitable.

    env = BenchmaxEnv("http://127.0.0.1:8000", token)
    obs = env.reset(task_id="arith-1")          # {episode_id, task_id, messages, tools}
    out = env.step('<tool_call>{"name": "calculator", "arguments": {"expression": "2+2"}}</tool_call>')
    out = env.step("<answer>4</answer>")        # {observation, reward, done: True, info}
    env.close()

`step` hands the model's reply to the server's episode engine (it parses every tool call, runs them, or ends the
episode with the reward); `call_tool` runs one tool directly (a trainer that parses calls itself); `reward` scores a
conversation; `fork(n)` copies the live episode's state into n new episodes (a GRPO group set up once).
Failures raise: BenchmaxInfraError (the server is unreachable, restarted, or lost the episode) or BenchmaxEnvError
(the env failed or refused the request) — never a reward of 0.
"""

import asyncio
import json
from typing import Any, Dict, List, Optional, Sequence, Union

from .transport import BenchmaxClient, BenchmaxError, Rollout


def text_of(content: Any) -> str:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else json.dumps(content)


def _getter(obj: Any) -> Any:
    """`get(key)` on a dict, or attribute access on an object (a pydantic model, a dataclass, an SDK type)."""
    if isinstance(obj, dict):
        return obj.get
    return lambda k, d=None: getattr(obj, k, d)


def openai_tool_calls(calls: Any) -> Optional[List[Dict[str, Any]]]:
    """Tool calls in the OpenAI shape the server takes (`{id, type: "function", function: {name, arguments}}`,
    `arguments` a JSON string), from any of the shapes trainers hand over, as dicts or objects:

    - OpenAI's nested `{id, type, function: {name, arguments}}` (TRL's parse_response, the cookbook's ToolCall);
    - the flat `{id, name, arguments}` of verifiers' `ToolCall` (legacy/types.py and v1/types.py), which every
      verifiers client builds (OpenAI chat/completions, Responses, Anthropic messages, renderer);
    - Anthropic's `{id, name, input}` and OpenAI Responses' `{call_id, name, arguments}` items.

    Arguments may be a JSON string or an object. A call without a name keeps an empty one: the server answers it
    with a tool error the model reads."""
    if not calls:
        return None
    out = []
    for i, c in enumerate(calls):
        get = _getter(c)
        fn = get("function")
        if fn is not None:
            fget = _getter(fn)
            name, args = fget("name"), fget("arguments")
        else:
            name = get("name")
            args = get("arguments")
            if args is None:
                args = get("input")
        if not isinstance(args, str):
            if hasattr(args, "model_dump"):
                args = args.model_dump()
            args = json.dumps(args if args is not None else {})
        cid = get("id") or get("call_id") or "call_%d" % i
        out.append({"id": str(cid), "type": "function", "function": {"name": name if isinstance(name, str) else "", "arguments": args}})
    return out


def openai_messages(messages: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """A conversation in the OpenAI shape the server's reward endpoint validates. A tool message without a
    `tool_call_id` (TRL's) gets the id of the call it answers: the next unanswered call of the assistant before it."""
    out = []
    pending: List[str] = []
    for m in messages:
        msg: Dict[str, Any] = {"role": m.get("role"), "content": text_of(m.get("content"))}
        calls = openai_tool_calls(m.get("tool_calls"))
        if calls:
            msg["tool_calls"] = calls
            pending = [c["id"] for c in calls]
        for k in ("tool_call_id", "name"):
            if m.get(k):
                msg[k] = m[k]
        if msg["role"] == "tool":
            if not msg.get("tool_call_id"):
                msg["tool_call_id"] = pending[0] if pending else "call_%d" % len(out)
            if msg["tool_call_id"] in pending:
                pending.remove(msg["tool_call_id"])
        out.append(msg)
    return out


def tasks_with_prompts(client: BenchmaxClient, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """The server's tasks (no gold data), each with `systemPrompt`: the env's own system prompt for it, without a
    tools section. Read from `GET /v1/tasks?include=systemPrompt`, which creates no rollout. A server from before
    that option answers without `systemPrompt`: then one short-lived rollout per task reads it."""
    tasks = [dict(t) for t in client.tasks(limit, system_prompts=True)]
    for t in tasks:
        if not isinstance(t.get("systemPrompt"), str):
            probe = client.create_rollout(t["id"])
            client.release(probe)
            t["systemPrompt"] = probe.system_prompt or ""
    return tasks


def task_prompts(client: BenchmaxClient, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """`[{task_id, prompt, system_prompt}]` for the server's tasks (no gold data): each task's messages, led by the
    env's own system prompt for it (without a tools section: trainers render tools themselves). Reading them costs no
    rollout (`tasks_with_prompts`)."""
    rows = []
    for t in tasks_with_prompts(client, limit):
        msgs = [dict(m) for m in t.get("messages") or []] or [{"role": "user", "content": t.get("prompt") or ""}]
        system = t.get("systemPrompt") or ""
        if system and not any(m.get("role") == "system" for m in msgs):
            msgs.insert(0, {"role": "system", "content": system})
        rows.append({"task_id": t["id"], "prompt": msgs, "system_prompt": system})
    return rows


class BenchmaxEnv:
    """One episode at a time on a `benchmax serve` server (or a fleet: `url` may list several, comma-separated).

    `messages` is the conversation so far (the reset messages, each reply, each tool result); `tools` the env's tool
    list (OpenAI function shape, from /metadata). A new `reset` releases the episode before it.
    """

    def __init__(
        self,
        url: Union[str, Sequence[str], None] = None,
        token: Optional[str] = None,
        *,
        client: Optional[BenchmaxClient] = None,
        retries: int = 3,
        timeout_s: float = 120.0,
    ):
        self._own_client = client is None
        self.client = client or BenchmaxClient(url, token=token, retries=retries, timeout_s=timeout_s)
        self.rollout: Optional[Rollout] = None
        self.messages: List[Dict[str, Any]] = []
        self.done = False
        self.final: Optional[Dict[str, Any]] = None
        self._tools: Optional[List[Dict[str, Any]]] = None

    # -- what the env offers ---------------------------------------------------------------------------------
    @property
    def tools(self) -> List[Dict[str, Any]]:
        if self._tools is None:
            self._tools = list(self.client.metadata().get("tools") or [])
        return self._tools

    def tasks(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        return self.client.tasks(limit)

    # -- an episode -------------------------------------------------------------------------------------------
    def reset(
        self, task_id: Optional[str] = None, task: Optional[Dict[str, Any]] = None,
        trainer_step: Optional[int] = None, group_id: Optional[str] = None, **_ignored: Any,
    ) -> Dict[str, Any]:
        """Start an episode on the server's task `task_id` (or an inline `task`, or the server's next task):
        `{episode_id, task_id, messages, tools}`. `trainer_step` (SkyRL's global step, the cookbook's batch index)
        and `group_id` tag it in a `serve --record` recording. Other keyword arguments (a dataset row's fields) are
        ignored."""
        self.release()
        rollout, obs = self.client.reset(task_id, task, trainer_step=trainer_step, group_id=group_id)
        self._begin(rollout, obs.get("messages") or [])
        if obs.get("tools") is not None and self._tools is None:
            self._tools = list(obs["tools"])
        return obs

    def start(
        self, task_id: Optional[str] = None, task: Optional[Dict[str, Any]] = None, max_turns: Optional[int] = None, **tags: Any
    ) -> Rollout:
        """Start an episode without its first messages (the trainer has the prompt): the rollout API's create, which
        also takes a server-enforced turn limit; `tags`: `trainer_step` / `group_id`, as in `reset`."""
        self.release()
        return self._begin(self.client.create_rollout(task_id, task, max_turns, **tags), [])

    def _begin(self, rollout: Rollout, messages: Sequence[Dict[str, Any]]) -> Rollout:
        self.rollout = rollout
        self.messages = [dict(m) for m in messages]
        self.done = False
        self.final = None
        return rollout

    def _live(self) -> Rollout:
        if self.rollout is None:
            raise BenchmaxError("no episode: call reset() first")
        if self.done:
            raise BenchmaxError("the episode has ended: call reset() for a new one")
        return self.rollout

    def step(self, content: Optional[str], tool_calls: Any = None) -> Dict[str, Any]:
        """One reply to the server's episode engine: `{observation, reward, done, info}`. Not done: `observation`
        holds `tool_results` and the `messages` to append; done: `reward` is the episode's reward and
        `info` holds `rewards` (components), `passed`, `truncated`. The episode is then released."""
        r = self._live()
        calls = openai_tool_calls(tool_calls)
        msg: Dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            msg["tool_calls"] = calls
        self.messages.append(msg)
        res = self.client.step(r, content, calls)
        obs = res.get("observation") or {}
        if res.get("done"):
            self.done = True
            self.final = {"reward": res.get("reward"), "rewards": obs.get("rewards") or {}, "passed": obs.get("passed")}
            info = {"rewards": obs.get("rewards") or {}, "passed": obs.get("passed"), "truncated": obs.get("truncated") or False}
            return {"observation": obs, "reward": res.get("reward"), "done": True, "info": info}
        self.messages.extend(obs.get("messages") or [])
        return {"observation": obs, "reward": None, "done": False, "info": {}}

    def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Run one tool on the live episode: `{content, isError}` (a model's mistake is `isError: true` with a
        message it can read, not an exception)."""
        return self.client.call_tool(self._live(), name, dict(arguments or {}))

    def call_tool_text(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> str:
        return text_of(self.call_tool(name, arguments).get("content"))

    def reward(self, messages: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """Score a conversation (default: `messages`) on the live episode: `{reward, rewards, passed}`."""
        if self.final is not None and messages is None:
            return dict(self.final)
        out = self.client.reward(self._live(), openai_messages(messages if messages is not None else self.messages))
        self.final = {"reward": out.get("reward"), "rewards": out.get("rewards") or {}, "passed": out.get("passed")}
        return out

    def fork(self, n: int) -> List["BenchmaxEnv"]:
        """n new episodes holding a copy of this one's state (and conversation); they share this env's client."""
        kids = self.client.fork(self._live(), int(n))
        out = []
        for k in kids:
            e = BenchmaxEnv(client=self.client)
            e.rollout = k
            e.messages = [dict(m) for m in self.messages]
            e._tools = self._tools
            out.append(e)
        return out

    def release(self) -> None:
        """Free the live episode on the server (a finished one is freed already)."""
        if self.rollout is not None and not self.done:
            self.done = True
            self.client.release_quietly(self.rollout)

    def close(self) -> None:
        self.release()
        if self._own_client:
            self.client.close()

    def __enter__(self) -> "BenchmaxEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncBenchmaxEnv:
    """`BenchmaxEnv` for asyncio: every call runs in a worker thread (`asyncio.to_thread`), so many episodes proceed
    concurrently on one event loop."""

    def __init__(self, url: Union[str, Sequence[str], None] = None, token: Optional[str] = None, **kw: Any):
        self.sync = kw.pop("env", None) or BenchmaxEnv(url, token, **kw)

    @property
    def messages(self) -> List[Dict[str, Any]]:
        return self.sync.messages

    @property
    def done(self) -> bool:
        return self.sync.done

    async def tools(self) -> List[Dict[str, Any]]:
        return await asyncio.to_thread(lambda: self.sync.tools)

    async def reset(self, task_id: Optional[str] = None, task: Optional[Dict[str, Any]] = None, **kw: Any) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.reset, task_id, task, **kw)

    async def step(self, content: Optional[str], tool_calls: Any = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.step, content, tool_calls)

    async def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.call_tool, name, arguments)

    async def reward(self, messages: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
        return await asyncio.to_thread(self.sync.reward, messages)

    async def fork(self, n: int) -> List["AsyncBenchmaxEnv"]:
        kids = await asyncio.to_thread(self.sync.fork, n)
        return [AsyncBenchmaxEnv(env=k) for k in kids]

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> "AsyncBenchmaxEnv":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
