"""The client's one request path (BenchmaxClient._request), against a local stub server: what every request
carries, how answers map to errors, and the instance check."""

import unittest

from benchmax_client import BenchmaxClient, BenchmaxEnv, BenchmaxEnvError, BenchmaxInfraError
from benchmax_client.transport import HEALTH

from live import StubServer


def fleet_answer(instance="i-1"):
    """A stub of a benchmax server: every route the client calls, each answer from server instance `instance`."""

    def answer(method, path, body):
        head = {"x-benchmax-instance": instance}
        if path == "/health":
            return 200, {"status": "ok"}
        if path == "/metadata":
            return 200, {"tools": [{"name": "add"}], "hasGroupReward": True}, head
        if path.startswith("/v1/tasks"):
            return 200, {"tasks": [{"id": "t1", "prompt": "p"}]}, head
        if path == "/v1/group-reward":
            return 200, {"rewards": [{}], "combined": [1.0]}, head
        if path == "/v1/rollouts":
            return 201, {"rolloutId": "r1", "token": "k1", "taskId": "t1"}, head
        if path == "/reset":
            obs = {"episode_id": "r2", "rollout_token": "k2", "task_id": "t1", "messages": [], "tools": []}
            return 200, {"observation": obs}, head
        action = path.rsplit("/", 1)[-1]
        if action == "call":
            return 200, {"content": [{"type": "text", "text": "2"}], "isError": False}, head
        if action == "step":
            return 200, {"observation": {"rewards": {}, "passed": True}, "reward": 1.0, "done": True}, head
        if action == "reward":
            return 200, {"reward": 1.0, "rewards": {}, "passed": True}, head
        if action == "fork":
            return 200, {"children": [{"rolloutId": "r3", "token": "k3"}]}, head
        return 200, {"released": True}, head

    return answer


class RequestPathTest(unittest.TestCase):
    def setUp(self):
        HEALTH.reset()
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()

    def stub(self, answer):
        s = StubServer(answer)
        self.servers.append(s)
        return s

    def test_every_request_carries_the_token_and_a_rollout_call_its_rollout_token(self):
        srv = self.stub(fleet_answer())
        client = BenchmaxClient(srv.url, token="tok", retries=0)
        try:
            self.assertTrue(client.alive(srv.url))
            client.metadata()
            client.tasks(limit=1, system_prompts=True)
            r = client.create_rollout("t1", max_turns=3, trainer_step=2)
            client.call_tool(r, "add", {"a": 1})
            [kid] = client.fork(r, 1)
            client.reward(r, [{"role": "user", "content": "x"}])
            client.group_reward("t1", None, [{"rolloutId": "r1", "messages": [], "rewards": {}}])
            client.step(kid, "<answer>2</answer>")
            client.release(r)
            env = BenchmaxEnv(client=client)
            env.reset(task_id="t1")
            env.close()
        finally:
            client.close()
        seen = {(m, p): h for m, p, h, _ in srv.requests}
        rollout_token = {"/v1/rollouts/r1/call": "k1", "/v1/rollouts/r1/fork": "k1", "/v1/rollouts/r1/reward": "k1",
                         "/v1/rollouts/r3/step": "k3", "/v1/rollouts/r1/release": "k1", "/v1/rollouts/r2/release": "k2"}
        self.assertEqual(
            sorted(p for _, p in seen),
            sorted(["/health", "/metadata", "/v1/tasks?include=systemPrompt&limit=1", "/v1/rollouts", "/v1/group-reward",
                    "/reset"] + list(rollout_token)),
        )
        for (method, path), h in seen.items():
            # the /health probe is public: it carries no token
            self.assertEqual(h.get("authorization"), None if path == "/health" else "Bearer tok", path)
            self.assertEqual(h.get("x-rollout-token"), rollout_token.get(path), path)
            self.assertEqual(h.get("accept"), "application/json", path)
            if method == "POST":
                self.assertEqual(h.get("content-type"), "application/json", path)
        create = next(b for _, p, _, b in srv.requests if p == "/v1/rollouts")
        self.assertEqual(create, {"taskId": "t1", "maxTurns": 3, "metadata": {"trainer_step": 2}})

    def test_a_refused_token_is_infra_and_no_other_server_is_asked(self):
        refused = self.stub(lambda m, p, b: (401, {"error": {"message": "bad token"}}))
        other = self.stub(fleet_answer())
        client = BenchmaxClient([refused.url, other.url], token="tok", retries=0)
        client._next = 0
        try:
            with self.assertRaises(BenchmaxInfraError) as ctx:
                client.metadata()
        finally:
            client.close()
        self.assertIn("check BENCHMAX_TOKEN", str(ctx.exception))
        self.assertIn("bad token", str(ctx.exception))
        self.assertEqual(other.requests, [])

    def test_a_refused_call_is_the_envs_error(self):
        def answer(method, path, body):
            if path.endswith("/call"):
                return 400, {"error": {"message": "no such tool"}}
            return fleet_answer()(method, path, body)

        srv = self.stub(answer)
        client = BenchmaxClient(srv.url, token="tok", retries=0)
        try:
            r = client.create_rollout("t1")
            with self.assertRaises(BenchmaxEnvError) as ctx:
                client.call_tool(r, "nope", {})
        finally:
            client.close()
        self.assertIn("call on rollout r1 failed (HTTP 400): no such tool", str(ctx.exception))

    def test_another_server_instance_has_lost_the_rollout(self):
        instance = ["i-1"]
        srv = self.stub(lambda m, p, b: fleet_answer(instance[0])(m, p, b))
        client = BenchmaxClient(srv.url, token="tok", retries=0, migrate=False)
        try:
            r = client.create_rollout("t1")
            self.assertEqual(client.call_tool(r, "add", {})["isError"], False)
            instance[0] = "i-2"  # the server restarted
            with self.assertRaises(BenchmaxInfraError) as ctx:
                client.call_tool(r, "add", {})
        finally:
            client.close()
        self.assertIn("lost rollout r1 (restarted or expired)", str(ctx.exception))
        self.assertEqual(client.stats["infra_errors"], 1)

    def test_a_draining_server_gets_no_new_rollouts(self):
        def answer(method, path, body):
            out = fleet_answer()(method, path, body)
            return out[0], out[1], {"x-benchmax-draining": "1"}

        srv = self.stub(answer)
        client = BenchmaxClient(srv.url, token="tok", retries=0)
        try:
            client.metadata()
        finally:
            client.close()
        self.assertTrue(HEALTH.is_down(srv.url))
        self.assertFalse(HEALTH.is_dead(srv.url))


if __name__ == "__main__":
    unittest.main()
