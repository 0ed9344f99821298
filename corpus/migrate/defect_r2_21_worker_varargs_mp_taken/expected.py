"""Issue 19, defect 21: a worker that takes `*args`, in a file where `mp` is the standard
library's multiprocessing. The launcher is converted all the same: the index is `args[0]`, and
torch.multiprocessing comes in under another name.
"""
import os
import multiprocessing as mp

import torch
import torch.distributed as dist
import torch.multiprocessing as torch_mp


def main(*args):
    os.environ["LOCAL_RANK"] = str(args[0])
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + args[0])
    dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    x = torch.ones(2).to(device) * ((dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) + 1)
    reduced = x.clone()  # xm.all_reduce returned a new tensor
    dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
    total = reduced
    print(f"rank {dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))} of {dist.get_world_size() if dist.is_initialized() else int(os.environ.get('WORLD_SIZE', '1'))} total={total.sum().item():.1f}")
    print(f"host has cpus: {mp.cpu_count() > 0}")


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env()
    # one process per chip the launcher set up on this host (every attached chip by default)
    nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
    # torchrun's rendezvous variables, which torch.multiprocessing does not set
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
    os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
    torch_mp.spawn(main, args=(), nprocs=nprocs)
