# Fake-data ResNet training, the shape of pytorch/xla's examples/train_resnet_base.py
# (the newer API: torch_xla.device(), torch_xla.step(), torch_xla.launch).
# A three-block toy ResNet and one synthetic batch keep it to a few seconds on a CPU.
import os
import itertools
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class RateTracker:
  """Samples per second: `rate()` since its last call (smoothed), `global_rate()` overall.

  What torch_xla's `xm.RateTracker` measured; it only reads the clock.
  """

  def __init__(self, smooth_factor=None):
    if smooth_factor is None:
      smooth_factor = float(os.environ.get('RATE_TRACKER_SMOOTHING', 0.4))
    self._smooth_factor = smooth_factor
    self._start_time = self._partial_time = time.time()
    self._partial_count = self._count = 0.0
    self._partial_rate = None

  def add(self, count):
    self._count += count

  def rate(self):
    now = time.time()
    elapsed = now - self._partial_time
    if elapsed <= 0:
      return 0.0
    rate = self._count / elapsed
    if self._partial_rate is not None:
      rate = (1 - self._smooth_factor) * rate + self._smooth_factor * self._partial_rate
    self._partial_count += self._count
    self._count, self._partial_time, self._partial_rate = 0.0, now, rate
    return rate

  def global_rate(self):
    elapsed = time.time() - self._start_time
    return (self._partial_count + self._count) / elapsed if elapsed > 0 else 0.0


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


class BasicBlock(nn.Module):

  def __init__(self, channels):
    super().__init__()
    self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
    self.bn1 = nn.BatchNorm2d(channels)
    self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
    self.bn2 = nn.BatchNorm2d(channels)

  def forward(self, x):
    out = F.relu(self.bn1(self.conv1(x)))
    out = self.bn2(self.conv2(out))
    return F.relu(out + x)  # residual


class ToyResNet(nn.Module):

  def __init__(self, num_classes=10, width=8):
    super().__init__()
    self.stem = nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1, bias=False),
        nn.BatchNorm2d(width), nn.ReLU())
    self.layers = nn.Sequential(*[BasicBlock(width) for _ in range(2)])
    self.head = nn.Linear(width, num_classes)

  def forward(self, x):
    x = self.layers(self.stem(x))
    x = F.adaptive_avg_pool2d(x, 1).flatten(1)
    return self.head(x)


class TrainBase():

  def __init__(self):
    self.img_dim = 16
    self.batch_size = 8
    self.num_steps = 4
    self.num_epochs = 1
    self.log_steps = 1
    self.train_dataset_len = 64

    torch.manual_seed(0)
    train_loader = [(torch.randn(self.batch_size, 3, self.img_dim, self.img_dim),
              torch.randint(0, 10, (self.batch_size,), dtype=torch.int64))] * (self.train_dataset_len // self.batch_size)

    self.device = torch.device("tpu:0")
    self.train_device_loader = train_loader
    self.model = ToyResNet().to(self.device)
    self.optimizer = optim.SGD(
        self.model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    self.loss_fn = nn.CrossEntropyLoss()

  def _train_update(self, step, loss, tracker, epoch):
    print(f'epoch: {epoch}, step: {step}, loss: {loss.item():.6f}, '
          f'rate: {tracker.rate()}')

  def run_optimizer(self):
    torchtpu_optimizer_step(self.optimizer)

  def train_loop_fn(self, loader, epoch):
    tracker = RateTracker()
    self.model.train()
    loader = itertools.islice(loader, self.num_steps)
    for step, (data, target) in enumerate(loader):
      (data, target) = torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t.to(self.device), (data, target)
      )
      self.optimizer.zero_grad()
      output = self.model(data)
      loss = self.loss_fn(output, target)
      loss.backward()
      self.run_optimizer()
      tracker.add(self.batch_size)
      if step % self.log_steps == 0:
        # runs when this step's graph has executed, at the end of the `with`
        self._train_update(step, loss, tracker, epoch)

  def start_training(self):
    for epoch in range(1, self.num_epochs + 1):
      torchtpu_rank0_print('Epoch {} train begin {}'.format(
          epoch, time.strftime('%l:%M%p %Z on %b %d, %Y')))
      self.train_loop_fn(self.train_device_loader, epoch)
      torchtpu_rank0_print('Epoch {} train end {}'.format(
          epoch, time.strftime('%l:%M%p %Z on %b %d, %Y')))
    torch.accelerator.synchronize()
    checksum = sum(p.norm().item() for p in self.model.parameters())
    print(f'rank {torchtpu_rank()} of {torchtpu_world_size()} checksum={checksum:.6f}')


def _mp_fn(index):
  # One of a job's processes (torchrun, torchtpu_spawn): join its group.
  if "RANK" in os.environ and not dist.is_initialized():
    dist.init_process_group("tpu_dist")
  base = TrainBase()
  base.start_training()


if __name__ == '__main__':
  torchtpu_launch(_mp_fn, args=())
