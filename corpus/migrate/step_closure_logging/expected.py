import os
import time

import torch
import torch.distributed as dist


def _log(step, loss, tracker_rate):
    print(f"[{dist.get_rank() if dist.is_initialized() else int(os.environ.get('RANK', '0'))}] step={step} loss={loss.item():.5f} rate={tracker_rate:.1f}/s {time.asctime()}")


def train_loop(model, loader, optimizer, log_every=10):
    device = torch.device("tpu")
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
