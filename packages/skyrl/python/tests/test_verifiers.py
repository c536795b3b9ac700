"""benchmax_client.verifiers under verifiers' group and rollout code (verifiers_loop.py: our step-by-step copy in CI,
or verifiers' own package from VERIFIERS_CHECKOUT) with a scripted model that answers chat.completions with native
tool calls, against a live server (the calc test env). The recorded run of verifiers' own code
(fixtures/verifiers-run-group.result.json) is checked in CI."""

import asyncio
import json
import os
import re
import unittest
import urllib.request
from types import SimpleNamespace

from benchmax_client import BenchmaxClient, BenchmaxInfraError, BenchmaxRolloutLost
from benchmax_client.env import openai_messages, openai_tool_calls
from benchmax_client.verifiers import (
    BenchmaxVerifiersMixin,
    benchmax_reward,
    dataset_rows,
    tool_defs,
    v1_call_tool,
    v1_score,
    v1_start,
    v1_tasks,
)

import verifiers_loop
from live import ENDPOINT, FIXTURES, RECORD, TOKEN, needs_server

V = verifiers_loop.load()
Env = verifiers_loop.make_env_class(BenchmaxVerifiersMixin, V)
FIXTURE = os.path.join(FIXTURES, "verifiers-run-group.result.json")


def metrics():
    req = urllib.request.Request(ENDPOINT + "/metrics", headers={"authorization": "Bearer " + TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def client(url=None, cls=BenchmaxClient):
    c = cls(url or ENDPOINT, token=TOKEN, retries=0)
    c.migrate_timeout_s = 0.0  # an unreachable server fails at once (no waiting for one to come back)
    return c


def make_env(max_turns=5, c=None):
    c = c or client()
    tools = tool_defs(c) if c.endpoints[0] == ENDPOINT else []
    env = Env(dataset=lambda: [], rubric=V.Rubric(funcs=[benchmax_reward], weights=[1.0]), tool_defs=tools, max_turns=max_turns)
    env.benchmax_client = c
    return env


class ScriptedModel:
    """A chat.completions endpoint: member k calls add(x, y + k % 2) natively, then answers the tool's result."""

    def __init__(self, loop_forever=False):
        self.n = 0
        self.loop_forever = loop_forever
        self.requests = []

    async def create(self, messages, tools):
        self.requests.append({"messages": messages, "tools": [t["name"] for t in tools]})
        tool_msgs = [m for m in messages if m["role"] == "tool"]
        if not tool_msgs or self.loop_forever:
            k = self.n
            self.n += 1
            user = [m for m in messages if m["role"] == "user"][-1]["content"]
            x, y = re.findall(r"What is (\d+) \+ (\d+)\?", user)[0]
            args = json.dumps({"a": int(x), "b": int(y) + k % 2})
            msg = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_%d" % k, "type": "function", "function": {"name": "add", "arguments": args}}]}
            return {"id": "cmpl-%d" % k, "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}]}
        msg = {"role": "assistant", "content": "<answer>%s</answer>" % tool_msgs[-1]["content"], "tool_calls": None}
        return {"id": "cmpl-a", "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]}


def run_group(env, rows, model):
    inputs = [dict(r, example_id=i) for i, r in enumerate(rows)]
    outs = asyncio.run(env.run_group(inputs, verifiers_loop.client_for(V, model), "scripted", {}, state_columns=["benchmax_rewards"]))
    return outs, list(type(env).last_states)


def plain(m):
    """A completion message of verifiers' output as a dict, its tool calls decoded (the output keeps them as JSON)."""
    d = m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else {k: v for k, v in dict(m).items() if v is not None}
    if d.get("tool_calls"):
        d["tool_calls"] = [json.loads(c) if isinstance(c, str) else c for c in d["tool_calls"]]
    return {k: v for k, v in d.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}


def summary(out, state):
    err = state.get("error")
    return {
        "reward": out["reward"],
        "stop_condition": out["stop_condition"],
        "benchmax_rewards": out.get("benchmax_rewards"),
        "completion": [plain(m) for m in out["completion"]],
        "error": None if err is None else {
            "output": out["error"]["error"],
            "vf_error": isinstance(err, V.Error),
            "vf_infra_error": isinstance(err, V.InfraError),
            "benchmax_infra_error": isinstance(err, BenchmaxInfraError),
            "rollout_lost": isinstance(err, BenchmaxRolloutLost),
        },
    }  # fmt: skip


class Recorded:
    """The run of verifiers' own code, recorded (BENCHMAX_RECORD_FIXTURES=1 with VERIFIERS_CHECKOUT) or read."""

    cases = {}

    @classmethod
    def check(cls, case, name, value):
        if RECORD and V.source != "replica":
            cls.cases[name] = value
            data = {}
            if os.path.exists(FIXTURE):
                with open(FIXTURE) as f:
                    data = json.load(f)
            data["verifiers_commit"] = "a60a606ecc4d309247edf9ff92c3eabca362781f"
            data.setdefault("cases", {})[name] = value
            with open(FIXTURE, "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.write("\n")
            return
        with open(FIXTURE) as f:
            expected = json.load(f)["cases"][name]
        case.assertEqual(value, expected, "differs from verifiers' own run (fixtures/verifiers-run-group.result.json)")


@needs_server
class VerifiersLegacyGroupTest(unittest.TestCase):
    def test_loop_source(self):
        # VERIFIERS_CHECKOUT: the loop is verifiers' own package, imported from that checkout
        self.assertEqual(V.source, os.environ.get("VERIFIERS_CHECKOUT") or "replica")

    def test_group_of_4_with_native_tool_calls(self):
        before = metrics()
        env = make_env()
        rows = dataset_rows(env.benchmax_client)
        # reading the prompts made no rollout
        self.assertEqual(metrics()["rolloutsCreated"], before["rolloutsCreated"])
        self.assertEqual(rows[1], {"prompt": [{"role": "system", "content": "You add numbers. Answer in <answer></answer>."}, {"role": "user", "content": "What is 10 + 7?"}], "info": {"task_id": "t2"}})
        model = ScriptedModel()
        outs, states = run_group(env, [rows[1]] * 4, model)
        got = sorted((summary(o, s) for o, s in zip(outs, states)), key=lambda s: s["completion"][0]["tool_calls"][0]["id"])
        # verifiers' flat ToolCall reached the server: each member's add ran, and its answer was scored by the env
        sums = [sum(json.loads(g["completion"][0]["tool_calls"][0]["arguments"]).values()) for g in got]
        self.assertEqual(sums, [17, 18, 17, 18])
        self.assertEqual([g["reward"] for g in got], [1.0, 0.0, 1.0, 0.0])
        self.assertEqual([g["benchmax_rewards"] for g in got], [{"exact_match": 1}, {"exact_match": 0}] * 2)
        g = got[0]
        self.assertEqual((g["stop_condition"], g["error"]), ("has_final_env_response", None))
        self.assertEqual(g["completion"], [
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "name": "add", "arguments": '{"a": 10, "b": 7}'}]},
            {"role": "tool", "content": "17", "tool_call_id": "call_0", "name": "add"},
            {"role": "assistant", "content": "<answer>17</answer>"},
        ])  # fmt: skip
        self.assertEqual(sorted(model.requests[0]["tools"]), ["add", "fail", "note", "sleep"])
        after = metrics()
        self.assertEqual(after["rolloutsCreated"] - before["rolloutsCreated"], 4)
        self.assertEqual(after["activeRollouts"], before["activeRollouts"])
        Recorded.check(self, "group_of_4", got)
        # the assistant message verifiers handed to env_response, in the server's OpenAI shape
        first = states[0]["trajectory"][0]["completion"][0]
        dumped = first.model_dump(exclude_none=True)
        self.assertEqual(set(dumped["tool_calls"][0]), {"id", "name", "arguments"})
        Recorded.check(self, "env_response_message", {"model_dump": sorted(dumped), "tool_call": sorted(dumped["tool_calls"][0])})

    def test_max_turns_stop_is_scored_and_released(self):
        before = metrics()
        env = make_env(max_turns=2)
        rows = dataset_rows(env.benchmax_client)
        outs, states = run_group(env, [rows[0]] * 4, ScriptedModel(loop_forever=True))
        got = [summary(o, s) for o, s in zip(outs, states)]
        for g in got:
            # two replies with tool calls and no answer: scored 0 by the env on the conversation, not dropped
            self.assertEqual((g["stop_condition"], g["error"], g["reward"]), ("max_turns_reached", None, 0.0))
            self.assertEqual(g["benchmax_rewards"], {"exact_match": 0})
            self.assertEqual([m["role"] for m in g["completion"]], ["assistant", "tool", "assistant"])
        self.assertEqual(metrics()["activeRollouts"], before["activeRollouts"])
        Recorded.check(self, "max_turns", sorted([g["stop_condition"], g["reward"], g["benchmax_rewards"]["exact_match"]] for g in got))

    def test_unreachable_server_fails_each_sample_not_the_group(self):
        env = make_env(c=client("http://127.0.0.1:9"))
        rows = [{"prompt": [{"role": "user", "content": "What is 1 + 1?"}], "info": {"task_id": "t3"}}] * 2
        outs, states = run_group(env, rows, ScriptedModel())
        got = [summary(o, s) for o, s in zip(outs, states)]
        for g in got:
            self.assertEqual(g["stop_condition"], "has_error")
            self.assertEqual(g["completion"], [])
            # verifiers' failed rollout: an InfraError in state["error"] (its output keeps it; maybe_retry retries it)
            self.assertEqual({k: v for k, v in g["error"].items() if k != "output"}, {"vf_error": True, "vf_infra_error": True, "benchmax_infra_error": True, "rollout_lost": g["error"]["rollout_lost"]})
            self.assertIn(g["error"]["output"], ("BenchmaxInfraError", "BenchmaxRolloutLost"))
        Recorded.check(self, "unreachable", [g["stop_condition"] for g in got])

    def test_lost_rollout_fails_that_sample_only(self):
        class LosesCall1(BenchmaxClient):
            """The member whose call is call_1 loses its server (the client could not migrate it)."""

            def step(self, r, content, tool_calls=None):
                if tool_calls and tool_calls[0]["id"] == "call_1":
                    raise BenchmaxRolloutLost("rollout %s: no live env server left" % r.rollout_id)
                return super().step(r, content, tool_calls)

        before = metrics()
        env = make_env(c=client(cls=LosesCall1))
        rows = dataset_rows(env.benchmax_client)
        outs, states = run_group(env, [rows[1]] * 4, ScriptedModel())
        got = sorted((summary(o, s) for o, s in zip(outs, states)), key=lambda s: s["completion"][0]["tool_calls"][0]["id"])
        lost = got[1]
        self.assertEqual(lost["stop_condition"], "has_error")
        self.assertEqual(lost["error"], {"output": "BenchmaxRolloutLost", "vf_error": True, "vf_infra_error": True, "benchmax_infra_error": True, "rollout_lost": True})
        self.assertIsNone(lost["benchmax_rewards"])  # the env never scored it
        self.assertEqual([g["reward"] for g in got if g is not lost], [1.0, 1.0, 0.0])
        self.assertEqual([g["error"] for g in got if g is not lost], [None] * 3)
        self.assertEqual(metrics()["activeRollouts"], before["activeRollouts"])
        Recorded.check(self, "lost", [g["error"] and g["error"]["output"] for g in got])


class RecordedShapesTest(unittest.TestCase):
    """What verifiers' own code handed over, as recorded: read the same in CI."""

    def test_verifiers_tool_call_reaches_the_server_in_openai_shape(self):
        with open(FIXTURE) as f:
            rec = json.load(f)["cases"]
        first = rec["group_of_4"][0]["completion"]
        self.assertEqual(rec["env_response_message"]["tool_call"], ["arguments", "id", "name"])
        calls = openai_tool_calls(first[0]["tool_calls"])
        self.assertEqual(calls, [{"id": "call_0", "type": "function", "function": {"name": "add", "arguments": '{"a": 10, "b": 7}'}}])
        # the whole conversation is valid for the reward endpoint (OpenAI shape, every tool message answered)
        msgs = openai_messages([{"role": "user", "content": "What is 10 + 7?"}] + first)
        self.assertEqual(msgs[1]["tool_calls"][0]["function"]["name"], "add")
        self.assertEqual(msgs[2], {"role": "tool", "content": "17", "tool_call_id": "call_0", "name": "add"})


@needs_server
class VerifiersV1Test(unittest.TestCase):
    """The episode operations the v1 classes (BenchmaxTaskset, BenchmaxTask, BenchmaxToolset) call."""

    def test_tasks_start_call_score(self):
        before = metrics()
        tasks = v1_tasks(ENDPOINT, TOKEN)
        self.assertEqual(metrics()["rolloutsCreated"], before["rolloutsCreated"])  # no rollout to read prompts
        self.assertEqual(tasks[1], {"task_id": "t2", "prompt": [{"role": "user", "content": "What is 10 + 7?"}], "system_prompt": "You add numbers. Answer in <answer></answer>."})
        state = SimpleNamespace()
        v1_start(state, ENDPOINT, TOKEN, "t2")
        self.assertEqual(v1_call_tool(state, "add", {"a": 10, "b": 7}), ("17", False))
        text, bad = v1_call_tool(state, "nope", {})
        self.assertTrue(bad)  # a model's mistake: a tool error it reads
        self.assertIn("nope", text)
        self.assertTrue(v1_call_tool(state, "add", {"a": "ten"})[1])
        convo = [{"role": "user", "content": "What is 10 + 7?"}, {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "add", "arguments": '{"a": 10, "b": 7}'}]}, {"role": "tool", "tool_call_id": "c1", "content": "17"}, {"role": "assistant", "content": "<answer>17</answer>"}]
        self.assertEqual(v1_score(state, convo), (1.0, {"exact_match": 1.0}))
        self.assertTrue(state.released)
        self.assertEqual(metrics()["activeRollouts"], before["activeRollouts"])

    def test_unreachable_raises(self):
        from benchmax_client import verifiers

        verifiers._CLIENTS[("http://127.0.0.1:9", TOKEN)] = client("http://127.0.0.1:9")
        with self.assertRaises(BenchmaxInfraError):
            v1_start(SimpleNamespace(), "http://127.0.0.1:9", TOKEN, "t1")


if __name__ == "__main__":
    unittest.main()
