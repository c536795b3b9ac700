"""A benchmax env in TRL's GRPOTrainer, both ways it takes environments (huggingface/trl @ f2cd577,
trl/trainer/grpo_trainer.py):

- `environment_factory(url, token)`: a zero-argument factory for `GRPOTrainer(environment_factory=...)`. Each
  instance has the env's tools as methods (name, typed signature and a Google-style docstring built from the tool's
  JSON Schema, which is what TRL renders as the tool schema) and `reset(**row)`, which starts an episode on the
  row's `task_id` (or inline `task`). Tool calls run on the server (`call_tool`); a model's mistake comes back as
  the tool's readable error text. The reward comes from the env: pass `reward_func` (it receives `prompts`,
  `completions` and TRL's `environments`, and asks each episode's server to score prompt + completion).
- `rollout_func(url, token, generate)`: for `GRPOTrainer(rollout_func=...)`. TRL passes one prompt per completion
  slot, laid out by its `RepeatSampler` (each prompt `num_generations` times in a row); this returns one completion
  per slot. Consecutive slots of one prompt form a group: its task is set up once and forked, one episode per slot.
  Each episode runs turns of `generate` (your model call, returning token ids and logprobs) and the server's episode
  engine, and ends scored. It returns TRL's `prompt_ids`, `completion_ids`, `logprobs`, an `env_mask` (0 on
  tool-result tokens) and `env_reward`, which `env_reward_func` hands to TRL as the reward. Token ids are never
  re-tokenized: a turn whose prompt ids do not extend the previous prompt + completion ids is refused
  (re-tokenization drift).

A failed sample (its rollout lost: `BenchmaxRolloutLost`, the server gone and the rollout not rebuilt elsewhere)
gets the reward None, which TRL turns into NaN (`_calculate_rewards`, grpo_trainer.py L1662-1663, L1674): a
completion every reward function left None is unscorable, kept out of its group's baseline and given advantage 0
(`_generate_and_score_completions` L2676-2685, L2730). Never a 0. `rollout_func` also masks all of that sample's
tokens (`env_mask` 0).

`dataset_rows(url, token)` gives `[{"prompt": [...], "task_id": ...}]` rows from the server's tasks (no gold data;
reading them creates no rollout). Nothing here imports TRL.
"""

import inspect
import typing
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .env import BenchmaxEnv, openai_messages, task_prompts, text_of
from .transport import BenchmaxClient, BenchmaxError, BenchmaxRolloutLost

# transformers' get_json_schema (utils/chat_template_utils.py) maps int/float/str/bool, List[X] to an array and
# anything else (dict) to an object: a bare `list` would come out as an object
_JSON_TYPES: Dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": List[Any], "object": dict}
_RESERVED = {"reset", "get_reward"}


def _tool_method(spec: Dict[str, Any]) -> Callable[..., str]:
    """A method named after the tool whose signature and docstring describe its parameters."""
    name = spec["name"]
    if not name.isidentifier() or name.startswith("_") or name in _RESERVED:
        raise BenchmaxError(
            "tool %r cannot be a TRL environment method (TRL calls methods by name; names starting with '_' and "
            "'reset'/'get_reward' are not tools)" % name
        )
    params = spec.get("parameters") or {}
    props: Dict[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or [])
    sig = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: Dict[str, Any] = {"return": str}
    doc_args = []
    for pname in sorted(props, key=lambda p: (p not in required, list(props).index(p))):
        if not pname.isidentifier():
            raise BenchmaxError("tool %r: parameter %r is not a Python identifier" % (name, pname))
        schema = props[pname] or {}
        t = schema.get("type")
        py = _JSON_TYPES.get(t if isinstance(t, str) else "", str)
        if pname not in required:
            py = Optional[py]
        annotations[pname] = py
        default = inspect.Parameter.empty if pname in required else None
        sig.append(inspect.Parameter(pname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=py))
        desc = " ".join(str(schema.get("description") or pname).split())
        doc_args.append("    %s: %s" % (pname, desc))

    def method(self, *args: Any, **kwargs: Any) -> str:
        bound = inspect.Signature(sig).bind(self, *args, **kwargs)
        arguments = {k: v for k, v in bound.arguments.items() if k != "self" and v is not None}
        return self._call(name, arguments)

    method.__name__ = name
    method.__qualname__ = "BenchmaxTRLEnv." + name
    method.__signature__ = inspect.Signature(sig, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    description = " ".join(str(spec.get("description") or name).split())
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "") + "\n\nReturns:\n    The tool's result.\n"
    return method


class BenchmaxTRLEnv:
    """Base of the classes `environment_class` builds: one episode per generation, the env's tools as methods."""

    def __init__(self, url: Any = None, token: Optional[str] = None, client: Optional[BenchmaxClient] = None):
        self._env = BenchmaxEnv(url, token, client=client)
        #: the episode's rollout was lost (BenchmaxRolloutLost): the sample fails, its reward is None
        self._lost: Optional[BenchmaxRolloutLost] = None

    def reset(self, task_id: Optional[str] = None, task: Optional[Dict[str, Any]] = None, **_row: Any) -> None:
        """Start an episode on the row's task (TRL passes the dataset row's fields). Returns None: the prompt comes
        from the dataset. A rollout that could not be created anywhere (BenchmaxRolloutLost) fails this sample
        only: its tool calls then raise (TRL shows the model the error) and its reward is None."""
        if task_id is None and task is None:
            raise BenchmaxError("the dataset row names no task: give it a task_id column (dataset_rows writes one)")
        self._lost = None
        try:
            self._env.start(task_id, task)
        except BenchmaxRolloutLost as e:
            self._lost = e

    def _call(self, name: str, arguments: Dict[str, Any]) -> str:
        if self._lost is not None:
            raise self._lost
        try:
            res = self._env.call_tool(name, arguments)
        except BenchmaxRolloutLost as e:
            self._lost = e
            raise  # TRL's tool loop shows the model {"error": ...}; the sample's reward is None
        return text_of(res.get("content"))

    def _score(self, messages: Sequence[Dict[str, Any]]) -> Optional[float]:
        """The env's reward for the conversation (None: the rollout was lost); the episode is released."""
        try:
            if self._lost is not None:
                return None
            try:
                out = self._env.reward(openai_messages(messages))
            except BenchmaxRolloutLost as e:
                self._lost = e
                return None
        finally:
            self._env.release()
        reward = out.get("reward")
        if not isinstance(reward, (int, float)) or isinstance(reward, bool):
            raise BenchmaxError("the env server returned no numeric reward: %r" % (reward,))
        return float(reward)

    def _close(self) -> None:
        self._env.close()


def environment_class(tools: Sequence[Dict[str, Any]], name: str = "BenchmaxTRLEnv") -> type:
    """A BenchmaxTRLEnv subclass with one method per tool (OpenAI function specs: name, description, parameters)."""
    return type(name, (BenchmaxTRLEnv,), {t["name"]: _tool_method(t) for t in tools})


def environment_factory(url: Any = None, token: Optional[str] = None) -> Callable[[], BenchmaxTRLEnv]:
    """`GRPOTrainer(environment_factory=environment_factory(url, token), reward_funcs=[reward_func])`. The env's
    tools are read once from the server's /metadata; each instance keeps its own connections."""
    probe = BenchmaxClient(url, token=token)
    try:
        tools = probe.metadata().get("tools") or []
    finally:
        probe.close()
    cls = environment_class(tools)

    def factory() -> BenchmaxTRLEnv:
        return cls(url, token)

    return factory


def _conversation(prompt: Any, completion: Any) -> List[Dict[str, Any]]:
    p = list(prompt) if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
    c = list(completion) if isinstance(completion, list) else [{"role": "assistant", "content": str(completion)}]
    return p + c


def reward_func(prompts: List[Any], completions: List[Any], environments: Optional[List[Any]] = None, **_kw: Any) -> List[Optional[float]]:
    """TRL reward function: each rollout's reward from its env server (prompt + completion, tool turns included).
    A lost rollout, and a row whose environment is not a benchmax env, get None (TRL: NaN, unscored)."""
    if environments is None:
        raise BenchmaxError("reward_func needs TRL's `environments` (use it with environment_factory)")
    out: List[Optional[float]] = []
    for prompt, completion, env in zip(prompts, completions, environments):
        out.append(env._score(_conversation(prompt, completion)) if isinstance(env, BenchmaxTRLEnv) else None)
    return out


reward_func.__name__ = "benchmax_reward"


def env_reward_func(completions: List[Any], env_reward: Optional[List[Optional[float]]] = None, **_kw: Any) -> List[Optional[float]]:
    """TRL reward function for `rollout_func`: the env's reward it recorded per completion (None for a failed
    sample, which TRL reads as NaN: unscored)."""
    if env_reward is None:
        raise BenchmaxError("env_reward_func needs the env_reward field (use it with benchmax_client.trl.rollout_func)")
    return [None if r is None else float(r) for r in env_reward]


env_reward_func.__name__ = "benchmax_env_reward"


def dataset_rows(url: Any = None, token: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """Training rows from the server's tasks: `{"prompt": [system, user…], "task_id"}`. The system message is the
    env's own prompt without a tools section (TRL renders the tools from the environment's methods)."""
    c = BenchmaxClient(url, token=token)
    try:
        return [{"prompt": r["prompt"], "task_id": r["task_id"]} for r in task_prompts(c, limit)]
    finally:
        c.close()


def _last_user_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m for m in prompt if m.get("role") == "user"]
    return text_of(users[-1].get("content")) if users else ""


def rollout_func(
    url: Any = None,
    token: Optional[str] = None,
    generate: Optional[Callable[[List[Dict[str, Any]], List[Dict[str, Any]]], Dict[str, Any]]] = None,
    *,
    max_turns: int = 10,
    num_generations: Optional[int] = None,
    task_of: Optional[Callable[[Any], str]] = None,
    client: Optional[BenchmaxClient] = None,
) -> Callable[[List[Any], Any], Dict[str, List[Any]]]:
    """`GRPOTrainer(rollout_func=rollout_func(url, token, generate), reward_funcs=[env_reward_func])`.

    `generate(messages, tools)` is one model call on the conversation so far; it returns
    `{"prompt_ids", "completion_ids", "logprobs", "text"}` (e.g. vLLM's `prompt_token_ids`, `token_ids` and
    `logprobs`). `task_of(prompt)` names a prompt's task (default: the task whose prompt is the prompt's last user
    message, from the server's /v1/tasks).

    The returned function gives one completion per prompt slot TRL passes. Consecutive slots holding the same prompt
    (TRL's RepeatSampler repeats each prompt `num_generations` times in a row) are one group: one rollout created,
    forked for the others. `num_generations` (default: the trainer's) caps a group, so two dataset rows with the
    same prompt side by side stay two groups. `client`: a BenchmaxClient to use instead of one made from
    `url` / `token`.
    """
    if generate is None:
        raise BenchmaxError("rollout_func needs generate(messages, tools) -> {prompt_ids, completion_ids, logprobs, text}")
    client = client or BenchmaxClient(url, token=token)
    cache: Dict[str, str] = {}
    tools_cache: List[List[Dict[str, Any]]] = []

    def default_task_of(prompt: Any) -> str:
        if not cache:
            for t in client.tasks():
                text = t.get("prompt") or _last_user_text(t.get("messages") or [])
                cache.setdefault(text, t["id"])
        key = _last_user_text(prompt)
        if key not in cache:
            raise BenchmaxError("no task of the env server has the prompt %r; pass task_of" % key[:80])
        return cache[key]

    def one_episode(env: Optional[BenchmaxEnv], prompt_messages: List[Dict[str, Any]], tools: List[Dict[str, Any]]) -> Dict[str, Any]:
        messages = [dict(m) for m in prompt_messages]
        prompt_ids: Optional[List[int]] = None
        completion_ids: List[int] = []
        logprobs: List[float] = []
        mask: List[int] = []
        expected: Optional[List[int]] = None  # what the next prompt must start with

        def result(reward: Optional[float]) -> Dict[str, Any]:
            # a failed sample (reward None): every token masked, so it adds nothing to the loss
            m = mask if reward is not None else [0] * len(mask)
            return {"prompt_ids": prompt_ids or [], "completion_ids": completion_ids, "logprobs": logprobs, "env_mask": m, "reward": reward}

        for turn in range(max_turns):
            g = generate(messages, tools)
            p, c = list(g["prompt_ids"]), list(g["completion_ids"])
            lp = list(g.get("logprobs") or [0.0] * len(c))
            if prompt_ids is None:
                prompt_ids = p
            else:
                if p[: len(expected or [])] != expected:
                    raise BenchmaxError(
                        "re-tokenization drift at turn %d: the prompt ids do not extend the previous prompt and "
                        "completion ids (render tool results as tokens appended to them)" % (turn + 1)
                    )
                extra = p[len(expected or []) :]  # the tool results, as the backend tokenized them
                completion_ids += extra
                logprobs += [0.0] * len(extra)
                mask += [0] * len(extra)
            completion_ids += c
            logprobs += lp
            mask += [1] * len(c)
            expected = p + c
            messages.append({"role": "assistant", "content": g.get("text") or ""})
            if env is None:  # the group's rollout could not be made: one turn for the ids, then failed
                return result(None)
            try:
                out = env.step(g.get("text") or "")
            except BenchmaxRolloutLost:
                return result(None)
            if out["done"]:
                return result(float(out["reward"]))
            messages.extend(out["observation"].get("messages") or [])
        # the turn budget ran out with the episode live: score the conversation as it stands
        try:
            score = env.reward(messages) if env is not None else None
        except BenchmaxRolloutLost:
            score = None
        return result(None if score is None else float(score["reward"]))

    def groups_of(prompts: List[Any], cap: Optional[int]) -> List[Tuple[str, Any, List[int]]]:
        """(task id, prompt, slot indexes): runs of consecutive slots with the same prompt, at most `cap` long."""
        find = task_of or default_task_of
        out: List[Tuple[str, Any, List[int]]] = []
        for i, prompt in enumerate(prompts):
            last = out[-1] if out else None
            if last is not None and last[1] == prompt and (not cap or len(last[2]) < cap):
                last[2].append(i)
            else:
                out.append((find(prompt), prompt, [i]))
        return out

    def rollout(prompts: List[Any], trainer: Any = None) -> Dict[str, List[Any]]:
        cap = num_generations or getattr(trainer, "num_generations", None)
        slots: List[Optional[Dict[str, Any]]] = [None] * len(prompts)
        for task_id, prompt, idx in groups_of(list(prompts), cap):
            pm = list(prompt) if isinstance(prompt, list) else [{"role": "user", "content": str(prompt)}]
            group: List[Optional[BenchmaxEnv]] = []
            try:
                first = BenchmaxEnv(client=client)
                try:
                    first.start(task_id, max_turns=max_turns)
                    group = [first] + (first.fork(len(idx) - 1) if len(idx) > 1 else [])
                except BenchmaxRolloutLost:
                    first.release()
                    group = [None] * len(idx)  # no live server took the group: its samples fail
                if not tools_cache:
                    tools_cache.append(client.metadata().get("tools") or [])
                tools = tools_cache[0]
                for slot, env in zip(idx, group):
                    slots[slot] = one_episode(env, pm, tools)
            finally:
                for env in group:
                    if env is not None:
                        env.release()
        out: Dict[str, List[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "env_reward": []}
        for r in slots:
            assert r is not None
            for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask"):
                out[k].append(r[k])
            out["env_reward"].append(r["reward"])
        return out

    return rollout


def tool_schema(method: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON schema a chat template gets for an environment method, as transformers' get_json_schema builds it
    from the signature and the Google-style docstring (for checks without transformers)."""
    sig = inspect.signature(method)
    doc = inspect.getdoc(method) or ""
    desc = doc.split("\n\nArgs:")[0].split("\n\nReturns:")[0].strip()
    arg_docs = dict(
        (line.strip().split(":", 1)[0], line.split(":", 1)[1].strip())
        for line in doc.split("Args:\n", 1)[-1].split("\n\nReturns:")[0].splitlines()
        if "Args:\n" in doc and ":" in line
    )
    props, required = {}, []
    names = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
    for p in sig.parameters.values():
        ann = p.annotation
        if typing.get_origin(ann) is typing.Union:  # Optional[X]
            ann = [a for a in typing.get_args(ann) if a is not type(None)][0]
        kind = "array" if typing.get_origin(ann) is list else names.get(ann, "object")
        props[p.name] = {"type": kind, "description": arg_docs.get(p.name, "")}
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
    return {"type": "function", "function": {"name": method.__name__, "description": desc, "parameters": {"type": "object", "properties": props, "required": required}}}


__all__ = [
    "BenchmaxTRLEnv",
    "dataset_rows",
    "env_reward_func",
    "environment_class",
    "environment_factory",
    "reward_func",
    "rollout_func",
    "tool_schema",
]
