"""One worker function, three callers: xmp.spawn, a direct call for debugging, and the
launcher's own torchrun path (as libraries that support both launchers have).

Issue 43, item 15: the converted launcher wrote its prologue (LOCAL_RANK/RANK from
LOCAL_WORLD_SIZE, init_process_group) into the worker itself, so the direct call raised
KeyError: 'LOCAL_WORLD_SIZE' and every other caller got a rank the launcher computed.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def train(index, flags):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    torch.manual_seed(1)
    model = nn.Linear(3, 2).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    for _ in range(flags.steps):
        x = torch.randn(4, 3, generator=g).to(device)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
    norm = torch.cat([p.flatten() for p in model.parameters()]).norm().item()
    print(f"worker {index}: rank {rank} of {world} norm={norm:.6f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true", help="run the worker in this process")
    parser.add_argument("--steps", type=int, default=3)
    flags = parser.parse_args()
    if flags.debug:
        train(0, flags)  # single process, no launcher: easy to step through
    elif "TORCHELASTIC_RUN_ID" in os.environ:
        train(int(os.environ["LOCAL_RANK"]), flags)  # torchrun started every worker already
    else:
        xmp.spawn(train, args=(flags,))
