# TPU802 missing-backward-kernel: reported only
import torch.nn.functional as F


def pool(features):
    return F.adaptive_max_pool2d(features, 2)  # inference runs; backward needs adaptive_max_pool2d_backward


def average(features):
    return F.adaptive_avg_pool2d(features, 2)  # forward and backward run: untouched
