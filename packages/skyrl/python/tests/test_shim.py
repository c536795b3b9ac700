"""The SkyRL shim driven by a faithful copy of SkyRL's generator calling sequence (skyrl_loop.py)."""

import asyncio
import json
import os
import time
import unittest
import urllib.request

from benchmax_skyrl import BenchmaxClient, BenchmaxEnvError, BenchmaxInfraError, BenchmaxTextEnv
from benchmax_skyrl.routing import env_classes_from, register_env_classes
from benchmax_skyrl.text_env import HAS_SKYRL

import skyrl_loop
from live import CUSTOM, ENDPOINT, PROMPT, TOKEN, StubServer, call, check_fixture, needs_server


class FlakyServer(StubServer):
    """A local server answering 503 `failures` times, then a rollout; counts the requests."""

    def __init__(self, failures):
        def answer(method, path, body):
            if len(self.requests) <= failures:
                return 503, {"error": {"message": "busy", "code": "CAPACITY_REACHED"}}
            return 201, {"rolloutId": "r_1", "token": "t", "taskId": "t1"}

        super().__init__(answer)


def row(task_id, env_class="benchmax_calc", task=None, env="calc"):
    """A row as `benchmax export skyrl` writes it (packages/skyrl/src/export-skyrl.ts skyrlRow)."""
    return {
        "data_source": "benchmax/" + env,
        "prompt": PROMPT,
        "env_class": env_class,
        "reward_spec": {"method": "rule", "ground_truth": "17"},
        "extra_info": {"task_id": task_id, "index": 0, "split": "train", "env": env, "task": json.dumps(task) if task else ""},
    }


def scripted(replies):
    """A policy answering with the next reply of a script per conversation (keyed by the user prompt)."""

    def policy(chat):
        n = sum(1 for m in chat if m["role"] == "assistant")
        return replies[n] if n < len(replies) else replies[-1]

    return policy


def metrics(url):
    req = urllib.request.Request(url + "/metrics", headers={"authorization": "Bearer %s" % TOKEN, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


class EngineServer(StubServer):
    """A server whose episode engine enforces maxTurns (server-api.md): it echoes maxTurns and ends the
    max_turns-th reply scored and truncated without running its tools. Records every request path."""

    def __init__(self):
        self.turns = 0

        def answer(method, path, body):
            if path == "/v1/rollouts":
                return 201, {"rolloutId": "r1", "token": "k", "taskId": "t1", "maxTurns": body.get("maxTurns")}
            if not path.endswith("/step"):
                return 200, {"released": True}
            self.turns += 1
            if self.turns >= 2:
                return 200, {"observation": {"rewards": {"x": 0}, "passed": False, "truncated": True}, "reward": 0, "done": True}
            res = [{"tool_call_id": "c0", "tool_name": "add", "result": "2"}]
            tool = [{"role": "tool", "tool_call_id": "c0", "content": "2"}]
            return 200, {"observation": {"tool_results": res, "messages": tool}, "reward": None, "done": False}

        super().__init__(answer)


class RetryTest(unittest.TestCase):
    def test_server_side_turn_limit_is_trusted(self):
        srv = EngineServer()
        try:
            env = BenchmaxTextEnv({"endpoints": srv.url}, {"max_turns": 2, "extra_info": {"task_id": "t1"}})
            env.init(PROMPT)
            self.assertEqual(env.rollout.max_turns, 2)
            self.assertFalse(env.step(call("add", a=1, b=1))["done"])
            out = env.step(call("add", a=1, b=1))
            self.assertEqual((out["done"], out["reward"], out["metadata"]["truncated"]), (True, 0.0, True))
            env.close()
            # no client-side scoring: the engine ended the episode (and released the rollout)
            self.assertEqual(srv.paths, ["/v1/rollouts", "/v1/rollouts/r1/step", "/v1/rollouts/r1/step"])
            check_fixture(self, "server-create.request", srv.bodies[0])
            check_fixture(self, "server-step.request", srv.bodies[1])
        finally:
            srv.close()

    def test_transient_503_is_retried(self):
        srv = FlakyServer(failures=2)
        try:
            client = BenchmaxClient(srv.url, retries=3, backoff_s=0.01)
            r = client.create_rollout("t1")
            self.assertEqual(r.rollout_id, "r_1")
            self.assertEqual(client.stats["retries"], 2)
            client.close()
        finally:
            srv.close()

    def test_persistent_503_raises_after_retries(self):
        srv = FlakyServer(failures=100)
        try:
            env = BenchmaxTextEnv(
                {"endpoints": srv.url, "retries": 2, "on_lost": "raise", "migrate_timeout_s": 0},
                {"extra_info": {"task_id": "t1"}},
            )
            env.client.backoff_s = 0.01
            with self.assertRaises(BenchmaxInfraError) as ctx:
                env.init(PROMPT)
            self.assertIn("HTTP 503: busy", str(ctx.exception))
            self.assertEqual(len(srv.requests), 3)
            self.assertEqual(env.get_metrics()["infra_errors"], 1)
        finally:
            srv.close()

    def test_routing_spec(self):
        spec = "benchmax_math=http://h:1,http://h:2; benchmax_excel=http://h:3"
        self.assertEqual(env_classes_from(spec), {"benchmax_math": ["http://h:1", "http://h:2"], "benchmax_excel": ["http://h:3"]})
        self.assertEqual(env_classes_from(None, {"BENCHMAX_ENV_CLASS": "x", "BENCHMAX_ENDPOINTS": "http://a:1"}), {"x": ["http://a:1"]})
        for bad in ("benchmax_math", "a=ftp://x", "a=http://x;a=http://y"):
            with self.assertRaises(ValueError):
                env_classes_from(bad)

    def test_client_pickles_without_connections(self):
        import pickle

        c = BenchmaxClient("http://127.0.0.1:1", token="t")
        c2 = pickle.loads(pickle.dumps(c))
        self.assertEqual((c2.endpoints, c2.token), (["http://127.0.0.1:1"], "t"))
        c2.close()


@needs_server
class SkyrlGeneratorTest(unittest.TestCase):
    def setUp(self):
        skyrl_loop.REGISTRY.clear()
        register_env_classes(skyrl_loop.register, {"benchmax_calc": [ENDPOINT]})
        self.cfg = skyrl_loop.SkyrlGymCfg(max_env_workers=8, benchmax_calc={"token": TOKEN, "retries": 1})

    def run_gen(self, rows, policy, max_turns=5, cfg=None):
        gen = skyrl_loop.Generator(cfg or self.cfg, max_turns, policy)
        try:
            return asyncio.run(gen.generate(rows)), gen
        finally:
            gen.close()

    def test_base_class(self):
        self.assertTrue(hasattr(BenchmaxTextEnv, "init") and hasattr(BenchmaxTextEnv, "step"))
        self.assertIn(HAS_SKYRL, (True, False))

    def test_episode_tools_then_answer(self):
        policy = scripted(["Let me add. " + call("add", a=10, b=7) + call("add", a=1, b="x"), "<answer>17</answer>"])
        [out], gen = self.run_gen([row("t2")], policy)
        self.assertEqual((out["reward"], out["step_rewards"], out["turns"]), (1.0, [0.0, 1.0], 2))
        obs = out["chat"][3]
        self.assertEqual(obs["role"], "user")
        self.assertIn("<tool_response>\n17\n</tool_response>", obs["content"])
        self.assertIn("invalid arguments", obs["content"])
        m = out["env_metrics"]
        self.assertEqual((m["tool_calls"], m["tool_errors"], m["infra_errors"], m["reward/exact_match"]), (2, 1, 0, 1))
        self.assertTrue(gen.envs[0].done)

    def test_step_output_and_wire_shapes(self):
        env = skyrl_loop.make("benchmax_calc", env_config={"token": TOKEN}, extras={"max_turns": 3, **skyrl_loop.row_to_input(row("t2"))[2]})
        prompt, meta = env.init(PROMPT)
        self.assertEqual(prompt, PROMPT)
        self.assertEqual(meta["task_id"], "t2")
        raw = env.client.step(env.rollout, call("note", text="hi"))
        check_fixture(self, "server-step-tools.response", raw)
        out = env.step("<answer>17</answer>")
        check_fixture(self, "skyrl-step-done.output", out)
        self.assertEqual(set(out), {"observations", "reward", "done", "metadata", "postprocessed_action"})
        env.close()
        r = env.client.create_rollout("t2", None, 3)
        check_fixture(self, "server-create.response", {"rolloutId": r.rollout_id, "token": r.token, "taskId": r.task_id, "customActions": r.custom_actions})
        done = env.client.step(r, "<answer>17</answer>")
        check_fixture(self, "server-step-done.response", done)
        env.client.close()

    def test_inline_task_and_tool_role(self):
        cfg = skyrl_loop.SkyrlGymCfg(benchmax_calc={"token": TOKEN, "observation_role": "tool"})
        task = {"id": "inline-1", "prompt": "What is 4 + 4?", "groundTruth": "8"}
        [out], _ = self.run_gen([row("inline-1", task=task)], scripted([call("add", a=4, b=4), "<answer>8</answer>"]), cfg=cfg)
        self.assertEqual(out["chat"][3], {"role": "tool", "content": "8"})
        self.assertEqual(out["reward"], 1.0)

    def test_max_turns_ends_scored_and_truncated(self):
        [out], gen = self.run_gen([row("t2")], scripted([call("add", a=1, b=1)]), max_turns=2)
        self.assertEqual((out["turns"], out["reward"]), (2, 0.0))
        self.assertEqual(out["env_metrics"]["reward/exact_match"], 0)

    def test_malformed_call_is_an_observation(self):
        [out], _ = self.run_gen([row("t2")], scripted(["<tool_call>{oops</tool_call>", "<answer>17</answer>"]))
        self.assertIn("Error", out["chat"][3]["content"])
        self.assertEqual(out["env_metrics"]["parse_errors"], 1)

    def test_many_concurrent_episodes(self):
        before = metrics(ENDPOINT)["activeRollouts"]
        rows = [row(t) for t in ("t1", "t2", "t3") for _ in range(8)]
        outs, _ = self.run_gen(rows, scripted([call("note", text="x"), "<answer>17</answer>"]))
        self.assertEqual(len(outs), 24)
        self.assertEqual(sorted(o["reward"] for o in outs), [0.0] * 16 + [1.0] * 8)
        self.assertEqual(metrics(ENDPOINT)["activeRollouts"], before)

    def test_unreachable_server_raises_not_zero(self):
        # SkyRL has no failed-sample path: by default the episode ends lost, with 0.0 marked and counted
        cfg = skyrl_loop.SkyrlGymCfg(benchmax_calc={"endpoints": "http://127.0.0.1:1", "retries": 0, "migrate_timeout_s": 0})
        [out], gen = self.run_gen([row("t1")], scripted(["<answer>5</answer>"]), cfg=cfg)
        self.assertEqual((out["reward"], out["env_metrics"]["lost_rollouts"]), (0.0, 1))
        self.assertTrue(gen.envs[0].final["lost"])
        # on_lost: raise keeps the step's exception
        cfg = skyrl_loop.SkyrlGymCfg(
            benchmax_calc={"endpoints": "http://127.0.0.1:1", "retries": 0, "migrate_timeout_s": 0, "on_lost": "raise"}
        )
        with self.assertRaises(BenchmaxInfraError) as ctx:
            self.run_gen([row("t1")], scripted(["<answer>5</answer>"]), cfg=cfg)
        self.assertIn("Connection refused", str(ctx.exception))

    def test_unknown_task_is_env_error(self):
        with self.assertRaises(BenchmaxEnvError) as ctx:
            self.run_gen([row("no-such-task")], scripted(["<answer>5</answer>"]))
        self.assertIn("unknown task id", str(ctx.exception))

    def test_failed_step_fails_loudly_and_releases_the_rollout(self):
        # a step that times out on the client (the tool sleeps past timeout_s): SkyRL's generator never calls
        # close() then, so the shim itself releases the rollout before raising
        before = metrics(ENDPOINT)["activeRollouts"]
        cfg = skyrl_loop.SkyrlGymCfg(
            benchmax_calc={"token": TOKEN, "retries": 0, "timeout_s": 0.2, "on_lost": "raise", "migrate_timeout_s": 0}
        )
        with self.assertRaises(BenchmaxInfraError):
            self.run_gen([row("t2")], scripted([call("sleep", ms=600)]), cfg=cfg)
        deadline = time.monotonic() + 10
        while metrics(ENDPOINT)["activeRollouts"] != before and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(metrics(ENDPOINT)["activeRollouts"], before)

    @unittest.skipIf(not CUSTOM, "BENCHMAX_TEST_CUSTOM_ENDPOINT not set")
    def test_mixed_env_classes_route_to_their_own_servers(self):
        skyrl_loop.REGISTRY.clear()
        classes = env_classes_from("benchmax_calc=%s;benchmax_calc_custom=%s" % (ENDPOINT, CUSTOM))
        register_env_classes(skyrl_loop.register, classes)
        cfg = skyrl_loop.SkyrlGymCfg(benchmax_calc={"token": TOKEN}, benchmax_calc_custom={"token": TOKEN})
        a0, b0 = metrics(ENDPOINT)["rolloutsCreated"], metrics(CUSTOM)["rolloutsCreated"]
        rows = [row("t2"), row("t2", "benchmax_calc_custom"), row("t2"), row("t2", "benchmax_calc_custom"), row("t2", "benchmax_calc_custom")]

        def policy(chat):
            # the custom-action env understands <add>a b</add>; the other one only tool calls
            n = sum(1 for m in chat if m["role"] == "assistant")
            return ("I will add. <add>10 7</add> " + call("add", a=10, b=7)) if n == 0 else "<answer>17</answer>"

        outs, gen = self.run_gen(rows, policy, cfg=cfg)
        self.assertEqual([o["reward"] for o in outs], [1.0] * 5)
        self.assertEqual(metrics(ENDPOINT)["rolloutsCreated"] - a0, 2)
        self.assertEqual(metrics(CUSTOM)["rolloutsCreated"] - b0, 3)
        self.assertEqual({e.client.endpoints[0] for e in gen.envs}, {ENDPOINT, CUSTOM})


if __name__ == "__main__":
    unittest.main()
