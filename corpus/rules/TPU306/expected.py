# TPU306 xla-autocast-softmax: softmax in a torch_xla autocast region gets a float32 input
import torch
import torch.nn.functional as F


def attend(q, k, v, mask):
    with torch.autocast(device_type="tpu", dtype=torch.bfloat16):
        scores = q @ k.transpose(-2, -1)
        weights = F.softmax((scores + mask).float(), dim=-1)
        logp = torch.log_softmax(scores.float(), -1)
        probs = scores.float().softmax(dim=-1)
        kept = F.softmax(scores, dim=-1, dtype=torch.float32)  # names its dtype: left alone
        again = F.softmax(scores.float(), dim=-1)  # already float32: left alone
    return weights @ v, logp, probs, kept, again


def score(model, x):
    with torch.autocast("tpu", dtype=torch.bfloat16):
        return F.log_softmax(model(x).float(), dim=-1)


outside = F.softmax(torch.ones(3), dim=0)  # not in an autocast region: left alone
