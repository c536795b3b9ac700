"""Drive tinker-cookbook's own `do_group_rollout` with each renderer that renders tool calls, against a real
`benchmax serve math`, through the benchmax adapter (benchmax_skyrl.cookbook). Written by us; the cookbook is a
checkout given on the command line (never committed), the imports it needs and Debian lacks are shimmed
(trainer_runs/shims: tinker, chz, torch, PIL, transformers; tokenizer_shim.py for the tokenizer).

    python3 cookbook_renderers.py --cookbook /tmp/tinker-cookbook [--record] [--kill]

For each renderer: a group of 4 on task arith-1 (12 + 8 × 3 − 4 ÷ 2 = 34), tools announced the renderer's way
where it has a tool prefix. A scripted token-level policy (a cookbook TokenCompleter) makes member k call the
calculator with "… + k*0", then answer 34 (even k) or 33 (odd k): the rewards must be [1, 0, 1, 0], the server
must see 1 create + 3 forks and have no live rollout left. Prints one line per renderer; --record writes
tests/fixtures/cookbook-renderers.json (what each renderer's turn looked like, and what the adapter sent).

--kill: each renderer's group runs over two servers, and the server holding the group is SIGKILLed once every member
has made its tool call: the group's rollouts migrate (the client replays their logs elsewhere) and the rewards must
still be [1, 0, 1, 0], with nothing left live on the surviving server.
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.dirname(HERE)
ROOT = os.path.abspath(os.path.join(PY, "..", "..", ".."))
RENDERERS = ["qwen3", "qwen3_instruct", "qwen3_5", "llama3", "deepseekv3", "gpt_oss_medium_reasoning", "kimi_k2"]
TASK_TEXT = "12 + 8 × 3 − 4 ÷ 2"


def start_server(token: str):
    cli = os.path.join(ROOT, "packages", "cli", "bin", "benchmax.js")
    proc = subprocess.Popen(
        ["node", cli, "serve", "math", "--port", "0", "--token", token],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = proc.stdout.readline()
    m = re.search(r"at (http://\S+)", line)
    if not m:
        proc.kill()
        raise SystemExit("benchmax serve did not start: %r" % line)
    return proc, m.group(1)


def get_json(url: str, token: str):
    req = urllib.request.Request(url, headers={"authorization": "Bearer " + token, "accept": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


class ScriptedPolicy:
    """A cookbook TokenCompleter: `await policy(model_input, stop) -> TokensWithLogprobs`. The reply is the renderer's
    own rendering of the scripted assistant message (with the cookbook's ToolCall), continuing the prompt."""

    def __init__(self, renderer, tool_call_type, tokens_with_logprobs, native_tools=True):
        self.r = renderer
        self.native_tools = native_tools
        self.ToolCall = tool_call_type
        self.TWL = tokens_with_logprobs
        self.next_member = 0
        self.turns = []  # (member, completion text)

    def completion(self, prompt_tokens, history, message):
        full, _weights = self.r.build_supervised_example(history + [message])
        full = full.to_ints()
        if full[: len(prompt_tokens)] != prompt_tokens:
            raise AssertionError("the supervised rendering does not continue the generation prompt")
        out = full[len(prompt_tokens) :]
        stop = self.r.get_stop_sequences()
        if stop and isinstance(stop[0], int) and (not out or out[-1] not in stop):
            out = out + [stop[0]]  # the sampler stops on (and returns) the stop token
        return out

    async def __call__(self, ob, stop, max_tokens=None):
        text = self.r.tokenizer.decode(ob.to_ints())
        m = re.findall(r"\+ (\d+)\*0", text)
        env = self.current_env(ob)
        if not m:
            k = self.next_member
            self.next_member += 1
            args = {"expression": "12 + 8 * 3 - 4 / 2 + %d*0" % k}
            if not self.native_tools:
                # a renderer without a tool-call format (llama3): the call is text, in the format the env's system
                # prompt asks for, and the env server parses it
                text = '<tool_call>\n{"name": "calculator", "arguments": %s}\n</tool_call>' % json.dumps(args)
                msg = {"role": "assistant", "content": text}
        if not m and self.native_tools:
            msg = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    self.ToolCall(
                        function=self.ToolCall.FunctionBody(
                            name="calculator", arguments=json.dumps(args)
                        )
                    )
                ],
            }
        elif m:
            k = int(m[-1])
            msg = {"role": "assistant", "content": "<answer>%d</answer>" % (34 if k % 2 == 0 else 33)}
        toks = self.completion(ob.to_ints(), env.history, msg)
        self.turns.append((k, self.r.tokenizer.decode(toks)))
        return self.TWL(tokens=toks, maybe_logprobs=[0.0] * len(toks), stop_reason="stop")

    def current_env(self, ob):
        # the env whose observation this is: the policy needs its history to render the reply the renderer's way
        for e in self.envs:
            if self.r.build_generation_prompt(e.history).to_ints() == ob.to_ints():
                return e
        raise AssertionError("no env has this observation")


async def run_one(name, endpoint, token, R, rollouts, ToolCall, TWL, Tokenizer, BenchmaxEnvGroupBuilder, procs=None):
    """`procs` (--kill): {url: server process} of the endpoints in `endpoint` (comma-separated)."""
    renderer = R.get_renderer(name, Tokenizer())
    from benchmax_skyrl.client import BenchmaxClient

    c = BenchmaxClient(endpoint, token=token)
    probe = c.create_rollout("arith-1")  # the env's system prompt for the task (metadata has none for a function)
    c.release(probe)
    c.close()
    try:
        renderer.create_conversation_prefix_with_tools([], "")
        renderer_tools = True
    except NotImplementedError:
        renderer_tools = False  # llama3: the env's system prompt carries the tools
    prompt = [{"role": "system", "content": probe.system_prompt}, {"role": "user", "content": TASK_TEXT}]
    builder = BenchmaxEnvGroupBuilder(
        endpoint, prompt, renderer, task_id="arith-1", group_size=4, max_turns=4, token=token, renderer_tools=renderer_tools
    )
    policy = ScriptedPolicy(renderer, ToolCall, TWL, native_tools=renderer_tools)
    killed = []
    if procs:
        call = policy.__call__

        async def killing(ob, stop, max_tokens=None):
            if len(policy.turns) == 4 and not killed:  # every member has made its tool call
                url = builder._rollouts[0].endpoint
                procs[url].kill()
                procs[url].wait()
                killed.append(url)
            return await call(ob, stop, max_tokens)

        policy.__call__ = killing
    make = builder.make_envs

    async def make_envs():
        envs = await make()
        policy.envs = envs
        return envs

    builder.make_envs = make_envs
    if procs:
        group = await rollouts.do_group_rollout(builder, killing)
        rewards = group.get_total_rewards()
        live = [u for u in procs if u not in killed]
        left = sum(get_json(u + "/metrics", token)["activeRollouts"] for u in live)
        moved = builder.client().stats["migrations"]
        ok = rewards == [1.0, 0.0, 1.0, 0.0] and len(killed) == 1 and moved == 4 and left == 0
        return ok, {"renderer": name, "rewards": rewards, "killed": killed, "migrations": moved, "left_live": left}
    before = get_json(endpoint + "/metrics", token)
    group = await rollouts.do_group_rollout(builder, policy)
    after = get_json(endpoint + "/metrics", token)
    rewards = group.get_total_rewards()
    # the probe rollout above was created before `before`
    created = after["rolloutsCreated"] - before["rolloutsCreated"]
    ok = rewards == [1.0, 0.0, 1.0, 0.0] and created == 4 and after["activeRollouts"] == before["activeRollouts"]
    env0 = policy.envs[0]
    record = {
        "renderer": name,
        "renderer_tools": renderer_tools,
        "rewards": rewards,
        "rollouts_created": created,
        "tool_call_turn": next(t for k, t in policy.turns if "calculator" in t),
        "answer_turn": next(t for k, t in policy.turns if "<answer>" in t),
        "history_roles": [m["role"] for m in env0.history],
        "tool_message": next(({k: v for k, v in m.items()} for m in env0.history if m["role"] == "tool"), None),
        "sent_tool_calls": next((m.get("tool_calls") for m in env0.messages if m.get("tool_calls")), None),
        "final_prompt_tail": renderer.tokenizer.decode(group.trajectories_G[0].transitions[-1].ob.to_ints())[-400:],
    }
    return ok, record


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cookbook", required=True)
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--renderers", default=",".join(RENDERERS))
    ap.add_argument("--kill", action="store_true", help="kill the group's server mid-rollout (two servers a renderer)")
    a = ap.parse_args()
    sys.path[:0] = [os.path.join(HERE, "shims"), HERE, a.cookbook, PY]
    commit = subprocess.run(["git", "-C", a.cookbook, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    from tinker_cookbook import renderers as R
    from tinker_cookbook.completers import TokensWithLogprobs
    from tinker_cookbook.renderers.base import ToolCall
    from tinker_cookbook.rl import rollouts

    from benchmax_skyrl.cookbook import BenchmaxEnvGroupBuilder
    from tokenizer_shim import ByteSpecialTokenizer

    token = "cookbook-run"
    proc, endpoint = start_server(token)
    records, failed = [], 0
    try:
        for name in a.renderers.split(","):
            pair = [start_server(token) for _ in range(2)] if a.kill else []
            procs = {u: p for p, u in pair}
            try:
                ok, rec = asyncio.run(
                    run_one(
                        name, ",".join(procs) or endpoint, token, R, rollouts, ToolCall, TokensWithLogprobs,
                        ByteSpecialTokenizer, BenchmaxEnvGroupBuilder, procs,
                    )
                )
            except Exception as e:  # report every renderer
                ok, rec = False, {"renderer": name, "error": "%s: %s" % (type(e).__name__, e)}
            finally:
                for p in procs.values():
                    p.kill()
                    p.wait()
            failed += not ok
            records.append(rec)
            print("%-26s %s %s" % (name, "ok  " if ok else "FAIL", rec.get("rewards", rec.get("error"))), flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    print("tinker-cookbook @ %s: %d of %d renderers ok" % (commit, len(records) - failed, len(records)))
    if a.record and not a.kill:
        path = os.path.join(PY, "tests", "fixtures", "cookbook-renderers.json")
        with open(path, "w") as f:
            json.dump({"cookbook_commit": commit, "task": "arith-1", "runs": records}, f, indent=2, ensure_ascii=False, sort_keys=True)
            f.write("\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
