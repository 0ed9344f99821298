"""The training loop, written for PyTorch/XLA."""
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr


def train_one_epoch(model, loader, optimizer, device, log_every=4):
    model.train()
    device_loader = pl.MpDeviceLoader(loader, device)
    for step, (inputs, labels) in enumerate(device_loader):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        xm.optimizer_step(optimizer)
        if step % log_every == 0:
            xm.add_step_closure(_log, args=(step, loss))
    xm.mark_step()
    xm.master_print(f"epoch done: {step + 1} steps")


def _log(step, loss):
    print(f"[{xr.global_ordinal()}] step {step}: loss {loss.item():.6f}")


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    for inputs, labels in pl.MpDeviceLoader(loader, device):
        correct += (model(inputs).argmax(-1) == labels).sum().item()
        total += labels.numel()
    correct = xm.mesh_reduce("correct", correct, sum)
    total = xm.mesh_reduce("total", total, sum)
    return correct / total
