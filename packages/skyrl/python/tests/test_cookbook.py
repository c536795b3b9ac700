"""The tinker-cookbook adapter driven by a faithful copy of the cookbook's group rollout loop (cookbook_loop.py)."""

import asyncio
import dataclasses
import json
import pickle
import unittest
import urllib.request

import os

from benchmax_skyrl import BenchmaxEnvGroupBuilder, BenchmaxRLDataset, BenchmaxTextEnv
from benchmax_skyrl.cookbook import _message_parts, to_cookbook_message

import cookbook_loop
from live import ENDPOINT, FIXTURES, PROMPT, TOKEN, call, check_fixture, needs_server


def metrics(url):
    req = urllib.request.Request(url + "/metrics", headers={"authorization": "Bearer %s" % TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


class ScriptedPolicy:
    """A TokenCompleter (completers.py: `await policy(ob, stop) -> TokensWithLogprobs`) that answers by script:
    member i of the group gets replies[i][turn]; the member is recognised by its first tool note."""

    def __init__(self, renderer, replies):
        self.renderer = renderer
        self.replies = replies
        self.calls = 0

    async def __call__(self, ob, stop):
        self.calls += 1
        text = self.renderer.tokenizer.decode(ob.to_ints())
        turn = text.count("<|im_start|>assistant\n") - 1
        member = 0
        for i in range(len(self.replies)):
            if "member-%d" % i in text:
                member = i
        if turn == 0:
            reply = call("note", text="member-%d" % self.next_member())
        else:
            reply = self.replies[member][min(turn - 1, len(self.replies[member]) - 1)]
        return cookbook_loop.TokensWithLogprobs(self.renderer.tokenizer.encode(reply + stop[0]), None, "stop")

    def next_member(self):
        self._n = getattr(self, "_n", -1) + 1
        return self._n


@needs_server
class CookbookGroupTest(unittest.TestCase):
    def builder(self, group_size=3, max_turns=5, task_id="t2"):
        return BenchmaxEnvGroupBuilder(
            ENDPOINT, PROMPT, cookbook_loop.ToyRenderer(), task_id=task_id, group_size=group_size, max_turns=max_turns, token=TOKEN, tags=["calc", "benchmax"]
        )

    def test_group_rollout_counts_every_reward_once(self):
        before = metrics(ENDPOINT)
        b = self.builder()
        policy = ScriptedPolicy(b.renderer, [["<answer>17</answer>"], ["<answer>0</answer>"], ["<answer>17</answer>"]])
        group = asyncio.run(cookbook_loop.do_group_rollout(b, policy))
        self.assertEqual(group.get_total_rewards(), [1.0, 0.0, 1.0])
        for traj, final in zip(group.trajectories_G, group.final_rewards_G):
            self.assertEqual(final, 0.0)  # the env's reward came once, with the last step
            self.assertEqual([t.episode_done for t in traj.transitions], [False, True])
            self.assertEqual(traj.stop_reason, "completed")
        self.assertEqual(group.metrics_G[0]["group/rank"], 0)
        after = metrics(ENDPOINT)
        # one create + one fork of 2 children; every rollout released (cleanup in finally)
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 3)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])
        # the forked members kept their own state: each saw only its own note
        notes = [t.transitions[1].ob for t in group.trajectories_G]
        self.assertEqual(sum("member-0,member-1" in b.renderer.tokenizer.decode(n.to_ints()) for n in notes), 0)
        self.assertEqual(b.logging_tags(), ["calc", "benchmax"])

    def test_step_is_token_level_and_records_shapes(self):
        b = self.builder(group_size=1)

        async def go():
            [env] = await b.make_envs()
            ob, stop = await env.initial_observation()
            self.assertEqual(stop, ["<|im_end|>"])
            self.assertTrue(b.renderer.tokenizer.decode(ob.to_ints()).endswith("<|im_start|>assistant\n"))
            tok = b.renderer.tokenizer.encode
            s1 = await env.step(tok(call("add", a=10, b=7) + "<|im_end|>"), extra={"stop_reason": "stop"})
            self.assertIn("<|im_start|>tool\n17<|im_end|>", b.renderer.tokenizer.decode(s1.next_observation.to_ints()))
            s2 = await env.step(tok("<answer>17</answer><|im_end|>"))
            await b.cleanup()
            await b.cleanup()  # idempotent
            return s1, s2

        s1, s2 = asyncio.run(go())
        self.assertEqual((s1.reward, s1.episode_done, s2.reward, s2.episode_done), (0.0, False, 1.0, True))
        for name, s in (("cookbook-step.result", s1), ("cookbook-step-done.result", s2)):
            d = dataclasses.asdict(s)
            d["next_observation"] = {"length": s.next_observation.length}
            check_fixture(self, name, d)

    def test_max_turns_is_a_stop_reason(self):
        b = self.builder(group_size=2, max_turns=2)
        policy = ScriptedPolicy(b.renderer, [[call("add", a=1, b=1)], [call("add", a=1, b=1)]])
        group = asyncio.run(cookbook_loop.do_group_rollout(b, policy))
        self.assertEqual(group.get_total_rewards(), [0.0, 0.0])
        self.assertEqual([t.stop_reason for t in group.trajectories_G], ["max_turns", "max_turns"])

    def test_cleanup_runs_when_a_rollout_fails(self):
        before = metrics(ENDPOINT)["activeRollouts"]
        b = self.builder(group_size=4)

        async def failing(ob, stop):
            raise RuntimeError("sampler down")

        with self.assertRaises(RuntimeError):
            asyncio.run(cookbook_loop.do_group_rollout(b, failing))
        self.assertEqual(metrics(ENDPOINT)["activeRollouts"], before)

    def test_builder_and_dataset_pickle(self):
        b = self.builder()
        asyncio.run(b.make_envs())  # live client and rollouts are not pickled
        b2 = pickle.loads(pickle.dumps(b))
        self.assertEqual((b2.task_id, b2.group_size, b2._client, b2._rollouts), ("t2", 3, None, []))
        asyncio.run(b.cleanup())
        rows = [{"prompt": PROMPT, "data_source": "benchmax/calc", "extra_info": {"task_id": t, "env": "calc", "task": ""}} for t in ("t1", "t2", "t3")]
        ds = BenchmaxRLDataset(rows, ENDPOINT, cookbook_loop.ToyRenderer(), batch_size=2, group_size=2, token=TOKEN)
        self.assertEqual(len(ds), 1)
        batch = pickle.loads(pickle.dumps(ds.get_batch(0)))
        self.assertEqual([x.task_id for x in batch], ["t1", "t2"])
        self.assertEqual(batch[0].logging_tags(), ["calc", "benchmax"])
        with self.assertRaises(IndexError):
            ds.get_batch(1)
        group = asyncio.run(cookbook_loop.do_group_rollout(batch[1], ScriptedPolicy(batch[1].renderer, [["<answer>17</answer>"]] * 2)))
        self.assertEqual(group.get_total_rewards(), [1.0, 1.0])

    def test_bad_arguments_are_named(self):
        with self.assertRaises(ValueError) as ctx:
            BenchmaxEnvGroupBuilder(ENDPOINT, PROMPT, None, task_id="t", group_size=0)
        self.assertIn("group_size", str(ctx.exception))
        with self.assertRaises(ValueError):
            BenchmaxRLDataset([], ENDPOINT, None, batch_size=1)


@needs_server
class CookbookToolCallHistoryTest(unittest.TestCase):
    """The history the renderer renders holds the cookbook's ToolCall objects and tool messages with ids
    (issue 24: Qwen3/Qwen3.5/DeepSeek V3/gpt-oss/Kimi K2 read tool calls by attribute)."""

    def test_group_rollout_with_tool_call_objects(self):
        renderer = cookbook_loop.ToolCallRenderer()
        b = BenchmaxEnvGroupBuilder(
            ENDPOINT, PROMPT, renderer, task_id="t2", group_size=2, max_turns=4, token=TOKEN, renderer_tools=True
        )
        seen = []

        async def policy(ob, stop, max_tokens=None):
            text = renderer.tokenizer.decode(ob.to_ints())
            seen.append(text)
            if "## Return of" not in text:
                reply = '<tool_call>{"name": "add", "arguments": {"a": 10, "b": 7}}</tool_call>'
            else:
                reply = "<answer>17</answer>"
            return cookbook_loop.TokensWithLogprobs(renderer.tokenizer.encode(reply + stop[0]), None, "stop")

        envs_seen = []
        make = b.make_envs

        async def make_envs():
            envs = await make()
            envs_seen.extend(envs)
            return envs

        b.make_envs = make_envs
        group = asyncio.run(cookbook_loop.do_group_rollout(b, policy))
        self.assertEqual(group.get_total_rewards(), [1.0, 1.0])
        # tools announced the renderer's way, from the server's /metadata, after the prompt's system prompt
        self.assertIn("You add numbers.\n# Tools\n", seen[0])
        self.assertIn('{"name": "add"', seen[0])
        h = envs_seen[0].history
        self.assertEqual([m["role"] for m in h], ["system", "user", "assistant", "tool", "assistant"])
        call_ = h[2]["tool_calls"][0]
        self.assertIsInstance(call_, cookbook_loop.ToolCall)
        self.assertEqual((call_.id, call_.function.name), ("call_0", "add"))
        self.assertEqual(h[3], {"role": "tool", "content": "17", "tool_call_id": "call_0", "name": "add"})
        # the second prompt rendered the call by attribute and the result under its id
        second = [t for t in seen if "## Return of" in t][0]
        self.assertIn('<tool_call>{"name": "add", "arguments": {"a": 10, "b": 7}}</tool_call>', second)
        self.assertIn("## Return of call_0\n17", second)
        # the server got OpenAI-style calls (what its episode engine parses)
        sent = envs_seen[0].messages[2]["tool_calls"][0]
        self.assertEqual(sent, {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 10, "b": 7}'}})


class CookbookMessageTest(unittest.TestCase):
    def test_parsed_messages_to_the_server(self):
        tc = cookbook_loop.ToolCall(cookbook_loop.ToolCall.FunctionBody("add", '{"a": 1}'), id="functions.add:0")
        content, calls = _message_parts({"role": "assistant", "content": [{"type": "text", "text": "x"}], "tool_calls": [tc]})
        self.assertEqual(content, "x")
        self.assertEqual(calls, [{"id": "functions.add:0", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}])
        # a call the renderer could not parse reaches the server as text (its parser answers with a tool error)
        bad = {"role": "assistant", "content": "", "unparsed_tool_calls": [{"raw_text": "<tool_call>{oops</tool_call>", "error": "Invalid JSON"}]}
        self.assertEqual(_message_parts(bad), ("<tool_call>{oops</tool_call>", None))

    def test_prompt_messages_get_text_content(self):
        self.assertEqual(to_cookbook_message({"role": "assistant", "content": None})["content"], "")

    def test_recorded_runs_of_every_renderer(self):
        """The record of cookbook_renderers.py: the cookbook's do_group_rollout with each renderer, at a pinned
        commit, against `benchmax serve math` (re-run it with --record to refresh)."""
        with open(os.path.join(FIXTURES, "cookbook-renderers.json")) as f:
            rec = json.load(f)
        self.assertRegex(rec["cookbook_commit"], r"^[0-9a-f]{40}$")
        names = [r["renderer"] for r in rec["runs"]]
        self.assertEqual(
            names, ["qwen3", "qwen3_instruct", "qwen3_5", "llama3", "deepseekv3", "gpt_oss_medium_reasoning", "kimi_k2"]
        )
        for r in rec["runs"]:
            self.assertNotIn("error", r, r["renderer"])
            self.assertEqual(r["rewards"], [1.0, 0.0, 1.0, 0.0], r["renderer"])
            self.assertEqual(r["rollouts_created"], 4, r["renderer"])  # 1 create + 3 forks
            self.assertEqual(r["history_roles"][-3:], ["assistant", "tool", "assistant"], r["renderer"])
            self.assertEqual(r["tool_message"]["name"], "calculator")
            self.assertEqual(r["tool_message"]["content"], "34")
            if r["sent_tool_calls"]:  # native tool calls: the tool result is filed under the id that was sent
                self.assertEqual(r["tool_message"]["tool_call_id"], r["sent_tool_calls"][0]["id"])
                self.assertIn("calculator", r["tool_call_turn"])
                self.assertIn("34", r["final_prompt_tail"])


if __name__ == "__main__":
    unittest.main()
