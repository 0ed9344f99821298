# Fake-data classifier, multi-core by default; `--single_core` runs the worker directly in this
# process (the way to debug it with pdb: no subprocesses).
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--single_core", action="store_true")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=2)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def fake_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    return TensorDataset(x, (x[:, :4].argmax(dim=1)))


def train_loop(model, loader, optimizer, device):
    model.train()
    for data, target in pl.MpDeviceLoader(loader, device):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        xm.optimizer_step(optimizer)
    return loss.item()


def test_loop(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for data, target in pl.MpDeviceLoader(loader, device):
            correct += model(data).argmax(dim=1).eq(target).sum().item()
            total += target.size(0)
    return xm.mesh_reduce("accuracy", correct / total, lambda xs: sum(xs) / len(xs))


def _mp_fn(index, args):
    torch.manual_seed(0)
    device = torch_xla.device()
    world, rank = xr.world_size(), xr.global_ordinal()
    train, test = fake_data(128, 1), fake_data(64, 2)
    train_loader = DataLoader(train, batch_size=args.batch_size,
                              sampler=DistributedSampler(train, num_replicas=world, rank=rank, shuffle=False))
    test_loader = DataLoader(test, batch_size=args.batch_size,
                             sampler=DistributedSampler(test, num_replicas=world, rank=rank, shuffle=False))
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * world)
    for epoch in range(1, args.epochs + 1):
        loss = train_loop(model, train_loader, optimizer, device)
        accuracy = test_loop(model, test_loader, device)
        xm.master_print(f"epoch {epoch} loss={loss:.6f} accuracy={accuracy:.6f}")
    print(f"[{index}] rank {rank} of {world}: final accuracy={accuracy:.6f}", flush=True)


if __name__ == "__main__":
    args = get_args()
    if args.single_core:
        _mp_fn(0, args)
    else:
        xmp.spawn(_mp_fn, args=(args,))
