"""Multi-core MNIST-style training with xmp.spawn (classic PyTorch/XLA recipe)."""
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
import torch.distributed as dist
import torch.multiprocessing as mp

FLAGS = {
    "batch_size": 128,
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
    dataset = TensorDataset(torch.randn(2048, 1, 28, 28), torch.randint(0, 10, (2048,)))
    sampler = DistributedSampler(
        dataset,
        num_replicas=dist.get_world_size() if dist.is_initialized() else 1,
        rank=dist.get_rank() if dist.is_initialized() else 0,
        shuffle=True,
    )
    loader = DataLoader(dataset, batch_size=flags["batch_size"], sampler=sampler, num_workers=2)

    device = torch.device("tpu")
    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=flags["lr"] * (dist.get_world_size() if dist.is_initialized() else 1), momentum=0.5)

    for epoch in range(flags["num_epochs"]):
        para_loader = pl.ParallelLoader(loader, [device])
        model.train()
        for step, (data, target) in enumerate(para_loader.per_device_loader(device)):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 10 == 0:
                if not dist.is_initialized() or dist.get_rank() == 0:
                    print(f"[{epoch}] step {step} loss={loss.item():.4f}")
        dist.barrier()

    if dist.get_node_local_rank(fallback_rank=0) == 0:
        xm.save(model.state_dict(), "/tmp/mnist.pt")


if __name__ == "__main__":
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=FLAGS["num_cores"])
    mp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS["num_cores"], start_method="fork")
