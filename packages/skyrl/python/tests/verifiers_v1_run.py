"""benchmax_client.verifiers' v1 classes (BenchmaxTaskset, BenchmaxTask, BenchmaxToolset) on verifiers.v1's own
Taskset, Task.score, Trace, State channel and error boundary, from a verifiers checkout (not part of CI: CI has no
verifiers and no pydantic; test_verifiers.VerifiersV1Test runs the same episode operations there).

    VERIFIERS_CHECKOUT=/path/to/verifiers BENCHMAX_TEST_ENDPOINT=… BENCHMAX_TEST_TOKEN=… python3 -m unittest verifiers_v1_run

What runs is verifiers.v1's own code at a60a606ecc4d309247edf9ff92c3eabca362781f: `Taskset.__iter__` over our
`load()`, `Task.score` (our `@vf.reward`), `Trace` (`messages`, `record_metrics`, `record_error`), the
`_call_state` context a tool call runs in (verifiers/v1/mcp/server.py `_with_state`) and `boundary(TaskError, …)`
(verifiers/v1/errors.py L85-99), in the order `Rollout` calls them (verifiers/v1/rollout.py: `open` L237-241 runs
`task.setup` in that boundary and `fail`s on an error L342-343, `fail` L157-174 records it on the trace; `close`
L472-495 scores only when nothing failed). Not run: the harness, runtime, interception server and MCP transport (they need packages Debian lacks); a stand-in
`pydantic_config.BaseConfig` (a pydantic model) and empty stand-ins for mcp / openai / httpx names take their place.
"""

import asyncio
import json
import os
import sys
import types
import unittest
import urllib.request

import verifiers_loop
from live import ENDPOINT, TOKEN

CHECKOUT = os.environ.get("VERIFIERS_CHECKOUT")


def _load_v1():
    from pydantic import BaseModel, ConfigDict  # type: ignore

    cfg = types.ModuleType("pydantic_config")

    class BaseConfig(BaseModel):
        model_config = ConfigDict(extra="forbid")

    cfg.BaseConfig = BaseConfig
    sys.modules.setdefault("pydantic_config", cfg)
    sys.path.insert(0, CHECKOUT)
    with verifiers_loop.opened():
        import verifiers.v1 as vf  # type: ignore
        from benchmax_client import verifiers as bv

        bv.__getattr__("BenchmaxTaskset")  # the v1 classes (their imports too)
        import mcp.types  # type: ignore  # noqa: F401  (what BenchmaxToolset builds its answers with)
    return vf


def metrics():
    req = urllib.request.Request(ENDPOINT + "/metrics", headers={"authorization": "Bearer " + TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


@unittest.skipUnless(CHECKOUT and ENDPOINT, "needs VERIFIERS_CHECKOUT and a live server (BENCHMAX_TEST_ENDPOINT)")
class VerifiersV1OwnCodeTest(unittest.TestCase):
    def setUp(self):
        self.vf = _load_v1()
        from benchmax_client import verifiers as bv

        self.bv = bv
        from verifiers.v1.errors import TaskError, boundary  # type: ignore
        from verifiers.v1.graph import MessageNode  # type: ignore
        from verifiers.v1.mcp.server import _call_state  # type: ignore
        from verifiers.v1.state import state_cls  # type: ignore
        from verifiers.v1.trace import AgentInfo, TraceTask  # type: ignore

        self.TaskError, self.boundary, self.MessageNode, self._call_state = TaskError, boundary, MessageNode, _call_state
        self.state_cls, self.AgentInfo, self.TraceTask = state_cls, AgentInfo, TraceTask

    def trace_for(self, task):
        """A trace as `Rollout.__init__` mints it (verifiers/v1/rollout.py L85-96)."""
        return self.vf.Trace(
            task=self.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            state=self.state_cls(type(task))(),
            agent=self.AgentInfo(config=self.vf.AgentConfig()),
        )

    def add(self, trace, message, sampled=False):
        parent = len(trace.nodes) - 1 if trace.nodes else None
        trace.nodes.append(self.MessageNode(parent=parent, message=message, sampled=sampled))

    async def episode(self, taskset, task, b_offset):
        vf = self.vf
        trace = self.trace_for(task)
        async with self.boundary(self.TaskError, "task setup"):
            await task.setup(trace, None)
        for m in task.data.prompt:
            self.add(trace, m)
        # the harness calls the tool server; the call runs with this rollout's state (what _with_state sets)
        toolset = type(taskset).toolsets(taskset.config)[0]
        x, y = 10, 7 + b_offset
        call = vf.ToolCall(id="c1", name="add", arguments=json.dumps({"a": x, "b": y}))
        self.add(trace, vf.AssistantMessage(content=None, tool_calls=[call]), sampled=True)
        token = self._call_state.set(trace.state)
        try:
            result = await toolset.call_tool("add", {"a": x, "b": y})
            bad = await toolset.call_tool("nope", {})
        finally:
            self._call_state.reset(token)
        text = result["content"][0]["text"]
        self.add(trace, vf.ToolMessage(tool_call_id="c1", content=text, name="add"))
        self.add(trace, vf.AssistantMessage(content="<answer>%s</answer>" % text), sampled=True)
        async with self.boundary(self.TaskError, "scoring"):
            await task.score(trace, None)
        return trace, result, bad

    def test_taskset_group_scored_by_the_env(self):
        before = metrics()
        taskset = self.bv.load_taskset(ENDPOINT, TOKEN)
        self.assertIsInstance(taskset, self.vf.Taskset)
        tasks = list(taskset)  # Taskset.__iter__ over load()
        self.assertEqual(metrics()["rolloutsCreated"], before["rolloutsCreated"])  # prompts read, no rollout
        self.assertEqual([t.key for t in tasks], ["t1", "t2", "t3"])
        t2 = tasks[1]
        self.assertEqual(t2.data.system_prompt, "You add numbers. Answer in <answer></answer>.")
        self.assertEqual(t2.data.prompt_text, "What is 10 + 7?")

        async def group():
            return await asyncio.gather(*[self.episode(taskset, t2, k % 2) for k in range(4)])

        out = asyncio.run(group())
        self.assertEqual([tr.rewards["benchmax"].score for tr, _, _ in out], [1.0, 0.0, 1.0, 0.0])
        self.assertEqual([tr.reward for tr, _, _ in out], [1.0, 0.0, 1.0, 0.0])
        self.assertEqual([tr.metrics["exact_match"] for tr, _, _ in out], [1.0, 0.0, 1.0, 0.0])
        self.assertEqual(out[0][1]["isError"], False)
        self.assertEqual(out[0][2]["isError"], True)  # the model's bad call: a tool error it reads
        # the rollout's coordinates stay out of the serialized trace (State is `exclude=True` on Trace)
        self.assertNotIn("rollout_token", out[0][0].model_dump_json())
        after = metrics()
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 4)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])

    def test_unreachable_server_is_a_recorded_task_error(self):
        from benchmax_client import BenchmaxClient

        url = "http://127.0.0.1:9"
        c = BenchmaxClient(url, token=TOKEN, retries=0)
        c.migrate_timeout_s = 0.0
        self.bv._CLIENTS[(url, TOKEN)] = c
        taskset = self.bv.load_taskset(ENDPOINT, TOKEN)
        task = list(taskset)[0]
        task.config = task.config.model_copy(update={"url": url})
        trace = self.trace_for(task)

        async def setup():
            try:
                async with self.boundary(self.TaskError, "task setup"):
                    await task.setup(trace, None)
            except Exception as e:  # Rollout.open: `self.fail(e)` → trace.record_error
                trace.record_error(e)

        asyncio.run(setup())
        self.assertFalse(trace.ok)
        self.assertEqual(trace.stop_condition, "error")
        self.assertEqual(trace.errors[0].type, "TaskError")
        self.assertIn("task setup: Benchmax", trace.errors[0].message)
        self.assertEqual(trace.rewards, {})  # never scored: no reward, not a 0


if __name__ == "__main__":
    unittest.main()
