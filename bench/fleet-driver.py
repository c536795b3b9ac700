"""The trainer side of bench/fleet.mjs: training steps against a fleet of `benchmax serve math` servers, as SkyRL's
generator and the tinker cookbook's group rollout call the benchmax adapters (stdlib Python; run by fleet.mjs).

Each step takes `--prompts` tasks × `--group` samples. A `skyrl` step runs SkyRL's calling sequence
(packages/skyrl/python/tests/skyrl_loop.py, with the real `skyrl_gym.make`/`register` when `--skyrl-gym DIR` points
at a SkyRL checkout's skyrl-gym folder); a `cookbook` step runs the cookbook's `do_group_rollout` shape
(tests/cookbook_loop.py) over `BenchmaxEnvGroupBuilder`s (one create + forks per group). The scripted policy solves
arithmetic through the calculator tool and answers every fourth sample wrong on purpose.

stdout: one JSON event a line (`step_start`, `step_end`, `done`), read by fleet.mjs to time its faults.
`--out FILE`: one JSON line per finished sample: step, trainer, task, reward, lost, migrations, end time, messages.
"""

import argparse
import asyncio
import json
import os
import re
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.join(HERE, "..", "packages", "skyrl", "python")
sys.path[:0] = [PY, os.path.join(PY, "tests")]

ap = argparse.ArgumentParser()
ap.add_argument("--endpoints", required=True, help="comma-separated server URLs")
ap.add_argument("--token", default=None)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--prompts", type=int, default=64)
ap.add_argument("--group", type=int, default=8)
ap.add_argument("--trainers", default="skyrl,cookbook")
ap.add_argument("--hang-after-s", type=float, default=2.0)
ap.add_argument("--workers", type=int, default=64)
ap.add_argument("--skyrl-gym", default=None)
ap.add_argument("--out", required=True)
ap.add_argument("--pause-steps", default="", help="steps at which the first second reply waits for a line on stdin")
args = ap.parse_args()

REAL_SKYRL = False
if args.skyrl_gym:
    sys.path.insert(0, args.skyrl_gym)
    try:
        import skyrl_gym  # noqa: F401

        REAL_SKYRL = True
    except Exception as e:  # pragma: no cover
        print(json.dumps({"event": "note", "text": "real skyrl_gym not importable: %s" % e}), flush=True)

from benchmax_client import BenchmaxClient  # noqa: E402
from benchmax_skyrl import BenchmaxEnvGroupBuilder, register_env_classes  # noqa: E402

import cookbook_loop  # noqa: E402
import skyrl_loop  # noqa: E402

if REAL_SKYRL:
    import skyrl_gym

    skyrl_loop.make = skyrl_gym.make  # the generator's `make` is SkyRL's own
    register = skyrl_gym.register
else:
    register = skyrl_loop.register

ENDPOINTS = [e for e in args.endpoints.split(",") if e]
LEAD = re.compile(r"^\s*(?:what\s+is|what's|calculate|compute|evaluate|find|solve)\b\s*(?:the\s+value\s+of\s*)?:?\s*", re.I)
RESULT = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
lock = threading.Lock()
PAUSE = {int(x) for x in args.pause_steps.split(",") if x.strip()}
current = {"step": -1, "paused": set()}


def mid_step():
    """At a fault step, the first sample to reach its second reply (every rollout of the step created, most with a
    tool call logged) tells fleet.mjs, which applies the fault and answers on stdin: a fault in the middle of
    rollouts, at a point that does not depend on timing."""
    with lock:
        step = current["step"]
        if step not in PAUSE or step in current["paused"]:
            return
        current["paused"].add(step)
        emit("mid_step", step=step)
        sys.stdin.readline()
counter = [0]


def emit(event, **kw):
    kw["event"] = event
    kw["t"] = time.time()
    print(json.dumps(kw), flush=True)


def expression(prompt):
    return re.sub(r"[\s?=.!]+$", "", LEAD.sub("", prompt)).strip()


def wrong_on_purpose():
    with lock:
        counter[0] += 1
        return counter[0] % 4 == 0


def reply(turn, user_prompt, last_result):
    if turn == 1:
        mid_step()
    if turn == 0:
        return '<tool_call>\n{"name": "calculator", "arguments": %s}\n</tool_call>' % json.dumps(
            {"expression": expression(user_prompt)}
        )
    try:
        value = float(last_result)
        if wrong_on_purpose():
            value += 1
        answer = ("%d" % value) if value == int(value) else repr(value)
    except (TypeError, ValueError):
        answer = "0"
    return "<answer>%s</answer>" % answer


def skyrl_policy(chat):
    turn = sum(1 for m in chat if m["role"] == "assistant")
    user = next(m["content"] for m in chat if m["role"] == "user")
    found = RESULT.findall(chat[-1]["content"]) if chat[-1]["role"] == "user" and turn else []
    return reply(turn, user, found[-1] if found else None)


class CookbookPolicy:
    """A TokenCompleter over the toy renderer: the same script, read from the rendered conversation."""

    def __init__(self, renderer):
        self.renderer = renderer

    async def __call__(self, ob, stop):
        text = self.renderer.tokenizer.decode(ob.to_ints())
        turn = text.count("<|im_start|>assistant\n") - 1
        user = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
        tools = re.findall(r"<\|im_start\|>tool\n(.*?)<\|im_end\|>", text, re.S)
        out = reply(turn, user, tools[-1] if tools else None)
        return cookbook_loop.TokensWithLogprobs(self.renderer.tokenizer.encode(out + stop[0]), None, "stop")


def skyrl_row(task):
    return {
        "data_source": "benchmax/math",
        "prompt": [{"role": "user", "content": task["prompt"]}],
        "env_class": "benchmax_math",
        "reward_spec": {"method": "rule", "ground_truth": None},
        "extra_info": {"task_id": task["id"], "index": 0, "split": "train", "env": "math", "task": ""},
    }


def run_skyrl(step, tasks, out):
    cfg = skyrl_loop.SkyrlGymCfg(
        max_env_workers=args.workers,
        benchmax_math={"token": args.token, "retries": 1, "timeout_s": 60, "hang_after_s": args.hang_after_s},
    )
    gen = skyrl_loop.Generator(cfg, 4, skyrl_policy)
    rows = [skyrl_row(t) for t in tasks for _ in range(args.group)]
    try:
        results = asyncio.run(gen.generate(rows))
    finally:
        gen.close()
    for env, res in zip(gen.envs, results):
        final = env.final or {}
        stats = env.client.stats
        out.append(
            {
                "step": step,
                "trainer": "skyrl",
                "task_id": env.task_id,
                "reward": res["reward"],
                "lost": bool(final.get("lost")),
                "migrations": env.rollout.migrations if env.rollout else 0,
                "migration_s": list(stats["migration_s"]),
                "endpoint": env.rollout.endpoint if env.rollout else None,
                "t_end": time.time(),
                "messages": env.messages,
            }
        )


async def cookbook_group(b, policy, out, step, task_id):
    group = await cookbook_loop.do_group_rollout(b, policy)
    t_end = time.time()
    rewards = group.get_total_rewards()
    for env, reward in zip(b.envs_for_bench, rewards):
        r = env.rollout
        out.append(
            {
                "step": step,
                "trainer": "cookbook",
                "task_id": task_id,
                "reward": reward,
                "lost": False,
                "migrations": r.migrations if r else 0,
                "migration_s": [],
                "endpoint": r.endpoint if r else None,
                "t_end": t_end,
                "messages": env.messages,
            }
        )
    out[-1]["migration_s"] = list(b.client().stats["migration_s"])


class BenchBuilder(BenchmaxEnvGroupBuilder):
    """Keeps the group's envs for the bench's records (the cookbook hands them to compute_group_rewards only)."""

    async def make_envs(self):
        envs = await super().make_envs()
        self.envs_for_bench = list(envs)
        return envs


def run_cookbook(step, tasks, out):
    renderer = cookbook_loop.ToyRenderer()
    policy = CookbookPolicy(renderer)

    async def all_groups():
        builders = [
            (
                BenchBuilder(
                    ",".join(ENDPOINTS),
                    [{"role": "user", "content": t["prompt"]}],
                    renderer,
                    task_id=t["id"],
                    group_size=args.group,
                    max_turns=4,
                    token=args.token,
                    trainer_step=step,
                ),
                t["id"],
            )
            for t in tasks
        ]
        for b, _ in builders:
            b.client().hang_after_s = args.hang_after_s
        await asyncio.gather(*[cookbook_group(b, policy, out, step, tid) for b, tid in builders])

    # the adapter runs env calls in asyncio.to_thread: a default executor as wide as SkyRL's env workers
    loop = asyncio.new_event_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=args.workers))
    try:
        loop.run_until_complete(all_groups())
    finally:
        loop.close()



def main():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a step holds hundreds of keep-alive connections
    client = BenchmaxClient(ENDPOINTS, args.token)
    tasks = [t for t in client.tasks() if isinstance(t.get("prompt"), str)]
    arithmetic = [t for t in tasks if re.search(r"\d\s*[-+×÷*/−]\s*\d", t["prompt"]) and "$" not in t["prompt"]]
    tasks = arithmetic or tasks
    register_env_classes(register, {"benchmax_math": ENDPOINTS})
    trainers = [t for t in args.trainers.split(",") if t]
    emit("ready", tasks=len(tasks), real_skyrl=REAL_SKYRL, trainers=trainers)
    with open(args.out, "w") as f:
        for step in range(args.steps):
            trainer = trainers[step % len(trainers)]
            picked = [tasks[(step * args.prompts + i) % len(tasks)] for i in range(args.prompts)]
            out = []
            current["step"] = step
            emit("step_start", step=step, trainer=trainer)
            t0 = time.time()
            error = None
            try:
                if trainer == "skyrl":
                    run_skyrl(step, picked, out)
                else:
                    run_cookbook(step, picked, out)
            except BaseException as e:  # a failed training step: counted, the run goes on
                error = "%s: %s" % (type(e).__name__, e)
                traceback.print_exc(file=sys.stderr)
            for rec in out:
                f.write(json.dumps(rec) + "\n")
            f.flush()
            emit("step_end", step=step, trainer=trainer, samples=len(out), seconds=time.time() - t0, failed=error is not None, error=error)
    # rollouts the clients left on servers that were gone and came back: freed at the next contact with that server
    # (a create, a close); a run that ends right after a fault has had none, so contact them now
    from benchmax_client.transport import HEALTH

    left = sum(len(v) for v in HEALTH.orphans.values())
    freed = client.release_orphans(now=True)
    emit("done", orphans_left=left, orphans_freed=freed)


if __name__ == "__main__":
    main()
