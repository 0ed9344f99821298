# Train a transformer block stack with torch_xla FSDP (v1, one process per core).
import functools

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP, checkpoint_module
from torch_xla.distributed.fsdp.wrap import transformer_auto_wrap_policy


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def _mp_fn(index):
    device = xm.xla_device()
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(32) for _ in range(2)])
    auto_wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    model = FSDP(
        model,
        auto_wrap_policy=auto_wrap,
        auto_wrapper_callable=lambda m, *a, **kw: FSDP(checkpoint_module(m), *a, **kw),
        compute_dtype=torch.bfloat16,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(3):
        x = torch.randn(2, 8, 32).to(device)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()  # FSDP already reduced the gradients: do not use xm.optimizer_step
        optimizer.zero_grad()
        xm.mark_step()
        if xm.is_master_ordinal():
            print(step, f"{loss.item():.6f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=None)
