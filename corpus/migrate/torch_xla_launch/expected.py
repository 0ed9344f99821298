# Distributed training with the torch_xla.launch entry point (2.5+).
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def torchtpu_launch(fn, args=(), start_method="spawn", debug_single_process=False):
    """Under torchrun, `fn(LOCAL_RANK, *args)` in this process; otherwise `torchtpu_spawn` on
    every attached chip (`debug_single_process`: once, in this process)."""
    if dist.is_torchelastic_launched():
        fn(int(os.environ["LOCAL_RANK"]), *args)
    else:
        nprocs = 1 if debug_single_process else None
        torchtpu_spawn(fn, args, nprocs, start_method=start_method)


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


def _worker(index, lr):
    if not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank = dist.get_rank()
    world = dist.get_world_size()
    print(
        f"rank {rank}/{world} local={dist.get_node_local_rank(fallback_rank=0)} on {device}"
    )

    torch.manual_seed(0)  # same weights and batches on every rank
    model = nn.Linear(32, 32).to(device)
    ddp_model = DDP(model, gradient_as_bucket_view=True)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=lr)

    for step in range(3):
        opt.zero_grad()
        out = ddp_model(torch.randn(16, 32).to(device))
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss={loss.item():.6f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    torchtpu_launch(_worker, args=(0.01,))
