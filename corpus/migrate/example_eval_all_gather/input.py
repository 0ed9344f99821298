"""Distributed evaluation: each core scores its shard, predictions are all_gathered.

Launched on every core of the host; the master writes the summary file.
"""
import torch
import torch.nn as nn

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

NUM_SAMPLES = 48
NUM_CLASSES = 5
FEATURES = 20


def make_eval_set():
    # a fixed "teacher" decides the labels; the model is a noisy copy of it
    g = torch.Generator().manual_seed(2024)
    teacher = torch.randn(NUM_CLASSES, FEATURES, generator=g)
    x = torch.randn(NUM_SAMPLES, FEATURES, generator=g)
    y = (x @ teacher.t()).argmax(dim=1)
    noisy = teacher + 0.8 * torch.randn(NUM_CLASSES, FEATURES, generator=g)
    return x, y, noisy


def evaluate(index):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()

    x, y, weight = make_eval_set()
    model = nn.Linear(FEATURES, NUM_CLASSES, bias=False)
    with torch.no_grad():
        model.weight.copy_(weight)
    model = model.to(device).eval()

    # this rank's shard (contiguous block)
    per_rank = NUM_SAMPLES // world
    xs = x[rank * per_rank:(rank + 1) * per_rank].to(device)
    ys = y[rank * per_rank:(rank + 1) * per_rank].to(device)

    with torch.no_grad():
        logits = model(xs)
        local_preds = logits.argmax(dim=1)
        local_hits = (local_preds == ys).long()

    preds = xm.all_gather(local_preds, dim=0)
    hits = xm.all_gather(local_hits, dim=0)
    n = preds.shape[0]
    accuracy = hits.sum().item() / n
    print(f"rank {rank} of {world} gathered={n} accuracy={accuracy:.6f}")

    xm.rendezvous('eval_done')
    if xm.is_master_ordinal():
        with open("results.txt", "w") as f:
            f.write(f"samples {n}\n")
            f.write(f"accuracy {accuracy:.6f}\n")
        print("wrote results.txt")


if __name__ == "__main__":
    xmp.spawn(evaluate)
