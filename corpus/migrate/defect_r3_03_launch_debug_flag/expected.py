"""torch_xla.launch with the single-process switch behind a command-line flag.

Issue 43, item 3: `debug_single_process=flags.debug` (a value only known at run time) was left
for a person, so the migrated script stopped at its torch_xla import. The single-process path
runs the worker once, in this process, in a world of one.
"""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def torchtpu_launch(fn, args=(), start_method="spawn", debug_single_process=False):
    """Under torchrun, `fn(LOCAL_RANK, *args)` in this process; otherwise `torchtpu_spawn` on
    every attached chip (`debug_single_process`: once, in this process)."""
    if dist.is_torchelastic_launched():
        fn(int(os.environ["LOCAL_RANK"]), *args)
    else:
        nprocs = 1 if debug_single_process else None
        torchtpu_spawn(fn, args, nprocs, start_method=start_method)


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


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


def _mp_fn(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + dist.get_rank())  # each rank its own data
    for step in range(flags.steps):
        x = torch.randn(8, 4, generator=g).to(device)
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        torchtpu_optimizer_step(opt)
        torchtpu_rank0_print(f"step {step} loss={loss.item():.6f}")
    checksum = sum(p.sum() for p in model.parameters()).item()
    print(f"index {index}: rank {dist.get_rank()} of {dist.get_world_size()} checksum={checksum:.6f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true", help="one process, for a debugger")
    parser.add_argument("--steps", type=int, default=3)
    flags = parser.parse_args()
    torchtpu_launch(_mp_fn, args=(flags,), debug_single_process=flags.debug)
