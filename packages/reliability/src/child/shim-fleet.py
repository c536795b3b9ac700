"""The SkyRL shim (packages/skyrl/python) spread over a fleet: runs notes episodes through BenchmaxTextEnv against
every endpoint in argv[1] (comma-separated) with token argv[2]. Starts the first `half` episodes, prints "KILL" after
they are created, waits for a line on stdin (the test kills a host meanwhile), then finishes all of them and starts
the rest. Prints one JSON line per episode: {"task", "reward", "migrations"} or {"task", "error"}, then "DONE".
Run: PYTHONPATH=packages/skyrl/python python3 shim-fleet.py URL,URL,URL TOKEN N
"""
import json
import sys

from benchmax_skyrl import BenchmaxTextEnv

endpoints, token, n = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
half = n // 2


def gold(i):
    return "GOLD-%d-%d" % (i, (i * 7919) % 1000)


def make(i):
    env = BenchmaxTextEnv(
        env_config={"endpoints": endpoints, "token": token, "retries": 2, "timeout_s": 5},
        extras={"extra_info": {"task_id": "note-%d" % i}, "max_turns": 5},
    )
    env.init([{"role": "user", "content": "Write the answer into answer.txt."}])
    return env


def finish(i, env):
    call = {"name": "write_file", "arguments": {"path": "answer.txt", "content": gold(i)}}
    try:
        env.step("<tool_call>%s</tool_call>" % json.dumps(call))
        out = env.step("done")
        moved = env.rollout.migrations if env.rollout is not None else 0
        print(json.dumps({"task": i, "reward": out["reward"], "done": out["done"], "migrations": moved}), flush=True)
    except Exception as e:  # noqa: BLE001 - the test checks what it was
        print(json.dumps({"task": i, "error": "%s: %s" % (type(e).__name__, e)}), flush=True)
    finally:
        env.close()


started = [(i, make(i)) for i in range(half)]
print("KILL", flush=True)
sys.stdin.readline()
for i, env in started:
    finish(i, env)
for i in range(half, n):
    try:
        env = make(i)
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"task": i, "error": "%s: %s" % (type(e).__name__, e)}), flush=True)
        continue
    finish(i, env)
print("DONE", flush=True)
