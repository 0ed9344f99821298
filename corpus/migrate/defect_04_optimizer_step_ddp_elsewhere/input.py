"""Trainer with two data-parallel modes: torch DDP over the "xla" backend (--ddp) or the
native one, where xm.optimizer_step all-reduces the gradients across cores."""
import argparse

import torch, torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.distributed.xla_backend  # noqa: F401


def build_model(args, device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    if args.ddp:
        dist.init_process_group("xla", init_method="xla://")
        model = DDP(model, gradient_as_bucket_view=True)
    return model


def ddp_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()  # DDP already averaged the gradients
    return loss


def native_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)  # all-reduce + step
    return loss


def _mp_fn(index, args):
    device = xm.xla_device()
    rank, world = xr.global_ordinal(), xr.world_size()
    model = build_model(args, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step_fn = ddp_step if args.ddp else native_step

    # every rank trains on its own shard of the data
    g = torch.Generator().manual_seed(1234)
    data_x = torch.randn(world * 4 * args.steps, 8, generator=g)
    data_y = torch.randn(world * 4 * args.steps, 1, generator=g)
    shard_x, shard_y = data_x[rank::world], data_y[rank::world]
    for step in range(args.steps):
        x = shard_x[step * 4:(step + 1) * 4].to(device)
        y = shard_y[step * 4:(step + 1) * 4].to(device)
        loss = step_fn(model, opt, x, y)
        xm.mark_step()
        print(f"rank {rank} step {step} loss={loss.item():.6f}")
    checksum = sum(p.sum().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--ddp", action="store_true")
    args = parser.parse_args()
    xmp.spawn(_mp_fn, args=(args,), nprocs=args.nprocs)
