"""A Hugging Face `Trainer` job as users run one (transformers and
accelerate, Debian sid's), on the CPU over gloo: a small BERT classifier
built from a config (nothing downloaded) on synthetic data.

    torchrun --nproc_per_node 2 hf_trainer.py --out DIR [--steps N] [--step-sleep S]
             [--trace DIR]

Rank 0 prints `FINAL_LOSS <training loss>` at the end. --trace DIR appends
the phase lines scripts/bench/torch_ddp_ckpt.py writes (t_first_line,
t_imported, t_pg once the trainer's process group exists, t_step N after
each optimizer step) to DIR/rank<RANK>.trace, for scripts/bench/
torch_recovery.py --script hf and the tests. --step-sleep S sleeps S
seconds after each step (time for a fault).
"""
import time

T_FIRST_LINE = time.time()  # for --trace: before anything else is imported

import argparse  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
from transformers import (BertConfig, BertForSequenceClassification, Trainer,  # noqa: E402
                          TrainerCallback, TrainingArguments)

T_IMPORTED = time.time()


class Data(torch.utils.data.Dataset):
    """512 sequences of 16 tokens; the label is the first token's parity."""

    def __init__(self, count=512):
        generator = torch.Generator().manual_seed(0)
        self.tokens = torch.randint(0, 100, (count, 16), generator=generator)
        self.labels = self.tokens[:, 0] % 2

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        return {"input_ids": self.tokens[i], "labels": self.labels[i]}


class Trace(TrainerCallback):
    """The phase lines of --trace, and --step-sleep."""

    def __init__(self, directory, step_sleep):
        self.path = None
        self.step_sleep = step_sleep
        if directory:
            os.makedirs(directory, exist_ok=True)
            self.path = os.path.join(directory, f"rank{os.environ.get('RANK', '0')}.trace")
        self.tags = (f"pid={os.getpid()} restart={os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
                     f" world={os.environ.get('WORLD_SIZE', '1')}")
        self.write("t_first_line", T_FIRST_LINE)
        self.write("t_imported", T_IMPORTED)

    def write(self, what, t=None):
        if self.path is not None:
            with open(self.path, "a") as f:
                f.write(f"{what} t={time.time() if t is None else t:.6f} {self.tags}\n")

    def on_train_begin(self, args, state, control, **kwargs):
        self.write("t_pg")

    def on_step_end(self, args, state, control, **kwargs):
        self.write(f"t_step {state.global_step}")
        if self.step_sleep > 0:
            time.sleep(self.step_sleep)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-sleep", type=float, default=0.0)
    parser.add_argument("--trace")
    args = parser.parse_args()
    trace = Trace(args.trace, args.step_sleep)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    training = TrainingArguments(output_dir=args.out, per_device_train_batch_size=4,
                                 max_steps=args.steps, use_cpu=True, ddp_backend="gloo",
                                 report_to=[], save_strategy="no", logging_steps=10, seed=0,
                                 data_seed=0, disable_tqdm=True)
    trainer = Trainer(model=model, args=training, train_dataset=Data(), callbacks=[trace])
    result = trainer.train()
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"FINAL_LOSS {result.training_loss:.6f}", flush=True)


if __name__ == "__main__":
    main()
