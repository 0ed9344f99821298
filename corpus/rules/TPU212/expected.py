# TPU212 spawn
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch_xla.distributed.xla_multiprocessing as xmp
from trainer import train_worker


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


def fn(index, cfg):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    print(index, cfg)


def gn(index):
    """Worker with a docstring."""
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    print(index)


def own_group(index):
    dist.init_process_group("gloo")  # the worker's own group: the launcher creates none
    print(index)


def launch(n):
    def nested(index, n):
        # One of a job's processes (torchrun, torchtpu_spawn): join its group.
        if "RANK" in os.environ and not dist.is_initialized():
            dist.init_process_group("tpu_dist")
        print(index, n)

    torchtpu_spawn(nested, args=(n,), nprocs=n)


if __name__ == "__main__":
    torchtpu_spawn(fn, args=({"a": 1},), nprocs=4)
    torchtpu_spawn(gn, nprocs=8, start_method="fork")
    torchtpu_spawn(gn, args=())  # no nprocs: every attached chip
    torchtpu_spawn(gn, nprocs=None)  # every attached chip, as torch_xla did
    torchtpu_spawn(gn, nprocs=len(range(4)))  # computed by a call: evaluated once, may be None
    torchtpu_spawn(own_group, nprocs=2)
    xmp.spawn(train_worker, nprocs=4)  # worker defined elsewhere: reported
    xmp.spawn(lambda i: print(i), nprocs=2)  # not a function of this file: reported
