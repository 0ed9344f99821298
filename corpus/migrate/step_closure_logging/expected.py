import os
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def _log(step, loss, tracker_rate):
    print(f"[{torchtpu_rank()}] step={step} loss={loss.item():.5f}")
    print(f"rate={tracker_rate:.1f}/s {time.asctime()}", file=sys.stderr)  # timings vary run to run


def train_loop(model, loader, optimizer, log_every=10):
    device = torch.device("tpu:0")
    model.train()
    t0 = time.time()
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if step % log_every == 0:
            rate = (step + 1) * x.shape[0] / (time.time() - t0)
            # runs after the graph for this step has executed
            _log(step, loss, rate)


if __name__ == "__main__":
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
    model = torch.nn.Linear(16, 4).to(torch.device("tpu:0"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    train_loop(model, DataLoader(ds, batch_size=8), optimizer, log_every=2)
