"""TRL GRPOTrainer's environment path, step by step, without torch/transformers (written by us; no code copied).

Read from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/grpo_trainer.py:
- __init__ L611-696: each factory is called once to probe; `inspect.getmembers(instance, predicate=inspect.ismethod)`
  gives `reset` (required), `get_reward` (an extra reward source) and the tools (every other public method).
- _generate_and_score_completions L2277-2335: one pooled instance per example; per example a sync/async tool dict of
  its environment's methods (by `__name__`); `environment.reset(**x)` with the example's fields; a returned string
  is appended to the last user message.
- _tool_call_loop L1933-2145: for each completion with tool_calls: append the assistant message, call
  `tool_dict[name](**function["arguments"])` (an exception becomes `{"error": str(e)}`), append
  `{"role": "tool", "name": name, "content": str(result)}`, then generate again on prompt + completion + the tool
  suffix ids (no re-tokenization), parse with parse_response, until no tool call or max_tool_calling_iterations.
- _calculate_rewards L1600-1660: reward_func(prompts=..., completions=..., completion_ids=..., **columns,
  environments=self.environments).

`TRL_CHECKOUT=<a trl checkout>` makes `trl_functions()` load TRL's own `_tool_call_loop`, `_get_tool_suffix_ids`,
`parse_response` and `_validate_tool_calls` from that checkout's source instead (trainer_runs/trl_run.sh), so the
same tests run the library's loop code.
"""

import ast
import asyncio
import inspect
import json
import os
import re
from types import SimpleNamespace
from typing import Any, Dict, List, Optional


class ChatMLTokenizer:
    """A character tokenizer with Qwen2.5's chat template (ChatML; tools in <tools>, calls in <tool_call>, results
    as <tool_response> in a user turn) and a transformers-style `parse_response` (Hermes calls, arguments as dicts)."""

    SPECIAL = ["<|im_start|>", "<|im_end|>"]
    eos_token = "<|im_end|>"

    def __init__(self):
        self.eos_token_id = 0x110000 + 1

    def encode(self, text: str) -> List[int]:
        out: List[int] = []
        for part in re.split(r"(<\|im_start\|>|<\|im_end\|>)", text):
            if part in self.SPECIAL:
                out.append(0x110000 + self.SPECIAL.index(part))
            else:
                out.extend(ord(c) for c in part)
        return out

    def decode(self, ids: List[int], skip_special_tokens: bool = False) -> str:
        return "".join(
            ("" if skip_special_tokens else self.SPECIAL[i - 0x110000]) if i >= 0x110000 else chr(i) for i in ids
        )

    def render(self, messages: List[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]] = None, add_generation_prompt: bool = False) -> str:
        out = ""
        msgs = list(messages)
        if tools:
            sys_text = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
            if msgs and msgs[0]["role"] == "system":
                msgs = msgs[1:]
            lines = "\n".join(json.dumps(t) for t in tools)
            out += "<|im_start|>system\n%s\n\n# Tools\n<tools>\n%s\n</tools><|im_end|>\n" % (sys_text, lines)
        i = 0
        while i < len(msgs):
            m = msgs[i]
            if m["role"] == "tool":
                block = []
                while i < len(msgs) and msgs[i]["role"] == "tool":
                    block.append("<tool_response>\n%s\n</tool_response>" % msgs[i]["content"])
                    i += 1
                out += "<|im_start|>user\n%s<|im_end|>\n" % "\n".join(block)
                continue
            body = m.get("content") or ""
            for tc in m.get("tool_calls") or []:
                fn = tc["function"]
                body += "\n<tool_call>\n%s\n</tool_call>" % json.dumps({"name": fn["name"], "arguments": fn["arguments"]})
            out += "<|im_start|>%s\n%s<|im_end|>\n" % (m["role"], body)
            i += 1
        if add_generation_prompt:
            out += "<|im_start|>assistant\n"
        return out

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True, tools=None, chat_template=None, return_dict=False, **_kw):
        text = self.render(messages, tools, add_generation_prompt)
        return self.encode(text) if tokenize else text

    def parse_response(self, ids: List[int]) -> Dict[str, Any]:
        text = self.decode(ids)
        calls = []
        for raw in re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.S):
            d = json.loads(raw)  # a malformed call raises ValueError: parse_response falls back to text
            calls.append({"type": "function", "function": {"name": d["name"], "arguments": d["arguments"]}})
        content = re.sub(r"\s*<tool_call>.*?</tool_call>", "", text, flags=re.S)
        out: Dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            out["tool_calls"] = calls
        return out


# -- our replicas of the TRL functions (used unless TRL_CHECKOUT is set) -------------------------------------------


def _parse_response(tokenizer, ids, prefix=None):
    try:
        parsed = tokenizer.parse_response(ids)
        if isinstance(parsed.get("content"), str):
            parsed["content"] = parsed["content"].removesuffix(tokenizer.eos_token)
        if not parsed.get("content"):
            parsed["content"] = ""
    except (ValueError, TypeError):
        parsed = {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}
    return parsed


def _get_tool_suffix_ids(self, tool_messages):
    dummy = [
        {"role": "user", "content": "dummy"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}]},
    ]
    prefix = self.processing_class.apply_chat_template(dummy, add_generation_prompt=False, tokenize=True)
    full = self.processing_class.apply_chat_template(dummy + tool_messages, add_generation_prompt=True, tokenize=True)
    eos = [i for i, t in enumerate(prefix) if t == self._tokenizer.eos_token_id]
    if eos:
        prefix = prefix[: eos[-1] + 1]
    assert full[: len(prefix)] == prefix
    return full[len(prefix) :]


def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, logprobs, images, multimodal_fields):
    tool_calls = [c[0].get("tool_calls") for c in completions]
    idxs = [i for i, tc in enumerate(tool_calls) if tc]
    tool_calls = [tool_calls[i] for i in idxs]
    tool_mask = [[1] * len(ids) for ids in completion_ids]
    count = failures = iteration = 0
    while idxs and iteration < self.max_tool_calling_iterations:
        for j, i in enumerate(idxs):
            prompts[i].append(completions[i][-1])
            results = []
            for tc in tool_calls[j]:
                count += 1
                name = tc["function"]["name"]
                try:
                    if name not in self._sync_tool_dicts[i]:
                        raise ValueError(f"Tool {name} not found.")
                    results.append((name, self._sync_tool_dicts[i][name](**tc["function"]["arguments"])))
                except Exception as e:
                    failures += 1
                    results.append((name, {"error": str(e)}))
            for name, result in results:
                msg = {"role": "tool", "name": name, "content": str(result)}
                prompts[i].append(msg)
                completions[i].append(msg)
        pct_ids = []
        for i in idxs:
            tool_messages = []
            for m in reversed(completions[i]):
                if m["role"] != "tool":
                    break
                tool_messages.insert(0, m)
            pct_ids.append(prompt_ids[i] + completion_ids[i] + self._get_tool_suffix_ids(tool_messages))
        post_ids, post_lp = self._generate_single_turn(pct_ids, None, {})
        for j, i in enumerate(idxs):
            tool_len = len(pct_ids[j]) - len(prompt_ids[i]) - len(completion_ids[i])
            tool_mask[i] += [0] * tool_len + [1] * len(post_ids[j])
            if logprobs is not None:
                logprobs[i] += [0.0] * tool_len + post_lp[j]
            completion_ids[i] = pct_ids[j][len(prompt_ids[i]) :] + post_ids[j]
        post = [_parse_response(self._tokenizer, ids) if ids else {} for ids in post_ids]
        for j, i in enumerate(idxs):
            if post[j]:
                completions[i].append(post[j])
        tool_calls = [c.get("tool_calls") for c in post]
        idxs = [i for i, tc in zip(idxs, tool_calls) if tc]
        tool_calls = [tc for tc in tool_calls if tc]
        iteration += 1
    return tool_mask, completions, completion_ids, logprobs, count, failures, [[] for _ in completion_ids]


def _extract(path: str, names: List[str], class_name: Optional[str] = None) -> Dict[str, str]:
    with open(path, encoding="utf-8") as f:
        src = f.read()
    tree = ast.parse(src)
    body = tree.body
    if class_name:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name).body
    out = {}
    for n in body:
        if isinstance(n, ast.FunctionDef) and n.name in names:
            out[n.name] = ast.get_source_segment(src, n)
    missing = set(names) - set(out)
    if missing:
        raise RuntimeError("not found in %s: %s" % (path, sorted(missing)))
    return out


def trl_functions() -> SimpleNamespace:
    """(tool_call_loop, get_tool_suffix_ids, parse_response, source): TRL's own from TRL_CHECKOUT, else ours."""
    checkout = os.environ.get("TRL_CHECKOUT")
    if not checkout:
        return SimpleNamespace(tool_call_loop=_tool_call_loop, get_tool_suffix_ids=_get_tool_suffix_ids, parse_response=_parse_response, source="replica")
    import textwrap

    ns: Dict[str, Any] = {"asyncio": asyncio, "inspect": inspect, "json": json, "re": re}
    utils = _extract(os.path.join(checkout, "trl", "chat_template_utils.py"), ["parse_response", "_validate_tool_calls"])
    ns["_SUPPORTS_RESPONSE_TEMPLATE"] = False
    ns["PreTrainedTokenizerBase"] = object
    for code in utils.values():
        exec(compile(code, "trl/chat_template_utils.py", "exec"), ns)
    methods = _extract(os.path.join(checkout, "trl", "trainer", "grpo_trainer.py"), ["_tool_call_loop", "_get_tool_suffix_ids"], "GRPOTrainer")
    ns["prepare_multimodal_messages"] = lambda m: m
    for code in methods.values():
        exec(compile(textwrap.dedent(code), "trl/trainer/grpo_trainer.py", "exec"), ns)
    return SimpleNamespace(tool_call_loop=ns["_tool_call_loop"], get_tool_suffix_ids=ns["_get_tool_suffix_ids"], parse_response=ns["parse_response"], source=checkout)


class FakeGRPOTrainer:
    """The parts of GRPOTrainer the environment path runs, with a scripted generator in place of the model."""

    def __init__(self, environment_factory, reward_funcs, generator, max_tool_calling_iterations=5, tokenizer=None):
        self.fns = trl_functions()
        self.processing_class = self._tokenizer = tokenizer or ChatMLTokenizer()
        self.chat_template = None
        self.chat_template_kwargs = {}
        self._is_vlm = False
        self.use_vllm = False
        self.model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=1 << 20))
        self.max_completion_length = 1 << 20
        self.max_tool_calling_iterations = max_tool_calling_iterations
        self.generator = generator
        self.reward_funcs = list(reward_funcs)
        # __init__ L626-690: probe one instance: reset required, get_reward a reward source, other methods tools
        instance = environment_factory()
        methods, has_reset = [], False
        for name, member in inspect.getmembers(instance, predicate=inspect.ismethod):
            if name == "reset":
                has_reset = True
            elif name == "get_reward":
                self.reward_funcs.append(lambda environments, **kw: [e.get_reward() for e in environments])
            elif not name.startswith("_"):
                methods.append(member)
        if not has_reset:
            raise ValueError("Each environment instance returned by `environment_factory` must define a callable `reset`.")
        self.factory = environment_factory
        self.pool = [instance]
        self.tools = methods

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields):
        outs = [self.generator(self._tokenizer.decode(ids)) for ids in prompt_ids]
        ids = [self._tokenizer.encode(t) for t in outs]
        return ids, [[-0.5] * len(i) for i in ids]

    def generate_and_score(self, inputs: List[Dict[str, Any]]) -> Dict[str, Any]:
        from benchmax_client.trl import tool_schema

        while len(self.pool) < len(inputs):
            self.pool.append(self.factory())
        self.environments = self.pool[: len(inputs)]
        self._sync_tool_dicts, self._async_tool_dicts = [], []
        for env in self.environments:
            members = [m for n, m in inspect.getmembers(env, predicate=inspect.ismethod) if n not in ("reset", "get_reward") and not n.startswith("_")]
            self._sync_tool_dicts.append({m.__name__: m for m in members if not inspect.iscoroutinefunction(m)})
            self._async_tool_dicts.append({m.__name__: m for m in members if inspect.iscoroutinefunction(m)})
        prompts = [list(x["prompt"]) for x in inputs]
        for i, (env, x) in enumerate(zip(self.environments, inputs)):
            obs = env.reset(**x)
            if obs is not None:
                prompts[i] = prompts[i][:-1] + [{**prompts[i][-1], "content": prompts[i][-1]["content"] + obs}]
        original_prompts = [list(p) for p in prompts]
        schemas = [tool_schema(m) for m in self.tools]
        prompt_ids = [self._tokenizer.apply_chat_template(p, add_generation_prompt=True, tools=schemas) for p in prompts]
        completion_ids, logprobs = self._generate_single_turn(prompt_ids, None, {})
        completions = [[self.fns.parse_response(self._tokenizer, ids)] for ids in completion_ids]
        mask, completions, completion_ids, logprobs, n_calls, n_fail, _ = self.fns.tool_call_loop(
            self, prompts, prompt_ids, completion_ids, completions, logprobs, None, {}
        )
        columns = {k: [x[k] for x in inputs] for k in inputs[0] if k != "prompt"}
        rewards = [
            f(prompts=original_prompts, completions=completions, completion_ids=completion_ids, environments=self.environments, **columns)
            for f in self.reward_funcs
        ]
        return {
            "prompts": original_prompts,
            "prompt_text": [self._tokenizer.decode(p) for p in prompt_ids],
            "completions": completions,
            "completion_ids": completion_ids,
            "tool_mask": mask,
            "tool_calls": n_calls,
            "tool_failures": n_fail,
            "rewards": rewards,
        }


# bind the loop functions as methods of the fake trainer (TRL's are methods of GRPOTrainer)
def _bind():
    fns = trl_functions()
    FakeGRPOTrainer._get_tool_suffix_ids = fns.get_tool_suffix_ids


_bind()
