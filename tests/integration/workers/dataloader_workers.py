"""Worker whose DataLoader runs two loader processes with the given start
method (fork or spawn) and writes the sum it read to OUTDIR/rank<RANK>.json.

    dataloader_workers.py OUTDIR fork|spawn
"""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    out_dir, method = sys.argv[1], sys.argv[2]
    dataset = TensorDataset(torch.arange(64, dtype=torch.float32))
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context=method)
    total = sum(float(batch[0].sum()) for batch in loader)
    with open(os.path.join(out_dir, f"rank{os.environ['RANK']}.json"), "w") as f:
        json.dump({"sum": total, "method": method}, f)


if __name__ == "__main__":
    main()
