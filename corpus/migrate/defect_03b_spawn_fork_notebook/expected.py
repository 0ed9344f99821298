# %% [markdown]
# # Data-parallel training from a notebook
# Colab/Kaggle TPU notebooks must fork: the worker lives in the notebook's `__main__`.

# %%
import os
import sys

import torch, torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


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


NUM_CORES = int(sys.argv[1]) if len(sys.argv) > 1 else 1  # 8 on a v3-8
STEPS = 3

# %%
def train_loop(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = nn.Linear(8, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    g = torch.Generator().manual_seed(100 + rank)  # different data on every core
    for step in range(STEPS):
        x = torch.randn(16, 8, generator=g).to(device)
        y = torch.randn(16, 2, generator=g).to(device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        torchtpu_optimizer_step(opt)
    checksum = sum(p.sum().item() for p in model.parameters())
    print(f"core {index}: rank {rank} of {world} checksum={checksum:.6f}", flush=True)

# %%
flags = {"lr": 0.1}
torchtpu_spawn(train_loop, args=(flags,), nprocs=NUM_CORES, start_method="fork")
