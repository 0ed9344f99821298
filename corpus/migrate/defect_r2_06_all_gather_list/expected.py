"""Issue 19, defect 6: `xm.all_gather` on a list gathers each tensor and returns a list.

Converted to one gather per tensor: `all_gather_dim` takes a single tensor, so passing it the
list would raise as soon as a process group exists. (torch_xla wants `pin_layout=False` for a list.)
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def torchtpu_all_gather(value, dim=0):
    """`value` (or each tensor of a list) gathered from every rank along `dim`."""
    if not dist.is_initialized():
        return value
    if isinstance(value, list):
        return [torch.tpu.ops.all_gather_dim(t, dim) for t in value]
    return torch.tpu.ops.all_gather_dim(value, dim)


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


def _mp_fn(index):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank, world = dist.get_rank(), dist.get_world_size()
    preds = torch.tensor([float(rank), 10.0 + rank]).to(device)
    counts = torch.tensor([rank + 1.0]).to(device)
    gathered_preds, gathered_counts = torchtpu_all_gather([preds, counts], dim=0)
    print(f"rank {rank} of {world} preds={gathered_preds.cpu().tolist()}")
    print(f"total={gathered_counts.sum().item()}")


if __name__ == "__main__":
    torchtpu_spawn(_mp_fn)
