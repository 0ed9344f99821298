import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

NPROCS = int(sys.argv[1]) if len(sys.argv) > 1 else 1  # 8 on a v5p-8


def worker(
    index,
    config,
):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    loss = torch.tensor(1.0, device=device)
    reduced = loss.clone()  # xm.all_reduce returned a new tensor
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    loss = reduced * (1.0 / (dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))))
    torch.accelerator.synchronize()
    shown = ("loss:", loss.item(), "config:", config,)  # evaluated on every rank, as master_print's arguments were
    if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
        print(*shown)
    if dist.is_initialized():
        dist.barrier()  # everybody waits here


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=NPROCS)
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    mp.spawn(worker, args=({"lr": 0.1},), nprocs=nprocs)
