import torch
from torch import nn


class Pool(nn.Module):
    def forward(self, x, labels):
        valid = labels != -100
        picked = x[valid]  # reported
        rows = x[:, ~valid[0]]  # reported
        idx = torch.nonzero(labels)  # reported
        uniq = labels.unique()  # reported
        where = torch.where(valid)  # reported
        x[labels < 0] = 0  # assigning through a mask keeps the shape: not reported
        same = torch.where(valid, x, 0)  # three arguments: static, not reported
        return picked.sum() + rows.sum() + idx.numel() + uniq.numel() + len(where) + same.sum()


def train(model, batches, optimizer):
    keep = torch.rand(4, 8) > 0.5
    for step, (x, y) in enumerate(batches):
        per_token = model(x.to("tpu"))
        loss = per_token[keep[step]].mean()  # reported: in the training step
        loss.backward()
        optimizer.step()


def stats(x):
    return x[x > 0].mean()  # neither forward nor a step: not reported
