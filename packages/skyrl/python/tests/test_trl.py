"""benchmax_client.trl driven by TRL GRPOTrainer's environment path (trl_loop.py: our step-by-step copy, or TRL's
own functions from TRL_CHECKOUT) with a scripted generator, against a live server (the calc test env)."""

import json
import math
import os
import re
import unittest
import urllib.request
from types import SimpleNamespace

from benchmax_client import BenchmaxClient, BenchmaxError, BenchmaxRolloutLost
from benchmax_client.trl import (
    dataset_rows,
    env_reward_func,
    environment_class,
    environment_factory,
    reward_func,
    rollout_func,
    tool_schema,
)

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


class LosesOneStep(BenchmaxClient):
    """A client whose `lose`-th step raises BenchmaxRolloutLost: that rollout's server died and it could not be
    rebuilt elsewhere (what the client's migration raises when no live server is left)."""

    def __init__(self, *a, lose=1, **kw):
        super().__init__(*a, **kw)
        self.steps = 0
        self.lose = lose

    def step(self, r, content, tool_calls=None):
        self.steps += 1
        if self.steps == self.lose:
            raise BenchmaxRolloutLost("rollout %s: no live env server left" % r.rollout_id)
        return super().step(r, content, tool_calls)

    def call_tool(self, r, name, arguments):
        self.steps += 1
        if self.steps == self.lose:
            raise BenchmaxRolloutLost("rollout %s: no live env server left" % r.rollout_id)
        return super().call_tool(r, name, arguments)


@needs_server
class TrlRolloutFuncTest(unittest.TestCase):
    def step(self, rollout, rows, G=2):
        trainer = trl_loop.RolloutFuncTrainer(rollout, [env_reward_func], num_generations=G)
        # TRL_CHECKOUT: RepeatSampler, _generate and _calculate_rewards are TRL's own
        self.assertEqual(trainer.fns.source, os.environ.get("TRL_CHECKOUT") or "replica")
        return trainer.step(rows, generation_batch_size=len(rows) * G)

    def test_two_prompts_times_two_generations_under_trls_sampler(self):
        gen = ChatMLGenerator()
        rollout = rollout_func(ENDPOINT, TOKEN, gen)
        before = metrics()
        rows = dataset_rows(ENDPOINT, TOKEN)[:2]  # reading prompts made no rollout
        self.assertEqual(metrics()["rolloutsCreated"], before["rolloutsCreated"])
        out = self.step(rollout, [rows[1], rows[0]])
        # the sampler's layout: each prompt twice in a row; one completion per slot
        self.assertEqual(out["slots"], [0, 0, 1, 1])
        for k in ("prompt_ids", "completion_ids", "logprobs", "tool_mask", "completions"):
            self.assertEqual(len(out[k]), 4, k)
        self.assertEqual(set(out["extra"]), {"env_reward"})  # env_mask became the tool mask
        # _calculate_rewards: one row per slot, from the env_reward each input got by index
        self.assertEqual([x["env_reward"] for x in out["inputs"]], [1.0] * 4)
        self.assertEqual(out["rewards"], [[1.0]] * 4)
        after = metrics()
        # one group per prompt: 1 create + 1 fork each, 4 rollouts for 4 slots
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 4)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])
        tok = gen.tok
        for p, c, lp, mask, inp in zip(out["prompt_ids"], out["completion_ids"], out["logprobs"], out["tool_mask"], out["inputs"]):
            self.assertEqual((len(c), len(lp)), (len(mask), len(mask)))
            # completion = reply 1, the tool result (masked, logprob 0), reply 2; prompt + completion is what the
            # backend saw at the last turn, with no re-tokenization
            self.assertIn("<tool_response>", tok.decode([t for t, m in zip(c, mask) if m == 0]))
            self.assertNotIn("<tool_response>", tok.decode([t for t, m in zip(c, mask) if m == 1]))
            self.assertTrue(tok.decode(c).endswith("</answer><|im_end|>"))
            self.assertEqual({x for x, m in zip(lp, mask) if m == 0}, {0.0})
            self.assertIn(inp["prompt"][-1]["content"], tok.decode(p))

    def test_groups_follow_the_slots(self):
        gen = ChatMLGenerator()
        rows = dataset_rows(ENDPOINT, TOKEN)
        before = metrics()
        # two rows with the same prompt side by side stay two groups of num_generations
        out = rollout_func(ENDPOINT, TOKEN, gen, num_generations=2)([rows[1]["prompt"]] * 4 + [rows[0]["prompt"]], None)
        self.assertEqual(len(out["completion_ids"]), 5)
        self.assertEqual(out["env_reward"], [1.0] * 5)
        after = metrics()
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 5)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])

    def test_lost_rollout_is_an_unscored_sample(self):
        gen = ChatMLGenerator()
        client = LosesOneStep(ENDPOINT, token=TOKEN, retries=0, lose=3)  # slot 1: its first step
        rollout = rollout_func(generate=gen, client=client)
        rows = dataset_rows(ENDPOINT, TOKEN)[:2]
        before = metrics()
        out = self.step(rollout, [rows[1], rows[0]])
        self.assertEqual(len(out["completion_ids"]), 4)
        envr = [x["env_reward"] for x in out["inputs"]]
        self.assertEqual(envr, [1.0, None, 1.0, 1.0])
        # TRL: None → NaN (unscorable: out of the group baseline, advantage 0), never 0
        self.assertTrue(math.isnan(out["rewards"][1][0]))
        self.assertEqual([r[0] for i, r in enumerate(out["rewards"]) if i != 1], [1.0, 1.0, 1.0])
        self.assertEqual(set(out["tool_mask"][1]), {0})  # none of its tokens trains
        self.assertTrue(out["completion_ids"][1])  # still a completion TRL can read (ids[-1])
        self.assertEqual(metrics()["activeRollouts"], before["activeRollouts"])

    def test_drift_is_refused(self):
        rollout = rollout_func(ENDPOINT, TOKEN, ChatMLGenerator(drift=True), num_generations=1)
        before = metrics()["activeRollouts"]
        with self.assertRaises(BenchmaxError) as ctx:
            rollout([[{"role": "user", "content": "What is 10 + 7?"}]], None)
        self.assertIn("re-tokenization drift at turn 2", str(ctx.exception))
        self.assertEqual(metrics()["activeRollouts"], before)


@needs_server
class TrlEnvironmentFactoryLostTest(unittest.TestCase):
    def test_lost_rollout_reward_is_none_then_nan(self):
        tools = BenchmaxClient(ENDPOINT, token=TOKEN).metadata()["tools"]
        cls = environment_class(tools)
        clients = []

        def factory():
            # the second environment's first tool call finds its server gone for good
            c = LosesOneStep(ENDPOINT, token=TOKEN, retries=0, lose=1 if len(clients) == 1 else 0)
            clients.append(c)
            return cls(client=c)

        before = metrics()["activeRollouts"]
        trainer = trl_loop.FakeGRPOTrainer(factory, [reward_func], scripted)
        rows = dataset_rows(ENDPOINT, TOKEN)
        out = trainer.generate_and_score([rows[1], rows[1]])
        self.assertEqual(out["rewards"], [[1.0, None]])
        # TRL's tool loop showed the model the error (its own mechanism for a tool that raises)
        self.assertIn("no live env server left", out["completions"][1][1]["content"])
        self.assertEqual(out["tool_failures"], 1)
        # and _calculate_rewards makes it NaN
        calc = trl_loop.RolloutFuncTrainer(None, [reward_func], num_generations=2)
        rows2 = calc.fns.calculate_rewards(
            SimpleNamespace(**{**vars(calc), "reward_funcs": [lambda **kw: out["rewards"][0]]}),
            [{"prompt": "p"}, {"prompt": "p"}], ["p", "p"], [[], []], [[1], [1]],
        )
        self.assertEqual(rows2[0], [1.0])
        self.assertTrue(math.isnan(rows2[1][0]))
        self.assertEqual(metrics()["activeRollouts"], before)


if __name__ == "__main__":
    unittest.main()
