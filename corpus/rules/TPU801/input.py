# TPU801 missing-kernel: reported only
import torch
import torch.nn.functional as F
from torch import Tensor


def robust_loss(pred: Tensor, target: Tensor) -> Tensor:
    err = (pred - target).abs()
    return torch.median(err) + F.mish(err).mean() + torch.nansum(err)


def metrics(m: torch.Tensor, frame):
    x = torch.randn(4, 4)
    scores = torch.trace(m), torch.linalg.eig(m), torch.special.erfc(m)
    return scores, m.median(), x.nansum(), frame.median()  # `frame` may be a DataFrame: untouched


def supported(x):
    return torch.mean(x), torch.matmul(x, x), F.softmax(x, -1), F.cross_entropy(x, x), F.layer_norm(x, (4,))


def on_the_cpu_on_purpose(x):
    return torch.median(x.cpu()), x.cpu().median()


def upsample(x):
    return F.interpolate(x, scale_factor=2, mode="trilinear"), F.interpolate(x, scale_factor=2)


def percentile(x: Tensor, k: int):
    return torch.kthvalue(x, k).values  # composite: its inner `aten::kthvalue.values` has no kernel


def entropy(scores: Tensor, frame, x: Tensor):
    normalized = F.log_softmax(scores, dim=-1)
    p = torch.exp(normalized)
    flagged = -(normalized * p).nansum(-1, keepdim=True), (-scores[0]).median()
    # unknown operands, or on the CPU on purpose: not judged
    return flagged, (frame * 2).median(), (x.cpu() * 2).median()
