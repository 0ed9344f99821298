"""Data-parallel training on every TPU core of the host: xmp.spawn without nprocs.

The shape of pytorch/xla's test_train_mp_* scripts: flags in a dict, synthetic data,
one process per device, gradients all-reduced by xm.optimizer_step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

FLAGS = {"batch_size": 16, "lr": 0.05, "steps": 4}


def train(flags):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(256, 20), torch.randint(0, 4, (256,)))
    sampler = DistributedSampler(data, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False)
    loader = DataLoader(data, batch_size=flags["batch_size"], sampler=sampler, drop_last=True)

    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    for step, (x, y) in enumerate(loader):
        if step == flags["steps"]:
            break
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)  # averages gradients over the replicas
        xm.master_print(f"step {step} loss={loss.item():.6f}")
    return sum(p.norm().item() for p in model.parameters())


def _mp_fn(index, flags):
    checksum = train(flags)
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(FLAGS,))
