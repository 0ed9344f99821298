# The TorchTPU form of input.py that TPU222's explanation gives, written by a person: one process
# per chip (torchrun), the model on the chip before FSDP2 shards each block and then the root, the
# optimizer built after the last fully_shard, each rank keeping its slice of the global batch, the
# loss averaged over ranks where it is printed. Plain `python` runs it unsharded on one chip.
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

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


def main():
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    device = torch.device("tpu")
    torch.manual_seed(0)
    model = TinyDecoder().to(device)  # before fully_shard: TorchTPU refuses FSDP2's in-place move
    if world_size > 1:
        mesh = init_device_mesh("tpu", (world_size,), mesh_dim_names=("fsdp",))  # creates the group
        for module in model.modules():  # the auto-wrap policy's classes
            if isinstance(module, DecoderLayer):
                fully_shard(module, mesh=mesh)
        fully_shard(model, mesh=mesh)  # the root, FSDPv2's outer wrapper
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)  # after the last fully_shard
    for step, (x, y) in enumerate(batches()):
        if x.shape[0] % world_size:
            raise ValueError(f"global batch {x.shape[0]} is not divisible by {world_size} chips")
        x = x.tensor_split(world_size)[rank].to(device)  # mark_sharding(x, mesh, ("fsdp", None))
        y = y.tensor_split(world_size)[rank].to(device)
        optimizer.zero_grad()
        logits = model(x)[0]  # shard_output: nothing to do, the output is this rank's slice
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        optimizer.step()
        global_loss = loss.detach().clone()
        if world_size > 1:
            dist.all_reduce(global_loss, op=dist.ReduceOp.AVG)  # on every rank
        value = global_loss.item()
        if rank == 0:
            print(f"step {step} loss {value:.8f}")
    # Full parameters with the model's own keys; every rank takes part (it communicates).
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        print(f"checksum {sum(v.double().sum().item() for v in state.values()):.6f}")
    if world_size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
