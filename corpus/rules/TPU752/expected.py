import torch


torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_AND_FUSE


def train(model, loader, optimizer, loss_fn):
    device = torch.device("tpu:0")
    model.to(device)
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()


def evaluate(model, loader):
    for x, _ in loader:
        model(x)
