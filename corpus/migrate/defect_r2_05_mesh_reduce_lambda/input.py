"""Evaluation across replicas: each replica scores its shard, xm.mesh_reduce combines the
scores with small lambdas (the usual form in torch_xla evaluation scripts)."""
import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, num_cores):
    device = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3).to(device)
    data = torch.randn(64, 8)
    labels = torch.randint(0, 3, (64,))
    shard = slice(xr.global_ordinal(), None, xr.world_size())
    with torch.no_grad():
        preds = model(data[shard].to(device)).argmax(dim=1).cpu()
    correct = int((preds == labels[shard]).sum())
    seen = len(preds)
    totals = xm.mesh_reduce("totals", (correct, seen), lambda pairs: tuple(map(sum, zip(*pairs))))
    first = xm.mesh_reduce("first", correct, lambda xs: xs[0])
    best = xm.mesh_reduce("best", correct / seen, max)
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} accuracy={totals[0] / totals[1]:.6f} first={first} best={best:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=1)
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args.num_cores,), nprocs=args.num_cores, start_method="fork")
