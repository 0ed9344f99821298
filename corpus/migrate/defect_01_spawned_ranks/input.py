"""Each spawned worker reports who it is: the rank and world size come from torch_xla's runtime.

Two launches: a module-level worker (the classic recipe) and a worker defined inside the
launching function (notebook/CLI helpers do this; a local function can't be pickled, so
that launch forks).
"""
import argparse

import torch, torch.distributed as dist
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(i, n):
    # every worker must see its own ordinal, and all of them the same world size
    print(f"worker rank {xr.global_ordinal()} of {xr.world_size()} (index {i}, asked for {n})", flush=True)


def launch_nested(n):
    tag = "nested"

    def _worker(index):
        rank, world = xr.global_ordinal(), xr.world_size()
        with open(f"{tag}_rank{rank}_of{world}.txt", "w") as f:
            f.write(f"{tag} worker {index}: rank {rank} of {world}\n")
        print(f"{tag} rank {rank} of {world}", flush=True)

    xmp.spawn(_worker, args=(), nprocs=n, start_method="fork")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1, help="processes (TPU cores) to use")
    args = parser.parse_args()
    n = args.nprocs

    xmp.spawn(_mp_fn, args=(n,), nprocs=n)
    launch_nested(n)


if __name__ == "__main__":
    main()
