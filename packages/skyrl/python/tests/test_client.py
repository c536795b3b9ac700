"""benchmax_client.BenchmaxEnv / AsyncBenchmaxEnv against a live server (the calc test env); also run from the
installed wheel (src/python-client.test.ts)."""

import asyncio
import os
import unittest

import benchmax_client
from benchmax_client import AsyncBenchmaxEnv, BenchmaxEnv, BenchmaxEnvError, BenchmaxError, BenchmaxInfraError

from live import ENDPOINT, TOKEN, call, needs_server


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
            with BenchmaxEnv(url, token, retries=0) as env, self.assertRaises(error):
                env.reset(task_id=task)

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
