"""A faithful copy of tinker-cookbook's group rollout loop, without tinker (CI cannot install it).

Read from thinking-machines-lab/tinker-cookbook @ 9dfcc3a2cf44432d621a01005073dc6d76a1e87a (no code copied):
- tinker_cookbook/rl/rollouts.py `do_group_rollout` L246-331: strategy.execute (FailFast), then
  `await builder.compute_group_rewards(result.trajectories, result.envs)`, a TrajectoryGroup of
  (trajectories, rewards_G, metrics_G), and `await builder.cleanup()` in `finally`, on every path.
- tinker_cookbook/rl/rollout_strategy.py FailFast L92-124: `envs = await builder.make_envs()`, then
  `asyncio.gather(*[do_single_rollout(policy, env) for env in envs])`.
- tinker_cookbook/rl/rollout_runner.py `_run_loop` L374-445 (no limits, no hooks): `ob, stop = await
  env.initial_observation()`; loop: `ac = await policy(ob, stop)`; `step = await env.step(ac.tokens,
  extra={"stop_reason": ac.stop_reason})`; a Transition(ob, ac, reward, episode_done, metrics, logs); `ob, stop =
  step.next_observation, step.next_stop_condition`; stop when episode_done.
- tinker_cookbook/rl/types.py TrajectoryGroup.get_total_rewards L429-442: sum of transition rewards + final reward.
"""

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any, List


@dataclass
class TokensWithLogprobs:
    tokens: List[int]
    maybe_logprobs: Any = None
    stop_reason: str = "stop"


@dataclass
class Transition:
    ob: Any
    ac: TokensWithLogprobs
    reward: float
    episode_done: bool
    metrics: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)


@dataclass
class Trajectory:
    transitions: List[Transition]
    final_ob: Any
    stop_reason: Any = None


@dataclass
class TrajectoryGroup:
    trajectories_G: List[Trajectory]
    final_rewards_G: List[float]
    metrics_G: List[dict]

    def get_total_rewards(self) -> List[float]:
        return [sum(t.reward for t in traj.transitions) + r for traj, r in zip(self.trajectories_G, self.final_rewards_G)]


async def do_single_rollout(policy, env) -> Trajectory:
    ob, stop = await env.initial_observation()
    transitions: List[Transition] = []
    while True:
        ac = await policy(ob, stop)
        step = await env.step(ac.tokens, extra={"stop_reason": ac.stop_reason})
        transitions.append(Transition(ob, ac, step.reward, step.episode_done, step.metrics, step.logs))
        ob, stop = step.next_observation, step.next_stop_condition
        if step.episode_done:
            reason = next((k[5:] for k in step.metrics if k.startswith("stop/")), None)
            return Trajectory(transitions, ob, reason)


async def do_group_rollout(builder, policy) -> TrajectoryGroup:
    try:
        envs = await builder.make_envs()
        trajectories = list(await asyncio.gather(*[do_single_rollout(policy, env) for env in envs]))
        rewards_and_metrics = await builder.compute_group_rewards(trajectories, envs)
        rewards, metrics = zip(*rewards_and_metrics)
        return TrajectoryGroup(trajectories, list(rewards), list(metrics))
    finally:
        await builder.cleanup()


class CharTokenizer:
    """A toy tokenizer: one token per character (code point)."""

    def encode(self, text: str) -> List[int]:
        return [ord(c) for c in text]

    def decode(self, tokens: List[int]) -> str:
        return "".join(chr(t) for t in tokens)


@dataclass
class ModelInput:
    tokens: List[int]

    @property
    def length(self) -> int:
        return len(self.tokens)

    def to_ints(self) -> List[int]:
        return list(self.tokens)


class ToyRenderer:
    """The Renderer surface the adapter uses (renderers/base.py L1322-1660): tokenizer, build_generation_prompt,
    get_stop_sequences, parse_response -> (message, termination). ChatML-like text, one token per character."""

    END = "<|im_end|>"

    def __init__(self):
        self.tokenizer = CharTokenizer()

    def build_generation_prompt(self, messages, role="assistant", prefill=None):
        text = "".join("<|im_start|>%s\n%s%s\n" % (m["role"], m.get("content") or "", self.END) for m in messages)
        return ModelInput(self.tokenizer.encode(text + "<|im_start|>%s\n" % role))

    def get_stop_sequences(self):
        return [self.END]

    def parse_response(self, response):
        text = self.tokenizer.decode(response)
        if text.endswith(self.END):
            return {"role": "assistant", "content": text[: -len(self.END)]}, "stop_sequence"
        return {"role": "assistant", "content": text}, "malformed"


class ToolCall:
    """Stand-in for tinker_cookbook.renderers.base.ToolCall (base.py L88-126, a pydantic model): renderers read it by
    attribute (`tool_call.function.name`, `.arguments`, `.id`), so an OpenAI-style dict in the history breaks them."""

    class FunctionBody:
        def __init__(self, name, arguments):
            self.name = name
            self.arguments = arguments

    def __init__(self, function, id=None, type="function"):
        self.function = function
        self.id = id
        self.type = type

    def model_copy(self, update=None):
        out = ToolCall(self.function, self.id, self.type)
        for k, v in (update or {}).items():
            setattr(out, k, v)
        return out


class ToolCallRenderer(ToyRenderer):
    """A renderer that renders tool calls as the cookbook's do (renderers/qwen3.py with base.py `_tool_call_payload`,
    kimi_k2.py's `## Return of {tool_call_id}`): by attribute on ToolCall objects, and a tool message needs its
    tool_call_id. parse_response returns ToolCall objects with no id, as Qwen3's parser does."""

    def render(self, m):
        body = m.get("content") or ""
        for tc in m.get("tool_calls") or []:
            payload = {"name": tc.function.name, "arguments": json.loads(tc.function.arguments)}
            body += "<tool_call>%s</tool_call>" % json.dumps(payload)
        if m["role"] == "tool":
            if not m.get("tool_call_id"):
                raise ValueError("Tool message missing 'tool_call_id' field")
            body = "## Return of %s\n%s" % (m["tool_call_id"], body)
        return "<|im_start|>%s\n%s%s\n" % (m["role"], body, self.END)

    def build_generation_prompt(self, messages, role="assistant", prefill=None):
        return ModelInput(self.tokenizer.encode("".join(self.render(m) for m in messages) + "<|im_start|>%s\n" % role))

    def create_conversation_prefix_with_tools(self, tools, system_prompt=""):
        lines = "\n".join(json.dumps({"name": t["name"], "parameters": t["parameters"]}) for t in tools)
        return [{"role": "system", "content": "%s\n# Tools\n%s" % (system_prompt, lines)}]

    def parse_response(self, response):
        text = self.tokenizer.decode(response)
        if not text.endswith(self.END):
            return {"role": "assistant", "content": text}, "malformed"
        text = text[: -len(self.END)]
        calls = []
        for raw in re.findall(r"<tool_call>(.*?)</tool_call>", text, re.S):
            d = json.loads(raw)
            calls.append(ToolCall(ToolCall.FunctionBody(d["name"], json.dumps(d["arguments"]))))
        msg = {"role": "assistant", "content": re.sub(r"<tool_call>.*?</tool_call>", "", text, flags=re.S)}
        if calls:
            msg["tool_calls"] = calls
        return msg, "stop_sequence"
