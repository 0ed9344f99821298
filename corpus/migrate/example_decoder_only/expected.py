"""A tiny decoder-only language model on random tokens, the shape of pytorch/xla's
examples/train_decoder_only_base.py: a config dataclass, a model with hand-written
causal attention (F.scaled_dot_product_attention), a SampleGenerator of token ids,
a step function compiled with torch_xla.compile, and torch_xla.launch.
"""
import os
import itertools
import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def torchtpu_launch(fn, args=(), start_method='spawn', debug_single_process=False):
  """Under torchrun, `fn(LOCAL_RANK, *args)` in this process; otherwise `torchtpu_spawn` on
  every attached chip (`debug_single_process`: once, in this process)."""
  if dist.is_torchelastic_launched():
    fn(int(os.environ['LOCAL_RANK']), *args)
  else:
    nprocs = 1 if debug_single_process else None
    torchtpu_spawn(fn, args, nprocs, start_method=start_method)


def torchtpu_optimizer_step(optimizer):
  """Average the gradients over the process group (if any), then `optimizer.step()`."""
  if dist.is_initialized():
    for group in optimizer.param_groups:
      for param in group['params']:
        if param.grad is not None:
          dist.all_reduce(param.grad)
          param.grad /= dist.get_world_size()
  return optimizer.step()


def torchtpu_rank():
  """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
  if dist.is_initialized():
    return dist.get_rank()
  return int(os.environ.get('RANK', '0'))


def torchtpu_rank0_print(*args, **kwargs):
  """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
  if torchtpu_rank() == 0:
    print(*args, **kwargs)


def torchtpu_spawn(
  fn, args=(), nprocs=None, join=True, daemon=False, start_method='spawn'
):
  """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
  `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
  environment is left as it was: here the world is still one process."""
  parent_env = os.environ.copy()
  try:
    torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
    chips = os.environ['TORCH_TPU_SLICEBUILDER_ADDRESSES'].split(',')
    nodes = int(os.environ.get('NNODES', '1'))
    local = len(chips) // nodes
    os.environ.setdefault('MASTER_ADDR', 'localhost')
    os.environ.setdefault('MASTER_PORT', '29500')
    os.environ['LOCAL_WORLD_SIZE'] = str(local)
    os.environ['WORLD_SIZE'] = str(nodes * local)
    if nprocs != 1:
      worker_args = (fn, args)
      return mp.start_processes(
        torchtpu_worker, worker_args, local, join, daemon, start_method
      )
    try:
      torchtpu_worker(0, fn, args)
    finally:
      if dist.is_initialized():
        dist.destroy_process_group()
  finally:
    os.environ.clear()
    os.environ.update(parent_env)


def torchtpu_worker(index, fn, args):
  """A process `torchtpu_spawn` started: `fn(index, *args)` with the `LOCAL_RANK` and `RANK`
  that torchrun would give it."""
  os.environ['LOCAL_RANK'] = str(index)
  node = int(os.environ.get('NODE_RANK', '0'))
  os.environ['RANK'] = str(node * int(os.environ['LOCAL_WORLD_SIZE']) + index)
  fn(index, *args)


def torchtpu_world_size():
  """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
  if dist.is_initialized():
    return dist.get_world_size()
  return int(os.environ.get('WORLD_SIZE', '1'))


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
    train_loader = [(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())] * (self.train_dataset_len // self.batch_size)

    torch.manual_seed(0)
    self.device = torch.device("tpu:0")
    self.train_device_loader = train_loader
    self.model = DecoderOnlyModel(self.config).to(self.device)
    self.optimizer = optim.AdamW(self.model.parameters(), lr=1e-3)
    self.loss_fn = nn.CrossEntropyLoss()
    # the whole step (forward, backward, optimizer) is traced as one graph
    self.compiled_step_fn = torch.compile(self.step_fn, backend="tpu")

  def _train_update(self, step, loss, epoch):
    print(f'epoch: {epoch}, step: {step}, loss: {loss.item():.6f}')

  def run_optimizer(self):
    torchtpu_optimizer_step(self.optimizer)

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
      (data, target) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.device), (data, target))
      loss = self.compiled_step_fn(data, target)
      if step % self.log_steps == 0:
        self._train_update(step, loss, epoch)

  def start_training(self):
    for epoch in range(1, self.num_epochs + 1):
      torchtpu_rank0_print(f'Epoch {epoch} train begin')
      self.train_loop_fn(self.train_device_loader, epoch)
      torchtpu_rank0_print(f'Epoch {epoch} train end')
    torch.accelerator.synchronize()
    checksum = sum(p.detach().float().norm().item() for p in self.model.parameters())
    print(f'rank {torchtpu_rank()} of {torchtpu_world_size()} checksum={checksum:.6f}')


def _mp_fn(index):
  # One of a job's processes (torchrun, torchtpu_spawn): join its group.
  if "RANK" in os.environ and not dist.is_initialized():
    dist.init_process_group("tpu_dist")
  base = TrainDecoderOnlyBase()
  base.start_training()


if __name__ == '__main__':
  torchtpu_launch(_mp_fn, args=())
