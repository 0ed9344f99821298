# Distributed training with the torch_xla.launch entry point (2.5+).
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.multiprocessing as mp


def _worker(index, lr):
    os.environ["LOCAL_RANK"] = str(index)
    os.environ["RANK"] = str(int(os.environ.get("NODE_RANK", "0")) * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    if not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    device = torch.device("tpu:0")
    rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))
    world = dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", "1"))
    print(f"rank {rank}/{world} local={dist.get_node_local_rank(fallback_rank=0)} on {device}")

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
    if dist.is_torchelastic_launched():
        # torchrun started this process: run the worker in it, as torch_xla.launch did
        os.environ.setdefault("NODE_RANK", os.environ.get("GROUP_RANK", "0"))
        _worker(int(os.environ["LOCAL_RANK"]), 0.01)
    else:
        torch.tpu.distributed.set_tpu_launch_env()
        # one process per chip the launcher set up on this host (every attached chip)
        nprocs = len(os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")) // int(os.environ.get("NNODES", "1"))
        # torchrun's rendezvous variables, which torch.multiprocessing does not set
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(nprocs)
        os.environ["WORLD_SIZE"] = str(int(os.environ.get("NNODES", "1")) * nprocs)
        mp.spawn(_worker, args=(0.01,), nprocs=nprocs)
