"""torch_xla.launch with the single-process switch behind a command-line flag.

Issue 43, item 3: `debug_single_process=flags.debug` (a value only known at run time) was left
for a person, so the migrated script stopped at its torch_xla import. The single-process path
runs the worker once, in this process, in a world of one.
"""
import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def _mp_fn(index, flags):
    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + xr.global_ordinal())  # each rank its own data
    for step in range(flags.steps):
        x = torch.randn(8, 4, generator=g).to(device)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.master_print(f"step {step} loss={loss.item():.6f}")
    checksum = sum(p.sum() for p in model.parameters()).item()
    print(f"index {index}: rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true", help="one process, for a debugger")
    parser.add_argument("--steps", type=int, default=3)
    flags = parser.parse_args()
    torch_xla.launch(_mp_fn, args=(flags,), debug_single_process=flags.debug)
