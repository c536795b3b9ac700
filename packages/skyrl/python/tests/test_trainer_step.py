"""The trainer step reaches a `serve --record` recording: the client's reset / start / create_rollout send it (SkyRL's
global step), the cookbook's RLDataset sends its batch index, and SkyRL's text env reads it from the extras. Run
against a recording server by src/trainer-step.test.ts, which then reads the recording."""

import unittest

from benchmax_client import BenchmaxEnv
from benchmax_client.transport import BenchmaxClient
from benchmax_skyrl.cookbook import BenchmaxRLDataset
from benchmax_skyrl.text_env import BenchmaxTextEnv

from live import ENDPOINT, TOKEN, call, needs_server

ROW = {"prompt": [{"role": "user", "content": "What is 10 + 7?"}], "extra_info": {"task_id": "t2"}}


@needs_server
class TrainerStepTest(unittest.TestCase):
    def test_reset_and_step_with_skyrls_global_step(self):
        with BenchmaxEnv(ENDPOINT, TOKEN) as env:
            env.reset(task_id="t2", trainer_step=7)
            env.step(call("add", a=10, b=7))
            out = env.step("<answer>17</answer>")
            self.assertEqual((out["done"], out["reward"]), (True, 1.0))

    def test_start_and_reward_with_a_step_and_group(self):
        with BenchmaxEnv(ENDPOINT, TOKEN) as env:
            env.start("t1", trainer_step=8, group_id="g-8")
            res = env.reward([{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": "<answer>4</answer>"}])
            self.assertEqual(res["reward"], 0)

    def test_cookbook_batch_index_tags_every_rollout_of_the_group(self):
        ds = BenchmaxRLDataset([ROW, ROW, ROW], ENDPOINT, renderer=None, batch_size=1, group_size=2, token=TOKEN)
        builder = ds.get_batch(2)[0]
        self.assertEqual(builder.trainer_step, 2)
        rollouts = builder._setup()
        self.assertEqual(len(rollouts), 2)
        c = builder.client()
        for r, answer in zip(rollouts, ["17", "16"]):
            c.reward(r, [{"role": "user", "content": "What is 10 + 7?"}, {"role": "assistant", "content": "<answer>%s</answer>" % answer}])
            c.release(r)

    def test_skyrl_text_env_reads_the_step_from_its_extras(self):
        env = BenchmaxTextEnv({"endpoints": ENDPOINT, "token": TOKEN}, {"extra_info": {"task_id": "t2"}, "trainer_step": 11, "max_turns": 3})
        env.init([{"role": "user", "content": "What is 10 + 7?"}])
        out = env.step("<answer>17</answer>")
        self.assertTrue(out["done"])
        env.close()

    def test_a_step_that_is_not_a_number_is_refused_before_sending(self):
        with self.assertRaises(TypeError):
            BenchmaxClient(ENDPOINT, token=TOKEN).create_rollout("t1", trainer_step="seven")


if __name__ == "__main__":
    unittest.main()
