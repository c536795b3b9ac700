"""benchmax_client.BenchmaxEnv / AsyncBenchmaxEnv against a live server (the calc test env); also run from the
installed wheel (src/python-client.test.ts)."""

import asyncio
import os
import unittest

import benchmax_client
from benchmax_client import (
    AsyncBenchmaxEnv,
    BenchmaxClient,
    BenchmaxEnv,
    BenchmaxEnvError,
    BenchmaxError,
    BenchmaxInfraError,
    openai_messages,
    openai_tool_calls,
)
from benchmax_client.env import task_prompts, tasks_with_prompts

from live import ENDPOINT, TOKEN, call, needs_server


class ToolCallShapesTest(unittest.TestCase):
    """Every shape a trainer hands over becomes the server's OpenAI tool call."""

    def test_shapes(self):
        class Obj:
            def __init__(self, **kw):
                self.__dict__.update(kw)

        want = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]
        for shape in (
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},  # OpenAI
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}},  # TRL
            Obj(id="c1", function=Obj(name="add", arguments='{"a": 1, "b": 2}')),  # the cookbook's ToolCall
            {"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},  # verifiers' ToolCall, dumped
            Obj(id="c1", name="add", arguments='{"a": 1, "b": 2}'),  # verifiers' ToolCall
            {"id": "c1", "name": "add", "input": {"a": 1, "b": 2}},  # Anthropic tool_use
            {"call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},  # Responses function_call
        ):
            self.assertEqual(openai_tool_calls([shape]), want, shape)
        # no id: a positional one; no name: an empty one (the server answers with a tool error the model reads)
        self.assertEqual(openai_tool_calls([{"arguments": "{}"}]), [{"id": "call_0", "type": "function", "function": {"name": "", "arguments": "{}"}}])
        self.assertIsNone(openai_tool_calls(None))

    def test_reward_messages_from_flat_calls_are_valid(self):
        msgs = openai_messages([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "add", "arguments": "{}"}]},
            {"role": "tool", "content": "3"},
        ])  # fmt: skip
        self.assertEqual(msgs[1], {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]})
        self.assertEqual(msgs[2], {"role": "tool", "content": "3", "tool_call_id": "c1"})


@needs_server
class BenchmaxEnvTest(unittest.TestCase):
    def test_episode_through_the_engine(self):
        with BenchmaxEnv(ENDPOINT, TOKEN) as env:
            obs = env.reset(task_id="t2")
            self.assertEqual(obs["task_id"], "t2")
            self.assertEqual([m["role"] for m in obs["messages"]], ["system", "user"])
            self.assertIn("What is 10 + 7?", obs["messages"][1]["content"])
            self.assertEqual(sorted(t["name"] for t in env.tools), ["add", "fail", "note", "sleep"])
            out = env.step(call("add", a=10, b=7))
            self.assertFalse(out["done"])
            self.assertEqual(out["observation"]["tool_results"][0]["result"], "17")
            self.assertEqual(env.messages[-1]["role"], "tool")
            out = env.step("<answer>17</answer>")
            self.assertEqual((out["done"], out["reward"], out["info"]["rewards"]), (True, 1.0, {"exact_match": 1}))
            with self.assertRaises(BenchmaxError):
                env.step("again")  # the episode has ended

    def test_native_tool_calls_with_object_arguments(self):
        env = BenchmaxEnv(ENDPOINT, TOKEN)
        env.reset(task_id="t1")
        out = env.step("", [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}])
        self.assertEqual(out["observation"]["messages"][0]["content"], "5")
        env.close()

    def test_call_tool_reward_and_model_errors(self):
        env = BenchmaxEnv(ENDPOINT, TOKEN)
        env.reset(task_id="t1")
        self.assertEqual(env.call_tool("add", {"a": 2, "b": 3})["content"], "5")
        self.assertEqual(env.call_tool_text("note", {"text": "x"}), "x")
        # a model's mistake is a readable tool error, not an exception
        bad = env.call_tool("add", {"a": "two"})
        self.assertTrue(bad["isError"])
        self.assertTrue(env.call_tool("nope", {})["isError"])
        r = env.reward(env.messages + [{"role": "assistant", "content": "<answer>5</answer>"}])
        self.assertEqual(r["reward"], 1.0)
        env.close()

    def test_fork_copies_state(self):
        env = BenchmaxEnv(ENDPOINT, TOKEN)
        env.reset(task_id="t3")
        env.call_tool("note", {"text": "parent"})
        kids = env.fork(2)
        self.assertEqual([k.call_tool_text("note", {"text": "k%d" % i}) for i, k in enumerate(kids)], ["parent,k0", "parent,k1"])
        self.assertEqual(env.call_tool_text("note", {"text": "p2"}), "parent,p2")
        for k in kids:
            self.assertEqual(k.step("<answer>2</answer>")["reward"], 1.0)
        env.close()

    def test_async(self):
        async def one(task, answer):
            async with AsyncBenchmaxEnv(ENDPOINT, TOKEN) as env:
                await env.reset(task_id=task)
                res = await env.call_tool("add", {"a": 1, "b": 1})
                out = await env.step(answer)
                kids_ok = res["content"] == "2"
                return out["reward"], kids_ok

        async def many():
            return await asyncio.gather(*[one("t3", "<answer>%d</answer>" % (2 if i % 2 == 0 else 3)) for i in range(6)])

        self.assertEqual(asyncio.run(many()), [(1.0, True), (0.0, True)] * 3)

    def test_failures_are_raised_not_scored(self):
        for url, token, task, error in (
            (ENDPOINT, TOKEN, "no-such-task", BenchmaxEnvError),
            (ENDPOINT, "wrong-token", "t1", BenchmaxInfraError),
            ("http://127.0.0.1:9", TOKEN, "t1", BenchmaxInfraError),
        ):
            client = BenchmaxClient(url, token=token, retries=0)
            client.migrate_timeout_s = 0.0  # no waiting for a server to come back
            with BenchmaxEnv(client=client) as env, self.assertRaises(error):
                env.reset(task_id=task)
            client.close()

    def test_reading_prompts_creates_no_rollout(self):
        import json as _json
        import urllib.request

        def metrics():
            req = urllib.request.Request(ENDPOINT + "/metrics", headers={"authorization": "Bearer " + TOKEN, "accept": "application/json"})
            with urllib.request.urlopen(req, timeout=5) as r:
                return _json.loads(r.read())

        before = metrics()
        client = BenchmaxClient(ENDPOINT, token=TOKEN)
        rows = task_prompts(client)
        tasks = tasks_with_prompts(client, limit=2)
        after = metrics()
        self.assertEqual(len(rows), 3)
        self.assertEqual([t["systemPrompt"] for t in tasks], ["You add numbers. Answer in <answer></answer>."] * 2)
        self.assertEqual(rows[0]["prompt"][0], {"role": "system", "content": "You add numbers. Answer in <answer></answer>."})
        self.assertEqual(after["rolloutsCreated"], before["rolloutsCreated"])
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])
        # the same system prompt a rollout gets
        r = client.create_rollout("t1")
        client.release(r)
        self.assertEqual(r.system_prompt, tasks[0]["systemPrompt"])
        client.close()

    def test_tasks_hold_no_gold(self):
        with BenchmaxEnv(ENDPOINT, TOKEN) as env:
            tasks = env.tasks()
        self.assertEqual([t["id"] for t in tasks], ["t1", "t2", "t3"])
        self.assertNotIn("groundTruth", tasks[0])
        self.assertTrue(benchmax_client.__version__)

    def test_imported_from_the_installed_wheel_when_asked(self):
        if os.environ.get("BENCHMAX_EXPECT_INSTALLED") == "1":
            self.assertIn("site-packages", benchmax_client.__file__)


if __name__ == "__main__":
    unittest.main()
