# TPU720 strided-view: `.view()` of a slice or transpose becomes `.reshape()`
import torch
import torch_xla.core.xla_model as xm


def shifted_loss(logits, labels):
    vocab = logits.size(-1)
    shift_logits = logits[:, :-1].view(-1, vocab)
    shift_labels = labels[:, 1:].view(-1)
    return torch.nn.functional.cross_entropy(shift_logits, shift_labels)


def merge_heads(x, b, t):
    return x.transpose(1, 2).view(b, t, -1)


def untouched(x, n):
    rows = x[1:3].view(-1)  # a leading slice stays contiguous: left alone
    bits = x[:, 1:].view(torch.int32)  # a dtype view reinterprets bytes: left alone
    flat = x.view(-1)  # nothing strided in sight: left alone
    odd = x[:, ::2].view(n)  # `n` may be a dtype: reported
    return rows, bits, flat, odd


device = xm.xla_device()
