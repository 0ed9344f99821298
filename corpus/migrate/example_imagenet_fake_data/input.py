"""ImageNet on fake data, the shape of pytorch/xla's test/test_train_mp_imagenet.py.

A tiny two-block CNN stands in for ResNet-50 and one synthetic batch stands in for
the dataset. Flags from argparse, SampleGenerator, MpDeviceLoader, a RateTracker
with progress printed from step closures by test_utils, a StepLR schedule, an
accuracy pass reduced with mesh_reduce(np.mean), and xmp.spawn on every device.
"""
import argparse
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
import torch_xla.test.test_utils as test_utils
import torch_xla.utils.utils as xu

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
  test_utils.print_training_update(
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
  train_loader = xu.SampleGenerator(
      data=(images, labels),
      sample_count=flags.train_dataset_len // flags.batch_size // xr.world_size())
  test_loader = xu.SampleGenerator(
      data=(images[:flags.test_set_batch_size], labels[:flags.test_set_batch_size]),
      sample_count=2)

  device = xm.xla_device()
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
    tracker = xm.RateTracker()
    model.train()
    for step, (data, target) in enumerate(loader):
      optimizer.zero_grad()
      output = model(data)
      loss = loss_fn(output, target)
      loss.backward()
      xm.optimizer_step(optimizer)
      tracker.add(flags.batch_size)
      if step % flags.log_steps == 0:
        xm.add_step_closure(
            _train_update, args=(device, step, loss, tracker, epoch))

  def test_loop_fn(loader, epoch):
    total_samples, correct = 0, 0
    model.eval()
    step = 0
    for step, (data, target) in enumerate(loader):
      output = model(data)
      pred = output.max(1, keepdim=True)[1]
      correct += pred.eq(target.view_as(pred)).sum()
      total_samples += data.size()[0]
    accuracy = 100.0 * correct.item() / total_samples
    accuracy = xm.mesh_reduce('test_accuracy', accuracy, np.mean)
    test_utils.print_test_update(device, accuracy, epoch, step)
    return accuracy

  train_device_loader = pl.MpDeviceLoader(train_loader, device)
  test_device_loader = pl.MpDeviceLoader(test_loader, device)
  accuracy, max_accuracy = 0.0, 0.0
  for epoch in range(1, flags.num_epochs + 1):
    xm.master_print('Epoch {} train begin, lr={:.6f}'.format(
        epoch, lr_scheduler.get_last_lr()[0]))
    train_loop_fn(train_device_loader, epoch)
    xm.master_print('Epoch {} train end'.format(epoch))
    accuracy = test_loop_fn(test_device_loader, epoch)
    xm.master_print('Epoch {} test end, Accuracy={:.2f}'.format(epoch, accuracy))
    max_accuracy = max(accuracy, max_accuracy)
    lr_scheduler.step()

  xm.master_print('Max Accuracy: {:.2f}%'.format(max_accuracy))
  checksum = sum(p.detach().norm().item() for p in model.parameters())
  print('rank {} of {} checksum={:.6f}'.format(
      xr.global_ordinal(), xr.world_size(), checksum))
  return max_accuracy


def _mp_fn(index, flags):
  torch.set_default_dtype(torch.float32)
  accuracy = train_imagenet(flags)
  if accuracy < 0.0:
    print('Accuracy {} is negative'.format(accuracy))
    sys.exit(21)


if __name__ == '__main__':
  FLAGS = parse_flags(sys.argv[1:])
  xmp.spawn(_mp_fn, args=(FLAGS,))
