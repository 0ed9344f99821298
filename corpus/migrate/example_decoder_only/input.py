"""A tiny decoder-only language model on random tokens, the shape of pytorch/xla's
examples/train_decoder_only_base.py: a config dataclass, a model with hand-written
causal attention (F.scaled_dot_product_attention), a SampleGenerator of token ids,
a step function compiled with torch_xla.compile, and torch_xla.launch.
"""
import itertools
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
import torch_xla.utils.utils as xu


@dataclass
class DecoderOnlyConfig:
  hidden_size: int = 32
  num_hidden_layers: int = 2
  num_attention_heads: int = 4
  intermediate_size: int = 64
  vocab_size: int = 128
  max_seq_len: int = 16


class RMSNorm(nn.Module):

  def __init__(self, dim, eps=1e-6):
    super().__init__()
    self.eps = eps
    self.weight = nn.Parameter(torch.ones(dim))

  def forward(self, x):
    var = x.pow(2).mean(-1, keepdim=True)
    return self.weight * x * torch.rsqrt(var + self.eps)


class Attention(nn.Module):

  def __init__(self, config):
    super().__init__()
    self.n_heads = config.num_attention_heads
    self.head_dim = config.hidden_size // config.num_attention_heads
    self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
    self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

  def forward(self, x):
    bsz, seq_len, hidden = x.shape
    q, k, v = self.qkv(x).split(hidden, dim=-1)
    # (bsz, heads, seq, head_dim)
    q = q.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
    k = k.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
    v = v.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = out.transpose(1, 2).reshape(bsz, seq_len, hidden)
    return self.o_proj(out)


class DecoderLayer(nn.Module):

  def __init__(self, config):
    super().__init__()
    self.input_norm = RMSNorm(config.hidden_size)
    self.attn = Attention(config)
    self.post_attn_norm = RMSNorm(config.hidden_size)
    self.mlp = nn.Sequential(
        nn.Linear(config.hidden_size, config.intermediate_size, bias=False),
        nn.GELU(approximate='tanh'),
        nn.Linear(config.intermediate_size, config.hidden_size, bias=False))

  def forward(self, x):
    x = x + self.attn(self.input_norm(x))
    x = x + self.mlp(self.post_attn_norm(x))
    return x


class DecoderOnlyModel(nn.Module):

  def __init__(self, config):
    super().__init__()
    self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
    self.pos_embed = nn.Parameter(
        torch.randn(config.max_seq_len, config.hidden_size) / math.sqrt(config.hidden_size))
    self.layers = nn.ModuleList(
        [DecoderLayer(config) for _ in range(config.num_hidden_layers)])
    self.norm = RMSNorm(config.hidden_size)
    self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

  def forward(self, input_ids):
    seq_len = input_ids.shape[1]
    h = self.embed_tokens(input_ids) + self.pos_embed[:seq_len]
    for layer in self.layers:
      h = layer(h)
    return self.lm_head(self.norm(h))


class TrainDecoderOnlyBase():

  def __init__(self, num_steps=4, config=DecoderOnlyConfig()):
    self.config = config
    self.batch_size = 4
    self.seq_len = config.max_seq_len
    self.num_steps = num_steps
    self.log_steps = 2
    self.num_epochs = 1
    self.train_dataset_len = 64

    # random token ids drawn on the CPU: the language model learns nothing real,
    # but the graph is the same as with a tokenized corpus
    gen = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, config.vocab_size, (self.batch_size, self.seq_len + 1),
                           generator=gen)
    train_loader = xu.SampleGenerator(
        data=(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()),
        sample_count=self.train_dataset_len // self.batch_size)

    torch.manual_seed(0)
    self.device = torch_xla.device()
    self.train_device_loader = pl.MpDeviceLoader(train_loader, self.device)
    self.model = DecoderOnlyModel(self.config).to(self.device)
    self.optimizer = optim.AdamW(self.model.parameters(), lr=1e-3)
    self.loss_fn = nn.CrossEntropyLoss()
    # the whole step (forward, backward, optimizer) is traced as one graph
    self.compiled_step_fn = torch_xla.compile(self.step_fn)

  def _train_update(self, step, loss, epoch):
    print(f'epoch: {epoch}, step: {step}, loss: {loss.item():.6f}')

  def run_optimizer(self):
    xm.optimizer_step(self.optimizer)

  def step_fn(self, data, target):
    self.optimizer.zero_grad()
    logits = self.model(data)
    loss = self.loss_fn(
        logits.view(-1, self.config.vocab_size), target.view(-1))
    loss.backward()
    self.run_optimizer()
    return loss

  def train_loop_fn(self, loader, epoch):
    self.model.train()
    loader = itertools.islice(loader, self.num_steps)
    for step, (data, target) in enumerate(loader):
      loss = self.compiled_step_fn(data, target)
      if step % self.log_steps == 0:
        xm.add_step_closure(self._train_update, args=(step, loss, epoch))

  def start_training(self):
    for epoch in range(1, self.num_epochs + 1):
      xm.master_print(f'Epoch {epoch} train begin')
      self.train_loop_fn(self.train_device_loader, epoch)
      xm.master_print(f'Epoch {epoch} train end')
    xm.wait_device_ops()
    checksum = sum(p.detach().float().norm().item() for p in self.model.parameters())
    print(f'rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}')


def _mp_fn(index):
  base = TrainDecoderOnlyBase()
  base.start_training()


if __name__ == '__main__':
  torch_xla.launch(_mp_fn, args=())
