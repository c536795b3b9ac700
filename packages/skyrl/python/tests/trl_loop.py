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


# -- the rollout_func path: RepeatSampler → _generate → _calculate_rewards ------------------------------------------
#
# Read from trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8:
# - trl/trainer/utils.py RepeatSampler L695-788: each index of a batch of `batch_size` unique indices is yielded
#   `mini_repeat_count` times in a row (GRPOTrainer._get_train_sampler L1264-1271: mini_repeat_count=num_generations,
#   batch_size=generation_batch_size // num_generations).
# - trl/trainer/grpo_trainer.py _generate L2143-2258: `output = self.rollout_func(prompts, self)`; the keys
#   prompt_ids, completion_ids, logprobs are required, every other key is an extra field; `env_mask` is popped as the
#   tool mask; completions are decoded per completion_ids entry; `ids[-1]` of every completion is read (L2238).
# - _generate_and_score_completions L2660-2668: list extra fields are handed to input i by index; then
#   _calculate_rewards L1612-1703: reward_func(prompts=, completions=, completion_ids=, **columns of the inputs);
#   None becomes NaN (L1662-1663); one row per prompt slot.


class RepeatSamplerReplica:
    """trl.trainer.utils.RepeatSampler, unshuffled."""

    def __init__(self, data_source, mini_repeat_count, batch_size=1, repeat_count=1, shuffle=False, seed=None):
        self.n, self.mini, self.batch, self.repeat = len(data_source), mini_repeat_count, batch_size, repeat_count

    def __iter__(self):
        idx = list(range(self.n))
        chunks = [idx[i : i + self.batch] for i in range(0, len(idx), self.batch)]
        for chunk in (c for c in chunks if len(c) == self.batch):
            for _ in range(self.repeat):
                for i in chunk:
                    for _ in range(self.mini):
                        yield i


def _generate_replica(self, prompts):
    import copy

    prompts = copy.deepcopy(prompts)
    output = self.rollout_func(prompts, self)
    missing = {"prompt_ids", "completion_ids", "logprobs"} - output.keys()
    if missing:
        raise ValueError(f"rollout_func must return keys {sorted(missing)} in its output dict.")
    extra_fields = {k: v for k, v in output.items() if k not in {"prompt_ids", "completion_ids", "logprobs"}}
    prompt_ids, completion_ids, logprobs = output["prompt_ids"], output["completion_ids"], output["logprobs"]
    contents = self.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
    completions = [[{"role": "assistant", "content": c}] for c in contents]
    tool_mask = extra_fields.pop("env_mask", None)
    lengths = [sum(m) for m in tool_mask] if tool_mask is not None else [len(c) for c in completion_ids]
    eos = [self._tokenizer.eos_token_id, self._tokenizer.pad_token_id]
    is_truncated = [ids[-1] not in eos for ids in completion_ids]
    self._metrics["train"]["completions/mean_length"].append(sum(lengths) / len(lengths))
    self._metrics["train"]["completions/clipped_ratio"].append(sum(is_truncated) / len(is_truncated))
    return prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, None, []


def _calculate_rewards_replica(self, inputs, prompts, completions, completion_ids_list):
    import math

    keys = [k for k in inputs[0] if k not in ["prompt", "completion", "completion_ids"]]
    kwargs = {k: [x[k] for x in inputs] for k in keys}
    rows = [[0.0] * len(self.reward_funcs) for _ in prompts]
    for i, f in enumerate(self.reward_funcs):
        out = f(prompts=prompts, completions=completions, completion_ids=completion_ids_list, **kwargs)
        for j, r in enumerate(out):
            rows[j][i] = math.nan if r is None else float(r)
    return rows


def _numpy_torch():
    """torch as _generate and _calculate_rewards use it, on numpy (TRL_CHECKOUT runs; the pyenv python has numpy)."""
    import numpy as np

    class Tensor(np.ndarray):
        def all(self, dim=None, **kw):
            return np.asarray(self).all(axis=dim).view(Tensor)

        def any(self, dim=None, **kw):
            return np.asarray(self).any(axis=dim).view(Tensor)

        def sum(self, dim=None, **kw):
            return np.asarray(self).sum(axis=dim).view(Tensor)

        def mean(self, dim=None, **kw):
            return np.asarray(self).mean(axis=dim).view(Tensor)

        def min(self, *a, **kw):
            return np.asarray(self).min().view(Tensor)

        def max(self, *a, **kw):
            return np.asarray(self).max().view(Tensor)

        def float(self):
            return np.asarray(self, dtype=np.float32).view(Tensor)

        def nonzero(self, as_tuple=False):
            return tuple(np.asarray(x).view(Tensor) for x in np.nonzero(np.asarray(self)))

    def tensor(data, dtype=None, device=None):
        return np.asarray(data, dtype=np.float32 if dtype == "float32" else None).view(Tensor)

    def zeros(*shape, device=None, dtype=None):
        return np.zeros(shape).view(Tensor)

    torch = SimpleNamespace(
        tensor=tensor, zeros=zeros, isnan=lambda t: np.isnan(np.asarray(t)).view(Tensor), nan=float("nan"),
        float32="float32", nn=SimpleNamespace(Module=type("Module", (), {})),
    )  # fmt: skip
    return torch


def trl_rollout_functions() -> SimpleNamespace:
    """(RepeatSampler, _generate, _calculate_rewards, source): TRL's own from TRL_CHECKOUT, else the replicas."""
    checkout = os.environ.get("TRL_CHECKOUT")
    if not checkout:
        return SimpleNamespace(RepeatSampler=RepeatSamplerReplica, generate=_generate_replica, calculate_rewards=_calculate_rewards_replica, source="replica")
    import contextlib
    import copy
    import logging
    import textwrap

    torch = _numpy_torch()
    ns: Dict[str, Any] = {
        "torch": torch, "nn": torch.nn, "copy": copy, "inspect": inspect, "asyncio": asyncio,
        "transformers": SimpleNamespace(__version__="4.57.0"), "Version": lambda v: tuple(int(x) for x in v.split(".")[:3]),
        "profiling_context": lambda trainer, name: contextlib.nullcontext(), "gather": lambda t: t,
        "logger": logging.getLogger("trl"), "Sampler": object, "Sized": object,
        "apply_chat_template": None, "parse_response": None, "Any": Any,
    }  # fmt: skip
    for path, names, cls in (
        (os.path.join(checkout, "trl", "data_utils.py"), ["is_conversational"], None),
        (os.path.join(checkout, "trl", "trainer", "grpo_trainer.py"), ["_generate", "_calculate_rewards"], "GRPOTrainer"),
    ):
        for code in _extract(path, names, cls).values():
            exec(compile(textwrap.dedent(code), path[len(checkout) + 1 :], "exec"), ns)
    with open(os.path.join(checkout, "trl", "trainer", "utils.py"), encoding="utf-8") as f:
        src = f.read()
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "RepeatSampler")
    exec(compile(ast.get_source_segment(src, node), "trl/trainer/utils.py", "exec"), ns)
    calc = ns["_calculate_rewards"]

    def calculate_rewards(self, *a):
        return [[float(x) for x in row] for row in calc(self, *a).tolist()]

    return SimpleNamespace(RepeatSampler=ns["RepeatSampler"], generate=ns["_generate"], calculate_rewards=calculate_rewards, source=checkout)


class RolloutFuncTrainer:
    """The parts of GRPOTrainer a generation step with `rollout_func` runs: the sampler's slots, `_generate`, the
    extra fields handed to the inputs, `_calculate_rewards`."""

    def __init__(self, rollout_func, reward_funcs, num_generations, tokenizer=None):
        from collections import defaultdict

        self.fns = trl_rollout_functions()
        self.rollout_func = rollout_func
        self.reward_funcs = list(reward_funcs)
        self.reward_processing_classes = [None] * len(self.reward_funcs)
        self.reward_func_names = [f.__name__ for f in self.reward_funcs]
        self.num_generations = num_generations
        self.processing_class = self._tokenizer = tokenizer or ChatMLTokenizer()
        self._tokenizer.pad_token_id = self._tokenizer.eos_token_id
        self.processing_class.batch_decode = lambda ids, skip_special_tokens=False: [self._tokenizer.decode(i, skip_special_tokens) for i in ids]
        self.accelerator = SimpleNamespace(device="cpu", gather=lambda t: t)
        self.model = SimpleNamespace(training=True)
        self.use_vllm = False
        self.tools = None
        self.environments = None
        self.state = SimpleNamespace(global_step=0, num_input_tokens_seen=0)
        self._last_loaded_step = 0
        self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        self._log_completion_extra = lambda *a, **k: None
        self._log_metric = lambda *a, **k: None

    def step(self, dataset: List[Dict[str, Any]], generation_batch_size: int) -> Dict[str, Any]:
        G = self.num_generations
        sampler = self.fns.RepeatSampler(dataset, mini_repeat_count=G, batch_size=generation_batch_size // G, repeat_count=1, shuffle=False)
        slots = list(sampler)[:generation_batch_size]
        inputs = [dict(dataset[i]) for i in slots]
        prompts = [x["prompt"] for x in inputs]
        prompt_ids, completion_ids, tool_mask, completions, logprobs, extra, _, _ = self.fns.generate(self, prompts)
        for i, inp in enumerate(inputs):  # _generate_and_score_completions L2661-2668
            for key, values in extra.items():
                if isinstance(values, list) and i < len(values):
                    inp[key] = values[i]
                elif not isinstance(values, list):
                    inp[key] = values
        rewards = self.fns.calculate_rewards(self, inputs, prompts, completions, completion_ids)
        return {
            "slots": slots, "inputs": inputs, "prompt_ids": prompt_ids, "completion_ids": completion_ids,
            "tool_mask": tool_mask, "completions": completions, "logprobs": logprobs, "extra": extra, "rewards": rewards,
        }  # fmt: skip
