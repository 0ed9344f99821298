"""ImageNet on fake data, the shape of pytorch/xla's test/test_train_mp_imagenet.py.

A tiny two-block CNN stands in for ResNet-50 and one synthetic batch stands in for
the dataset. Flags from argparse, SampleGenerator, MpDeviceLoader, a RateTracker
with progress printed from step closures by test_utils, a StepLR schedule, an
accuracy pass reduced with mesh_reduce(np.mean), and xmp.spawn on every device.
"""
import datetime
import os
import time
import argparse
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def torchtpu_world_size():
  """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
  if dist.is_initialized():
    return dist.get_world_size()
  return int(os.environ.get('WORLD_SIZE', '1'))


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


def print_test_update(device, accuracy, epoch=None, step=None):
  """One test log line, as torch_xla's `test_utils.print_test_update` printed it."""
  rank = dist.get_rank() if dist.is_initialized() else 0
  fields = ['Test', f"Device={device}/{rank}"]
  if step is not None:
    fields.append(f"Step={step}")
  if epoch is not None:
    fields.append(f"Epoch={epoch}")
  if accuracy is not None:
    fields.append(f"Accuracy={accuracy:.2f}")
  fields.append(f"Time={datetime.datetime.now():%H:%M:%S}")
  print('|', ' '.join(fields), flush=True)


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
  """One training log line, as torch_xla's `test_utils.print_training_update` printed it."""
  rank = dist.get_rank() if dist.is_initialized() else 0
  fields = ['Training', f"Device={device}/{rank}"]
  if epoch is not None:
    fields.append(f"Epoch={epoch}")
  fields += [f"Step={step}", f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}"]
  fields.append(f"Time={datetime.datetime.now():%H:%M:%S}")
  print('|', ' '.join(fields), flush=True)
  if summary_writer is not None:
    summary_writer.add_scalar('examples/sec', rate)
    summary_writer.add_scalar('average_examples/sec', global_rate)


def torchtpu_mesh_reduce(data, reduce_fn):
  """`reduce_fn` of the list of every rank's `data` (`[data]` in a single process)."""
  if not dist.is_initialized():
    return reduce_fn([data])
  gathered = [None] * dist.get_world_size()
  dist.all_gather_object(gathered, data)
  return reduce_fn(gathered)


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


MODEL_OPTS = {
    '--lr_scheduler_divisor': {'type': int, 'default': 2},
    '--lr_scheduler_divide_every_n_epochs': {'type': int, 'default': 1},
}


def parse_flags(argv):
  parser = argparse.ArgumentParser(description='fake-data imagenet')
  parser.add_argument('--batch_size', type=int, default=8)
  parser.add_argument('--test_set_batch_size', type=int, default=8)
  parser.add_argument('--num_epochs', type=int, default=2)
  parser.add_argument('--lr', type=float, default=0.1)
  parser.add_argument('--momentum', type=float, default=0.9)
  parser.add_argument('--log_steps', type=int, default=1)
  parser.add_argument('--logdir', type=str, default=None)
  parser.add_argument('--num_workers', type=int, default=0)
  parser.add_argument('--img_dim', type=int, default=16)
  parser.add_argument('--train_dataset_len', type=int, default=16)
  for name, kwargs in MODEL_OPTS.items():
    parser.add_argument(name, **kwargs)
  return parser.parse_args(argv)


def conv_bn(cin, cout, stride):
  return nn.Sequential(
      nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False),
      nn.BatchNorm2d(cout),
      nn.ReLU(inplace=True),
  )


class TinyNet(nn.Module):
  """Two conv+bn blocks and a linear classifier: ResNet's stem, much smaller."""

  def __init__(self, num_classes=10):
    super(TinyNet, self).__init__()
    self.block1 = conv_bn(3, 8, stride=1)
    self.block2 = conv_bn(8, 16, stride=2)
    self.pool = nn.AdaptiveAvgPool2d(1)
    self.fc = nn.Linear(16, num_classes)

  def forward(self, x):
    x = self.block2(self.block1(x))
    x = torch.flatten(self.pool(x), 1)
    return self.fc(x)


def _train_update(device, step, loss, tracker, epoch):
  print_training_update(
      device,
      step,
      loss.item(),
      tracker.rate(),
      tracker.global_rate(),
      epoch)


def train_imagenet(flags):
  torch.manual_seed(42)
  img_dim = flags.img_dim
  # one fixed batch of "images", repeated by the generator (no dataset on disk)
  images = torch.randn(flags.batch_size, 3, img_dim, img_dim)
  labels = torch.randint(0, 10, (flags.batch_size,), dtype=torch.int64)
  train_loader = [(images, labels)] * (flags.train_dataset_len // flags.batch_size // torchtpu_world_size())
  test_loader = [(images[:flags.test_set_batch_size], labels[:flags.test_set_batch_size])] * 2

  device = torch.device("tpu:0")
  model = TinyNet().to(device)
  optimizer = optim.SGD(
      model.parameters(),
      lr=flags.lr,
      momentum=flags.momentum,
      weight_decay=1e-4)
  lr_scheduler = torch.optim.lr_scheduler.StepLR(
      optimizer,
      step_size=flags.lr_scheduler_divide_every_n_epochs,
      gamma=1.0 / flags.lr_scheduler_divisor)
  loss_fn = nn.CrossEntropyLoss()

  def train_loop_fn(loader, epoch):
    tracker = RateTracker()
    model.train()
    for step, (data, target) in enumerate(loader):
      (data, target) = torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t.to(device), (data, target)
      )
      optimizer.zero_grad()
      output = model(data)
      loss = loss_fn(output, target)
      loss.backward()
      torchtpu_optimizer_step(optimizer)
      tracker.add(flags.batch_size)
      if step % flags.log_steps == 0:
        _train_update(device, step, loss, tracker, epoch)

  def test_loop_fn(loader, epoch):
    total_samples, correct = 0, 0
    model.eval()
    step = 0
    for step, (data, target) in enumerate(loader):
      (data, target) = torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t.to(device), (data, target)
      )
      output = model(data)
      pred = output.max(1, keepdim=True)[1]
      correct += pred.eq(target.view_as(pred)).sum()
      total_samples += data.size()[0]
    accuracy = 100.0 * correct.item() / total_samples
    accuracy = torchtpu_mesh_reduce(accuracy, np.mean)
    print_test_update(device, accuracy, epoch, step)
    return accuracy

  train_device_loader = train_loader
  test_device_loader = test_loader
  accuracy, max_accuracy = 0.0, 0.0
  for epoch in range(1, flags.num_epochs + 1):
    torchtpu_rank0_print('Epoch {} train begin, lr={:.6f}'.format(
        epoch, lr_scheduler.get_last_lr()[0]))
    train_loop_fn(train_device_loader, epoch)
    torchtpu_rank0_print('Epoch {} train end'.format(epoch))
    accuracy = test_loop_fn(test_device_loader, epoch)
    torchtpu_rank0_print('Epoch {} test end, Accuracy={:.2f}'.format(epoch, accuracy))
    max_accuracy = max(accuracy, max_accuracy)
    lr_scheduler.step()

  torchtpu_rank0_print('Max Accuracy: {:.2f}%'.format(max_accuracy))
  checksum = sum(p.detach().norm().item() for p in model.parameters())
  print('rank {} of {} checksum={:.6f}'.format(
      dist.get_rank(), dist.get_world_size(), checksum))
  return max_accuracy


def _mp_fn(index, flags):
  # One of a job's processes (torchrun, torchtpu_spawn): join its group.
  if "RANK" in os.environ and not dist.is_initialized():
    dist.init_process_group("tpu_dist")
  torch.set_default_dtype(torch.float32)
  accuracy = train_imagenet(flags)
  if accuracy < 0.0:
    print('Accuracy {} is negative'.format(accuracy))
    sys.exit(21)


if __name__ == '__main__':
  FLAGS = parse_flags(sys.argv[1:])
  torchtpu_spawn(_mp_fn, args=(FLAGS,))
