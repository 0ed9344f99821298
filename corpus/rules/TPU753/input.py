import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        if mask is not None and mask.any():  # reported
            x = x * mask
        if torch.isnan(x).any():  # reported
            x = torch.nan_to_num(x)
        while x.norm() > 10:  # reported
            x = x / 2
        assert torch.equal(x, x), "x changed"  # reported
        scale = 2.0 if x.sum() > 0 else 1.0  # reported
        if x.shape[0] > 1 and self.training:  # shapes and flags: not reported
            x = self.proj(x)
        if isinstance(mask, torch.Tensor) and mask.dim() == 2:  # not reported
            x = x * scale
        return x

    def helper(self, x):
        if x.any():  # not forward: not reported
            return x
        return -x
