# torch_xla FSDPv2 (SPMD fully sharded data parallel) fine-tune of a small decoder, the shape of
# pytorch/xla's examples/fsdp/train_decoder_only_fsdp_v2.py: one process, a global mesh over every
# device (FSDPv2 reads it: no mesh= here), each decoder block wrapped by the auto-wrap policy, the
# batch sharded on the "fsdp" axis, the weights read back whole from the wrapper's state_dict.
import functools
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
from torch_xla.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDPv2

VOCAB, HIDDEN, HEADS, FFN, LAYERS, SEQ = 64, 32, 4, 128, 3, 16


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.up = nn.Linear(HIDDEN, FFN)
        self.down = nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, HEADS, h // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(h // HEADS)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Embedding(SEQ, HIDDEN)
        self.layers = nn.ModuleList([DecoderLayer() for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.pos(pos)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        return (logits,)  # a tuple, as Hugging Face models return: FSDPv2 needs shard_output


def batches(steps=4, global_bs=8):
    g = torch.Generator().manual_seed(1234)
    for _ in range(steps):
        data = torch.randint(0, VOCAB, (global_bs, SEQ + 1), generator=g)
        yield data[:, :-1].contiguous(), data[:, 1:].contiguous()


def shard_output(output, mesh):
    # FSDPv2 calls it on every wrapped block too (their output is a tensor), then on the root's tuple.
    real = output[0] if isinstance(output, tuple) else output
    xs.mark_sharding(real, mesh, ("fsdp", None, None))


def main():
    xr.use_spmd()
    n = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(n), (n, 1), ("fsdp", "tensor"))
    xs.set_global_mesh(mesh)
    device = xm.xla_device()
    torch.manual_seed(0)
    model = TinyDecoder()
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={DecoderLayer})
    model = FSDPv2(model, auto_wrap_policy=policy, shard_output=shard_output)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step, (x, y) in enumerate(batches()):
        x, y = x.to(device), y.to(device)
        xs.mark_sharding(x, mesh, ("fsdp", None))
        xs.mark_sharding(y, mesh, ("fsdp", None))
        optimizer.zero_grad()
        logits = model(x)[0]
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.8f}")
    state = {k.replace("_orig_module.", ""): v.cpu() for k, v in model.state_dict().items()}
    print(f"checksum {sum(v.double().sum().item() for v in state.values()):.6f}")


if __name__ == "__main__":
    main()
