"""benchmax_client.trl driven by TRL GRPOTrainer's environment path (trl_loop.py: our step-by-step copy, or TRL's
own functions from TRL_CHECKOUT) with a scripted generator, against a live server (the calc test env)."""

import json
import os
import re
import unittest
import urllib.request

from benchmax_client import BenchmaxError
from benchmax_client.trl import dataset_rows, env_reward_func, environment_factory, reward_func, rollout_func, tool_schema

import trl_loop
from live import ENDPOINT, TOKEN, check_fixture, needs_server


def metrics():
    req = urllib.request.Request(ENDPOINT + "/metrics", headers={"authorization": "Bearer " + TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def scripted(text):
    """The model: on 'What is X + Y?' call add(X, Y) (member 'wrong' first calls a tool that does not exist, then add
    with a bad argument), then answer what the tool said (or 0 after an error)."""
    last_user = text.rsplit("<|im_start|>user\n", 1)[1]
    if "<tool_response>" not in last_user:
        x, y = re.findall(r"What is (\d+) \+ (\d+)\?", text)[-1]
        if "(wrong)" in text:
            return '<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "add", "arguments": {"a": "two", "b": 1}}\n</tool_call><|im_end|>'
        return '<tool_call>\n{"name": "add", "arguments": {"a": %s, "b": %s}}\n</tool_call><|im_end|>' % (x, y)
    results = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", last_user, re.S)
    answer = results[-1] if results and results[-1].isdigit() else "0"
    return "<answer>%s</answer><|im_end|>" % answer


@needs_server
class TrlEnvironmentFactoryTest(unittest.TestCase):
    def test_grpo_environment_path(self):
        before = metrics()["activeRollouts"]
        factory = environment_factory(ENDPOINT, TOKEN)
        trainer = trl_loop.FakeGRPOTrainer(factory, [reward_func], scripted)
        # TRL_CHECKOUT: the loop code is TRL's own, read from that checkout
        self.assertEqual(trainer.fns.source, os.environ.get("TRL_CHECKOUT") or "replica")
        self.assertEqual(sorted(m.__name__ for m in trainer.tools), ["add", "fail", "note", "sleep"])
        add = next(m for m in trainer.tools if m.__name__ == "add")
        self.assertEqual(
            tool_schema(add)["function"]["parameters"],
            {"type": "object", "properties": {"a": {"type": "number", "description": "a"}, "b": {"type": "number", "description": "b"}}, "required": ["a", "b"]},
        )
        rows = dataset_rows(ENDPOINT, TOKEN)
        self.assertEqual([r["task_id"] for r in rows], ["t1", "t2", "t3"])
        self.assertEqual(rows[1]["prompt"], [{"role": "system", "content": "You add numbers. Answer in <answer></answer>."}, {"role": "user", "content": "What is 10 + 7?"}])
        wrong = dict(rows[0], prompt=rows[0]["prompt"][:-1] + [{"role": "user", "content": "What is 2 + 3? (wrong)"}])
        out = trainer.generate_and_score([rows[1], rows[1], wrong])
        # the reward came from the env server, one per rollout
        self.assertEqual(out["rewards"], [[1.0, 1.0, 0.0]])
        c0 = out["completions"][0]
        self.assertEqual([m["role"] for m in c0], ["assistant", "tool", "assistant"])
        self.assertEqual(c0[1], {"role": "tool", "name": "add", "content": "17"})
        # tools were rendered into the prompt from the env's methods
        self.assertIn('"name": "add"', out["prompt_text"][0])
        # the model's mistakes: an unknown tool is TRL's error; a bad argument the env's readable tool error
        c2 = out["completions"][2]
        self.assertEqual(c2[1]["content"], "{'error': 'Tool nope not found.'}")
        self.assertIn("a", c2[2]["content"])
        self.assertEqual(out["tool_failures"], 1)
        self.assertEqual(out["tool_calls"], 4)
        self.assertIn(0, out["tool_mask"][0])  # tool-result tokens are masked
        # every episode was released once scored
        self.assertEqual(metrics()["activeRollouts"], before)
        check_fixture(self, "trl-environment-factory.result", {k: out[k] for k in ("completions", "rewards", "tool_calls", "tool_failures")})

    def test_reset_needs_a_task(self):
        env = environment_factory(ENDPOINT, TOKEN)()
        with self.assertRaises(BenchmaxError):
            env.reset(prompt=[])
        env.reset(task_id="t3")
        self.assertEqual(env.add(a=1, b=1), "2")
        self.assertEqual(env.add(1, 1), "2")
        self.assertEqual(env._score([{"role": "user", "content": "q"}, {"role": "assistant", "content": "<answer>2</answer>"}]), 1.0)


class ChatMLGenerator:
    """generate(messages, tools) for rollout_func: the chat template renders, the scripted model answers, token ids
    and logprobs come back as vLLM gives them."""

    def __init__(self, drift=False):
        self.tok = trl_loop.ChatMLTokenizer()
        self.drift = drift
        self.calls = 0

    def __call__(self, messages, tools):
        self.calls += 1
        msgs = messages
        if self.drift:
            # a backend that re-renders history differently (stripped whitespace) drifts from the sampled ids
            msgs = [dict(m, content=(m.get("content") or "").strip() + " ") if m["role"] == "assistant" else m for m in messages]
        prompt = self.tok.apply_chat_template(msgs, add_generation_prompt=True, tools=[{"type": "function", "function": t} for t in tools])
        reply = scripted(self.tok.decode(prompt))
        ids = self.tok.encode(reply)
        return {"prompt_ids": prompt, "completion_ids": ids, "logprobs": [-0.25] * len(ids), "text": reply[: -len("<|im_end|>")]}


@needs_server
class TrlRolloutFuncTest(unittest.TestCase):
    def test_rollout_func_group_and_token_faithful_output(self):
        gen = ChatMLGenerator()
        rollout = rollout_func(ENDPOINT, TOKEN, gen, num_generations=3)
        rows = dataset_rows(ENDPOINT, TOKEN)
        before = metrics()
        out = rollout([rows[1]["prompt"], rows[0]["prompt"]], None)
        self.assertEqual(set(out), {"prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"})
        self.assertEqual(out["env_reward"], [1.0] * 6)
        self.assertEqual(env_reward_func(completions=[None] * 6, env_reward=out["env_reward"]), [1.0] * 6)
        after = metrics()
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 6)  # 2 × (1 create + 2 forks)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])
        tok = gen.tok
        for p, c, lp, mask in zip(out["prompt_ids"], out["completion_ids"], out["logprobs"], out["env_mask"]):
            self.assertEqual((len(c), len(lp)), (len(mask), len(mask)))
            text = tok.decode(c)
            # completion = reply 1, the tool result (masked, logprob 0), reply 2; prompt + completion is what the
            # backend saw at the last turn, with no re-tokenization
            self.assertIn("<tool_response>", tok.decode([t for t, m in zip(c, mask) if m == 0]))
            self.assertNotIn("<tool_response>", tok.decode([t for t, m in zip(c, mask) if m == 1]))
            self.assertTrue(text.endswith("</answer><|im_end|>"))
            self.assertEqual({x for x, m in zip(lp, mask) if m == 0}, {0.0})

    def test_drift_is_refused(self):
        rollout = rollout_func(ENDPOINT, TOKEN, ChatMLGenerator(drift=True), num_generations=1)
        before = metrics()["activeRollouts"]
        with self.assertRaises(BenchmaxError) as ctx:
            rollout([[{"role": "user", "content": "What is 10 + 7?"}]], None)
        self.assertIn("re-tokenization drift at turn 2", str(ctx.exception))
        self.assertEqual(metrics()["activeRollouts"], before)


if __name__ == "__main__":
    unittest.main()
