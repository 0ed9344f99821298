# Already migrated to TorchTPU: must be left untouched.
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world_size):
    dist.init_process_group("tpu_dist", rank=rank, world_size=world_size)
    device = torch.device("tpu")
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(32, 32).to(device))
    opt = torch.optim.AdamW(model.parameters())
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = model(torch.randn(8, 32, device="tpu")).sum()
    loss.backward()
    opt.step()
    torch.accelerator.synchronize()
    compiled = torch.compile(model, backend="tpu")
    checksum = sum(p.sum().item() for p in model.parameters())
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} checksum={checksum:.6f}")
    if dist.get_rank() == 0:
        print(loss.item(), compiled)
    dist.destroy_process_group()


if __name__ == "__main__":
    nprocs = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("NPROCS", 4))
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
    os.environ.setdefault("MASTER_ADDR", "localhost")  # mp.spawn is not torchrun: no rendezvous variables
    os.environ.setdefault("MASTER_PORT", "29500")
    mp.spawn(worker, args=(nprocs,), nprocs=nprocs)
