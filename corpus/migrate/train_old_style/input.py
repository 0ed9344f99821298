"""Train a small MLP on synthetic data on a single TPU core (PyTorch/XLA 1.x style)."""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class MLP(nn.Module):
    def __init__(self, d_in=784, d_hidden=256, n_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, n_classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = xm.xla_device()  # the TPU core
    model = MLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    start = time.time()
    for step in range(args.steps):
        x = torch.randn(64, 784).to(device)  # drawn on the CPU: same data everywhere
        y = torch.randint(0, 10, (64,)).to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()  # cut the graph and execute
        if step % 2 == 0:
            print(f"step {step} loss {loss.item():.6f}")

    xm.wait_device_ops()
    print(f"done in {time.time() - start:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
