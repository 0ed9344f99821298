"""Multi-core MNIST-style training with xmp.spawn (classic PyTorch/XLA recipe)."""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

FLAGS = {
    "batch_size": 64,
    "num_epochs": 2,
    "lr": 0.01,
    "num_cores": 8,
}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def _mp_fn(index, flags):
    torch.manual_seed(1)
    dataset = TensorDataset(torch.randn(512, 1, 28, 28), torch.randint(0, 10, (512,)))
    sampler = DistributedSampler(
        dataset,
        num_replicas=xr.world_size(),
        rank=xr.global_ordinal(),
        shuffle=True,
    )
    loader = DataLoader(dataset, batch_size=flags["batch_size"], sampler=sampler, num_workers=2)

    device = xm.xla_device()
    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=flags["lr"] * xr.world_size(), momentum=0.5)

    for epoch in range(flags["num_epochs"]):
        para_loader = pl.ParallelLoader(loader, [device])
        model.train()
        for step, (data, target) in enumerate(para_loader.per_device_loader(device)):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 2 == 0:
                xm.master_print(f"[{epoch}] step {step} loss={loss.item():.6f}")
        xm.rendezvous("epoch_end")

    checksum = sum(p.norm().item() for p in model.parameters())  # a norm: a signed sum cancels and magnifies rounding
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}")
    # every rank calls xm.save (it synchronises the ranks); only the master writes
    xm.save(model.state_dict(), "mnist.pt")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=FLAGS["num_cores"])
    FLAGS["num_cores"] = parser.parse_args().num_cores
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS["num_cores"], start_method="fork")
