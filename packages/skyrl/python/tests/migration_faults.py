"""Rollout migration in benchmax_client, against real env server processes killed, stopped, drained and restarted
mid-rollout (serve-test-env.mjs beside this file: the calc test env, whose `note` tool keeps per-rollout state,
plus `dice`, a nondeterministic tool). Also under SkyRL's calling sequence (skyrl_loop.py) and the cookbook's group
rollout (cookbook_loop.py)."""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from benchmax_client import BenchmaxClient, BenchmaxEnv, BenchmaxRolloutLost
from benchmax_client.transport import HEALTH

import cookbook_loop
import skyrl_loop
from live import PROMPT, call
from benchmax_skyrl import BenchmaxEnvGroupBuilder, register_env_classes
from test_cookbook import ScriptedPolicy

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "serve-test-env.mjs")
TOKEN = "migration-token"
NODE = shutil.which("node")
REASON = None
if NODE is None:
    REASON = "node is not on PATH"
elif not os.path.exists(os.path.join(HERE, "..", "..", "..", "server", "dist", "index.js")):
    REASON = "@benchmax/server is not built (npm run build)"
if REASON:
    print("SKIPPED migration tests: " + REASON)


class Server:
    """One `serve-test-env.mjs` process."""

    def __init__(self, port=0, grace_ms=30000):
        self.proc = subprocess.Popen(
            [NODE, SCRIPT, "--token", TOKEN, "--port", str(port), "--grace-ms", str(grace_ms)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=os.path.dirname(SCRIPT),
        )
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("test server did not start: " + self.proc.stderr.read().decode()[-2000:])
        hello = json.loads(line)
        self.url, self.pid, self.instance = hello["url"], hello["pid"], hello["instance"]
        self.port = int(self.url.rsplit(":", 1)[1])

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()

    def wait(self, timeout=60):
        return self.proc.wait(timeout)


def episode_on(servers, rollout):
    return next(s for s in servers if s.url == rollout.endpoint)


def one_call_in(client, servers, tool="note", args=None):
    """An episode of task t1 that has made one tool call (by default the note "x"): (the env, the server it is on)."""
    env = BenchmaxEnv(client=client)
    env.reset(task_id="t1")
    env.call_tool(tool, {"text": "x"} if args is None else args)
    return env, episode_on(servers, env.rollout)


def busiest(servers):
    """The live server holding the most rollouts now (the one whose loss costs the most)."""
    import urllib.request

    def active(s):
        req = urllib.request.Request(s.url + "/health", headers={"accept": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())["activeRollouts"]

    return max((s for s in servers if s.proc.poll() is None), key=active)


class FreshHealth(unittest.TestCase):
    """Each test starts with no memory of earlier tests' endpoints (their ports are reused by new servers)."""

    def setUp(self):
        HEALTH.reset()

    def fleet(self, n, **server):
        """`n` env servers, killed when the test ends (those the list then holds: a test may put a restarted one in)."""
        servers = [Server(**server) for _ in range(n)]
        self.addCleanup(lambda: [s.kill() for s in servers])
        return servers

    def client_of(self, servers, **opts):
        """A client of `servers` that retries once and takes a call unanswered for 0.5 s as a hang; closed when the
        test ends (before its servers are killed)."""
        opts = {"retries": 1, "backoff_s": 0.05, "hang_after_s": 0.5, **opts}
        client = BenchmaxClient([s.url for s in servers], TOKEN, **opts)
        self.addCleanup(client.close)
        return client


@unittest.skipIf(REASON is not None, REASON or "")
class MigrationTest(FreshHealth):
    def setUp(self):
        super().setUp()
        self.servers = self.fleet(3)
        self.client = self.client_of(self.servers, migrate_timeout_s=3)

    def env(self):
        return BenchmaxEnv(client=self.client)

    def test_killed_server_costs_no_rollout(self):
        env = self.env()
        env.reset(task_id="t3")
        self.assertEqual(env.call_tool_text("note", {"text": "a"}), "a")
        out = env.step(call("note", text="b"))
        self.assertEqual(out["observation"]["tool_results"][0]["result"], "a,b")
        lost = episode_on(self.servers, env.rollout)
        lost.signal(signal.SIGKILL)
        lost.wait()
        # the state (notes a, b) was rebuilt elsewhere by replaying the log, and the episode goes on
        self.assertEqual(env.call_tool_text("note", {"text": "c"}), "a,b,c")
        self.assertNotEqual(env.rollout.endpoint, lost.url)
        self.assertEqual(env.rollout.migrations, 1)
        self.assertEqual(self.client.stats["replayed_calls"], 2)
        out = env.step("<answer>6</answer>")
        self.assertEqual((out["done"], out["reward"]), (True, 1.0))
        self.assertEqual(self.client.stats["lost_rollouts"], 0)

    def test_hung_server_is_left(self):
        env, hung = one_call_in(self.client, self.servers)
        hung.signal(signal.SIGSTOP)
        try:
            # no answer, and /health silent: a hang; the rollout moves, the call is answered elsewhere
            self.assertEqual(env.call_tool_text("note", {"text": "y"}), "x,y")
            self.assertNotEqual(env.rollout.endpoint, hung.url)
            # new rollouts avoid the hung server
            for _ in range(4):
                other = self.env()
                other.reset(task_id="t1")
                self.assertNotEqual(other.rollout.endpoint, hung.url)
                other.close()
        finally:
            hung.signal(signal.SIGCONT)
        self.assertEqual(env.step("<answer>2</answer>")["reward"], 1.0)

    def test_forks_of_a_lost_parent_are_rebuilt_from_its_log(self):
        env = self.env()
        env.reset(task_id="t2")
        env.call_tool("note", {"text": "parent"})
        kids = env.fork(2)
        self.assertEqual(kids[0].call_tool_text("note", {"text": "k0"}), "parent,k0")
        lost = episode_on(self.servers, env.rollout)
        lost.signal(signal.SIGKILL)
        lost.wait()
        self.assertEqual(kids[0].call_tool_text("note", {"text": "again"}), "parent,k0,again")
        self.assertEqual(kids[1].call_tool_text("note", {"text": "k1"}), "parent,k1")
        self.assertEqual(env.call_tool_text("note", {"text": "p"}), "parent,p")
        for e in [env] + kids:
            self.assertEqual(e.step("<answer>4</answer>")["reward"], 1.0)
        self.assertEqual(self.client.stats["migrations"], 3)

    def test_a_nondeterministic_tool_fails_the_migration_never_scores_0(self):
        env, lost = one_call_in(self.client, self.servers, "dice", {})
        lost.signal(signal.SIGKILL)
        lost.wait()
        with self.assertRaises(BenchmaxRolloutLost) as ctx:
            env.call_tool("note", {"text": "after"})
        self.assertIn("another result", str(ctx.exception))
        self.assertEqual(self.client.stats["lost_rollouts"], 1)
        self.assertIsNone(env.final)

    def test_no_server_left_is_lost_not_zero(self):
        env, _ = one_call_in(self.client, self.servers)
        for s in self.servers:
            s.signal(signal.SIGKILL)
            s.wait()
        with self.assertRaises(BenchmaxRolloutLost) as ctx:
            env.step(call("note", text="y"))
        self.assertIn("no live env server", str(ctx.exception))

    def test_a_restarted_server_is_a_new_instance(self):
        env, old = one_call_in(self.client, self.servers)
        port, instance = old.port, old.instance
        old.kill()
        i = self.servers.index(old)
        self.servers[i] = new = Server(port=port)
        self.assertNotEqual(new.instance, instance)
        # the calls are not sent to the new process as if it held the rollout: it is rebuilt (on any live server)
        self.assertEqual(env.call_tool_text("note", {"text": "y"}), "x,y")
        self.assertEqual(env.rollout.migrations, 1)

    def test_drain_takes_no_new_rollouts_and_finishes_live_ones(self):
        env, draining = one_call_in(self.client, self.servers)
        draining.signal(signal.SIGTERM)
        # wait until it says so (readiness fails)
        for _ in range(200):
            if not self._healthy(draining.url):
                break
            time.sleep(0.05)
        for _ in range(6):
            other = self.env()
            other.reset(task_id="t2")
            self.assertNotEqual(other.rollout.endpoint, draining.url)
            other.close()
        # the live rollout finishes where it is
        self.assertEqual(env.call_tool_text("note", {"text": "y"}), "x,y")
        self.assertEqual(env.rollout.endpoint, draining.url)
        self.assertEqual(env.step("<answer>2</answer>")["reward"], 1.0)
        self.assertEqual(env.rollout.migrations, 0)
        # its last rollout gone, the draining server exits by itself
        self.assertEqual(draining.wait(60), 0)

    def _healthy(self, url):
        import urllib.request

        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                return r.status == 200
        except Exception:
            return False


@unittest.skipIf(REASON is not None, REASON or "")
class DrainGraceTest(FreshHealth):
    def test_rollouts_left_past_the_grace_migrate(self):
        servers = self.fleet(2, grace_ms=300)
        env, draining = one_call_in(self.client_of(servers), servers)
        draining.signal(signal.SIGTERM)
        self.assertEqual(draining.wait(60), 0)  # the grace passed with the rollout still open
        self.assertEqual(env.call_tool_text("note", {"text": "y"}), "x,y")
        self.assertEqual(env.rollout.migrations, 1)


@unittest.skipIf(REASON is not None, REASON or "")
class TrainerLoopsTest(FreshHealth):
    """SkyRL's calling sequence (skyrl_loop.py) with a server killed mid-episode."""

    def setUp(self):
        super().setUp()
        self.servers = self.fleet(2)

    def run_gen(self, rows, policy, endpoints, **cfg):
        skyrl_loop.REGISTRY.clear()
        register_env_classes(skyrl_loop.register, {"benchmax_calc": endpoints})
        conf = {"token": TOKEN, "retries": 1, "timeout_s": 30}
        conf.update(cfg)
        gen = skyrl_loop.Generator(skyrl_loop.SkyrlGymCfg(max_env_workers=8, benchmax_calc=conf), 6, policy)
        try:
            return asyncio.run(gen.generate(rows)), gen
        finally:
            gen.close()

    def test_skyrl_step_goes_on_when_a_server_dies(self):
        killed = []

        def policy(chat):
            n = sum(1 for m in chat if m["role"] == "assistant")
            if n == 1 and not killed:
                victim = busiest(self.servers)
                killed.append(victim)
                victim.signal(signal.SIGKILL)
                victim.wait()
            return [call("note", text="a"), call("note", text="b"), "<answer>4</answer>"][min(n, 2)]

        rows = [row("t2") for _ in range(4)]
        outs, gen = self.run_gen(rows, policy, [s.url for s in self.servers])
        self.assertEqual([o["reward"] for o in outs], [1.0] * 4)
        # the second note saw the first one: state rebuilt wherever the rollout moved
        for o in outs:
            self.assertIn("a,b", json.dumps(o["chat"]))
        metrics = [o["env_metrics"] for o in outs]
        self.assertEqual(sum(m["lost_rollouts"] for m in metrics), 0)
        self.assertGreaterEqual(sum(m["migrations"] for m in metrics), 1)

    def test_skyrl_lost_rollout_ends_counted_not_crashed(self):
        def policy(chat):
            n = sum(1 for m in chat if m["role"] == "assistant")
            if n == 1:
                for s in self.servers:
                    if s.proc.poll() is None:
                        s.signal(signal.SIGKILL)
                        s.wait()
            return [call("note", text="a"), call("note", text="b"), "<answer>4</answer>"][min(n, 2)]

        outs, gen = self.run_gen([row("t2")], policy, [s.url for s in self.servers], migrate_timeout_s=1)
        [out] = outs
        # the generation step lives: the episode ended with 0.0, marked lost and counted in the env metrics
        self.assertEqual(out["reward"], 0.0)
        self.assertEqual(out["env_metrics"]["lost_rollouts"], 1)
        self.assertTrue(gen.envs[0].final["lost"])

    def test_skyrl_on_lost_raise(self):
        for s in self.servers:
            s.signal(signal.SIGKILL)
            s.wait()
        with self.assertRaises(BenchmaxRolloutLost):
            self.run_gen(
                [row("t2")], lambda chat: "<answer>4</answer>", [s.url for s in self.servers], on_lost="raise", migrate_timeout_s=1
            )


@unittest.skipIf(REASON is not None, REASON or "")
class CookbookKillTest(FreshHealth):
    """The cookbook's group rollout (cookbook_loop.py) with the group's server killed mid-episode: the group's forks
    migrate and the step keeps every reward."""

    def test_group_survives_its_server(self):
        servers = self.fleet(2)
        b = BenchmaxEnvGroupBuilder(
            ",".join(s.url for s in servers), PROMPT, cookbook_loop.ToyRenderer(), task_id="t2", group_size=3,
            max_turns=5, token=TOKEN,
        )
        inner = ScriptedPolicy(b.renderer, [["<answer>4</answer>"], ["<answer>0</answer>"], ["<answer>4</answer>"]])
        killed = []

        async def policy(ob, stop):
            if inner.calls == 3 and not killed:  # every member has its first reply: kill the group's server
                lost = episode_on(servers, b._rollouts[0])  # the group's parent, where its forks are too
                lost.signal(signal.SIGKILL)
                lost.wait()
                killed.append(lost)
            return await inner(ob, stop)

        group = asyncio.run(cookbook_loop.do_group_rollout(b, policy))
        self.assertEqual(killed and len(killed), 1)
        self.assertEqual(group.get_total_rewards(), [1.0, 0.0, 1.0])


@unittest.skipIf(REASON is not None, REASON or "")
class TrlKillTest(FreshHealth):
    """TRL's rollout_func under TRL's own sampler layout (trl_loop.py; TRL's code itself with TRL_CHECKOUT), with a
    server SIGKILLed once every slot has its first reply: its group migrates, every slot keeps reward 1."""

    def test_rollout_func_survives_a_killed_server(self):
        import trl_loop
        from benchmax_client.trl import dataset_rows, env_reward_func, rollout_func
        from test_trl import ChatMLGenerator

        servers = self.fleet(2)
        client = self.client_of(servers)
        gen = ChatMLGenerator()
        killed = []

        def generate(messages, tools):
            if gen.calls == 4 and not killed:  # 2 prompts × 2 generations: every slot has replied once
                victim = busiest(servers)
                victim.signal(signal.SIGKILL)
                victim.wait()
                killed.append(victim)
            return gen(messages, tools)

        rollout = rollout_func(generate=generate, client=client, num_generations=2)
        rows = dataset_rows(",".join(s.url for s in servers), TOKEN)[:2]
        trainer = trl_loop.RolloutFuncTrainer(rollout, [env_reward_func], num_generations=2)
        # TRL_CHECKOUT: RepeatSampler, _generate and _calculate_rewards are TRL's own
        self.assertEqual(trainer.fns.source, os.environ.get("TRL_CHECKOUT") or "replica")
        out = trainer.step([rows[1], rows[0]], generation_batch_size=4)
        self.assertEqual(len(killed), 1)
        self.assertEqual(out["slots"], [0, 0, 1, 1])
        self.assertEqual([x["env_reward"] for x in out["inputs"]], [1.0] * 4)
        self.assertGreaterEqual(client.stats["migrations"], 1)


@unittest.skipIf(REASON is not None, REASON or "")
class VerifiersKillTest(FreshHealth):
    """verifiers' own group rollout (verifiers_loop.py; verifiers itself with VERIFIERS_CHECKOUT) with a server
    SIGKILLed once every member has made its tool call: the rollouts there migrate, every member is scored."""

    def test_group_survives_a_killed_server(self):
        from benchmax_client.verifiers import dataset_rows
        from test_verifiers import ScriptedModel, make_env, run_group

        servers = self.fleet(2)
        client = self.client_of(servers)
        killed = []

        class KillsAServer(ScriptedModel):
            async def create(self, messages, tools):
                if len(self.requests) == 4 and not killed:  # each member's tool call is out: kill one server
                    victim = busiest(servers)
                    victim.signal(signal.SIGKILL)
                    victim.wait()
                    killed.append(victim)
                return await super().create(messages, tools)

        env = make_env(c=client)
        rows = dataset_rows(client)
        outs, states = run_group(env, [rows[1]] * 4, KillsAServer())
        self.assertEqual(len(killed), 1)
        self.assertEqual([s.get("error") for s in states], [None] * 4)
        self.assertEqual(sorted(o["reward"] for o in outs), [0.0, 0.0, 1.0, 1.0])
        self.assertGreaterEqual(client.stats["migrations"], 1)


def row(task_id):
    return {
        "data_source": "benchmax/calc",
        "prompt": PROMPT,
        "env_class": "benchmax_calc",
        "reward_spec": {"method": "rule", "ground_truth": "4"},
        "extra_info": {"task_id": task_id, "index": 0, "split": "train", "env": "calc", "task": ""},
    }


if __name__ == "__main__":
    unittest.main()
