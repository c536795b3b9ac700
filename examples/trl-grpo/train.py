"""GRPO on a benchmax env with TRL: the env's tools are the environment's methods, the reward comes from the env.

    BENCHMAX_URL=http://127.0.0.1:8000 BENCHMAX_TOKEN=... python train.py      (run.sh starts the server for you)

Needs: trl (with transformers >= 5.2 for environment_factory), datasets, and the benchmax-client wheel.
"""

import os

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from benchmax_client.trl import dataset_rows, environment_factory, reward_func

URL = os.environ.get("BENCHMAX_URL", "http://127.0.0.1:8000")
TOKEN = os.environ.get("BENCHMAX_TOKEN")
MODEL = os.environ.get("MODEL", "Qwen/Qwen3-0.6B")

# one row per task of the server: {"prompt": [system, user], "task_id"}; reset() starts the episode on task_id
train = Dataset.from_list(dataset_rows(URL, TOKEN))

trainer = GRPOTrainer(
    model=MODEL,
    args=GRPOConfig(
        output_dir=os.environ.get("OUT", "out/trl-grpo"),
        num_generations=int(os.environ.get("N_SAMPLES", "4")),
        per_device_train_batch_size=int(os.environ.get("BATCH", "4")),
        max_completion_length=int(os.environ.get("MAX_COMPLETION", "1024")),
        max_steps=int(os.environ.get("MAX_STEPS", "50")),
        logging_steps=1,
    ),
    train_dataset=train,
    # every method of the env instance but reset is a tool (calculator, search, … as the server lists them)
    environment_factory=environment_factory(URL, TOKEN),
    # the env server scores prompt + completion (tool turns included) for each rollout
    reward_funcs=[reward_func],
)
trainer.train()
