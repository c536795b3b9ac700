"""benchmax_client.verifiers driven by verifiers' MultiTurnEnv rollout loop (verifiers_loop.py: our step-by-step
copy, or verifiers' own methods from VERIFIERS_CHECKOUT) with a scripted model, against a live server (calc env)."""

import asyncio
import json
import os
import re
import unittest
import urllib.request

from benchmax_client import BenchmaxClient, BenchmaxInfraError
from benchmax_client.verifiers import BenchmaxVerifiersMixin, benchmax_reward, dataset_rows, tool_defs

import verifiers_loop
from live import ENDPOINT, TOKEN, check_fixture, needs_server


def metrics():
    req = urllib.request.Request(ENDPOINT + "/metrics", headers={"authorization": "Bearer " + TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


class Env(BenchmaxVerifiersMixin, verifiers_loop.MultiTurnEnvStandIn):
    pass


def make_env(max_turns=5, url=None):
    client = BenchmaxClient(url or ENDPOINT, token=TOKEN, retries=0)
    tools = tool_defs(client) if url is None else []
    env = Env(max_turns=max_turns, tool_defs=tools, rubric_funcs=[benchmax_reward])
    env.benchmax_client = client
    return env


class ScriptedModel:
    """The chat model: native tool calls (member k calls add(x, y + k % 2)), then answers the tool's result."""

    def __init__(self, loop_forever=False):
        self.n = 0
        self.loop_forever = loop_forever
        self.seen_tools = None

    async def __call__(self, messages, tools):
        self.seen_tools = [t["name"] for t in tools]
        tool_msgs = [m for m in messages if m["role"] == "tool"]
        if not tool_msgs or self.loop_forever:
            k = self.n
            self.n += 1
            x, y = re.findall(r"What is (\d+) \+ (\d+)\?", messages[-1]["content"] if not tool_msgs else messages[1]["content"])[0]
            args = {"a": int(x), "b": int(y) + k % 2}
            return {"role": "assistant", "content": "", "tool_calls": [{"id": "call_%d" % k, "type": "function", "function": {"name": "add", "arguments": json.dumps(args)}}]}
        return {"role": "assistant", "content": "<answer>%s</answer>" % tool_msgs[-1]["content"]}


@needs_server
class VerifiersRolloutTest(unittest.TestCase):
    def test_group_rollouts_scored_by_the_env(self):
        before = metrics()["activeRollouts"]
        env = make_env()
        # VERIFIERS_CHECKOUT: the loop code is verifiers' own, read from that checkout
        self.assertEqual(verifiers_loop.MultiTurnEnvStandIn.source, os.environ.get("VERIFIERS_CHECKOUT") or "replica")
        rows = dataset_rows(env.benchmax_client)
        self.assertEqual(rows[1], {"prompt": [{"role": "system", "content": "You add numbers. Answer in <answer></answer>."}, {"role": "user", "content": "What is 10 + 7?"}], "info": {"task_id": "t2"}})
        model = ScriptedModel()
        states = asyncio.run(env.run_group([rows[1]] * 4, model))
        # members whose call added up right answered 17 and got 1 from the env; the others 0
        sums = [sum(json.loads(s["completion"][0]["tool_calls"][0]["function"]["arguments"]).values()) for s in states]
        self.assertEqual(sorted(sums), [17, 17, 18, 18])
        self.assertEqual([s["reward"] for s in states], [1.0 if x == 17 else 0.0 for x in sums])
        states.sort(key=lambda st: st["completion"][0]["tool_calls"][0]["id"])
        self.assertEqual(sorted(model.seen_tools), ["add", "fail", "note", "sleep"])
        s = states[0]
        self.assertEqual(s["stop_condition"], "has_final_env_response")
        self.assertEqual([m["role"] for m in s["completion"]], ["assistant", "tool", "assistant"])
        self.assertEqual(s["completion"][1], {"role": "tool", "content": "17", "tool_call_id": "call_0", "name": "add"})
        self.assertEqual(s["benchmax_rewards"], {"exact_match": 1})
        self.assertEqual(metrics()["activeRollouts"], before)
        check_fixture(self, "verifiers-rollout.result", {"completion": s["completion"], "reward": s["reward"], "stop_condition": s["stop_condition"]})

    def test_max_turns_is_scored_on_the_conversation_and_released(self):
        before = metrics()["activeRollouts"]
        env = make_env(max_turns=2)
        rows = dataset_rows(env.benchmax_client)
        [s] = asyncio.run(env.run_group([rows[0]], ScriptedModel(loop_forever=True)))
        self.assertEqual(s["stop_condition"], "max_turns_reached")
        self.assertEqual(s["reward"], 0.0)  # no answer: scored 0 by the env, not dropped
        self.assertEqual(metrics()["activeRollouts"], before)

    def test_unreachable_server_fails_the_rollout(self):
        env = make_env(url="http://127.0.0.1:9")
        with self.assertRaises(BenchmaxInfraError):
            asyncio.run(env.run_group([{"prompt": [{"role": "user", "content": "What is 1 + 1?"}], "info": {"task_id": "t3"}}], ScriptedModel()))


if __name__ == "__main__":
    unittest.main()
