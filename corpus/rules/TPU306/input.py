# TPU306 xla-autocast-softmax: softmax in a torch_xla autocast region gets a float32 input
import torch
import torch.nn.functional as F
import torch_xla.amp


def attend(q, k, v, mask):
    with torch.autocast(device_type="xla", dtype=torch.bfloat16):
        scores = q @ k.transpose(-2, -1)
        weights = F.softmax(scores + mask, dim=-1)
        logp = torch.log_softmax(scores, -1)
        probs = scores.softmax(dim=-1)
        kept = F.softmax(scores, dim=-1, dtype=torch.float32)  # names its dtype: left alone
        again = F.softmax(scores.float(), dim=-1)  # already float32: left alone
    return weights @ v, logp, probs, kept, again


def score(model, x):
    with torch_xla.amp.autocast("xla"):
        return F.log_softmax(model(x), dim=-1)


outside = F.softmax(torch.ones(3), dim=0)  # not in an autocast region: left alone
