"""Trainer with two data-parallel modes: torch DDP over the "xla" backend (--ddp) or the
native one, where xm.optimizer_step all-reduces the gradients across cores."""
import os
import argparse

import torch, torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_spawn(
    fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"
):
    """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
    `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
    environment is left as it was: here the world is still one process."""
    parent_env = os.environ.copy()
    try:
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
        chips = os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        nodes = int(os.environ.get("NNODES", "1"))
        local = len(chips) // nodes
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(local)
        os.environ["WORLD_SIZE"] = str(nodes * local)
        if nprocs != 1:
            worker_args = (fn, args)
            return mp.start_processes(
                torchtpu_worker, worker_args, local, join, daemon, start_method
            )
        try:
            torchtpu_worker(0, fn, args)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
    finally:
        os.environ.clear()
        os.environ.update(parent_env)


def torchtpu_worker(index, fn, args):
    """A process `torchtpu_spawn` started: `fn(index, *args)` with the `LOCAL_RANK` and `RANK`
    that torchrun would give it."""
    os.environ["LOCAL_RANK"] = str(index)
    node = int(os.environ.get("NODE_RANK", "0"))
    os.environ["RANK"] = str(node * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    fn(index, *args)


def build_model(args, device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    if args.ddp:
        if not dist.is_initialized():
            dist.init_process_group("tpu_dist")
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
    torchtpu_optimizer_step(opt)  # all-reduce + step
    return loss


def _mp_fn(index, args):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank, world = dist.get_rank(), dist.get_world_size()
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
        print(f"rank {rank} step {step} loss={loss.item():.6f}")
    checksum = sum(p.sum().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--ddp", action="store_true")
    args = parser.parse_args()
    torchtpu_spawn(_mp_fn, args=(args,), nprocs=args.nprocs)
