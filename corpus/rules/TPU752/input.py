import torch
import torch_xla
import torch_xla.core.xla_model as xm


def train(model, loader, optimizer, loss_fn):
    device = torch_xla.device()
    model.to(device)
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        xm.mark_step()  # reported: the step was one graph


def evaluate(model, loader):
    for x, _ in loader:
        model(x)
        xm.mark_step()  # no backward(): not a training step
