"""Data parallel training with the gradients averaged by hand.

Before xm.optimizer_step did it for them, people wrote the all_reduce themselves:
sum every gradient over the replicas, scale by 1/world, then step.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.1)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _mp_fn(index, flags):
    xm.rendezvous('init')
    rank = xr.global_ordinal()
    world = xr.world_size()
    device = xm.xla_device()

    # every replica builds the same full dataset on the CPU and keeps its own slice
    torch.manual_seed(1234)
    inputs = torch.randn(flags.batch * 4, 12)
    targets = torch.randint(0, 3, (flags.batch * 4,))
    inputs, targets = inputs[rank::world], targets[rank::world]

    model = Net().to(device)  # same seed -> same initial weights everywhere
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr)

    for step in range(flags.steps):
        lo = (step * flags.batch // world) % inputs.shape[0]
        x = inputs[lo:lo + flags.batch // world].to(device)
        y = targets[lo:lo + flags.batch // world].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        # average the gradients over all replicas (in place)
        xm.all_reduce(xm.REDUCE_SUM, [p.grad for p in model.parameters()], scale=1.0 / xr.world_size())
        optimizer.step()
        xm.mark_step()
        if xm.is_master_ordinal():
            print(f"step {step} loss={loss.item():.6f}")

    checksum = sum(p.detach().norm().item() for p in model.parameters())
    print(f"rank {rank} of {world} checksum={checksum:.6f}")


if __name__ == '__main__':
    flags = get_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=None)
