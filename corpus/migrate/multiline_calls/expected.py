import os
import sys

import torch
import torch_xla.core.xla_model as xm
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
    loss = xm.all_reduce(
        xm.REDUCE_SUM,
        loss,
        scale=1.0 / (dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))),
    )
    torch.accelerator.synchronize()
    if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
        print("loss:", loss.item(), "config:", config)
    if dist.is_initialized():
        dist.barrier()  # everybody waits here


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=NPROCS)
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(NPROCS)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * NPROCS)
    mp.spawn(worker, args=({"lr": 0.1},), nprocs=NPROCS)
