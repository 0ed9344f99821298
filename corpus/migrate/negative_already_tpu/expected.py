# Already migrated to TorchTPU: must be left untouched.
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world_size):
    dist.init_process_group("tpu_dist", rank=rank, world_size=world_size)
    device = torch.device("tpu")
    model = DDP(torch.nn.Linear(32, 32).to(device))
    opt = torch.optim.AdamW(model.parameters())
    with torch.autocast("tpu", dtype=torch.bfloat16):
        loss = model(torch.randn(8, 32, device="tpu")).sum()
    loss.backward()
    opt.step()
    torch.accelerator.synchronize()
    compiled = torch.compile(model, backend="tpu")
    if dist.get_rank() == 0:
        print(loss.item(), compiled)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=4)
    mp.spawn(worker, args=(4,), nprocs=4)
