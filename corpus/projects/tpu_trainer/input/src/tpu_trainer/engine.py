"""The training loop, written for PyTorch/XLA."""
import time

import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def train_one_epoch(model, loader, optimizer, device, log_every=10):
    model.train()
    device_loader = pl.MpDeviceLoader(loader, device)
    start = time.time()
    for step, (inputs, labels) in enumerate(device_loader):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        xm.optimizer_step(optimizer)
        if step % log_every == 0:
            xm.add_step_closure(_log, args=(step, loss))
    xm.mark_step()
    xm.master_print(f"epoch took {time.time() - start:.1f}s")


def _log(step, loss):
    print(f"[{xm.get_ordinal()}] step {step}: loss {loss.item():.4f}")


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros((), device=device)
    total = 0
    for inputs, labels in pl.MpDeviceLoader(loader, device):
        correct += (model(inputs).argmax(-1) == labels).sum()
        total += labels.numel()
    correct = xm.all_reduce(xm.REDUCE_SUM, correct)
    return correct.item() / (total * xm.xrt_world_size())
