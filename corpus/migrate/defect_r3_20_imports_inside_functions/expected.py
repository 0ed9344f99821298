"""A learning-rate sweep, one rate per core, in a script that imports torch_xla and
torch.distributed only inside the functions using them (so `--help` never loads them).

Issue 43, item 20: code the migration put outside `main` (the launcher's module-level helpers,
the worker's first lines) used the name `dist`, bound only by `main`'s own import: NameError.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


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


def make_batch(step):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(5, 3, generator=g)
    return x, x.mean(dim=1, keepdim=True)


def sweep_worker(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    lr = flags.base_lr * (index + 1)  # this core's learning rate
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(flags.steps):
        x, y = make_batch(step)
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {index} of {flags.nprocs}: lr={lr:.3f} loss={loss.item():.6f}", flush=True)


def main():
    import torch.distributed as dist

    parser = argparse.ArgumentParser()
    parser.add_argument("--nprocs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--base_lr", type=float, default=0.05)
    flags = parser.parse_args()
    if dist.is_torchelastic_launched():  # torchrun started one process per core already
        sweep_worker(int(os.environ["LOCAL_RANK"]), flags)
    else:
        torchtpu_spawn(sweep_worker, args=(flags,), nprocs=flags.nprocs)


if __name__ == "__main__":
    main()
