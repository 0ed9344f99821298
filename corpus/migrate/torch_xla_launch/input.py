# Distributed training with the torch_xla.launch entry point (2.5+).
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.runtime as xr
import torch_xla.distributed.xla_backend  # registers the "xla" process-group backend
from torch.nn.parallel import DistributedDataParallel as DDP


def _worker(index, lr):
    dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    rank = xr.global_ordinal()
    world = xr.world_size()
    print(f"rank {rank}/{world} local={xr.local_ordinal()} on {device}")

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
        torch_xla.sync()
        print(f"rank {rank} step {step} loss={loss.item():.6f}")

    dist.destroy_process_group()


if __name__ == "__main__":
    torch_xla.launch(_worker, args=(0.01,))
