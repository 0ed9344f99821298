# Fake-data ResNet training, the shape of pytorch/xla's examples/train_resnet_base.py
# (the newer API: torch_xla.device(), torch_xla.step(), torch_xla.launch).
# A three-block toy ResNet and one synthetic batch keep it to a few seconds on a CPU.
import itertools
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.utils.utils as xu
from torch_xla import runtime as xr


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
    train_loader = xu.SampleGenerator(
        data=(torch.randn(self.batch_size, 3, self.img_dim, self.img_dim),
              torch.randint(0, 10, (self.batch_size,), dtype=torch.int64)),
        sample_count=self.train_dataset_len // self.batch_size)

    self.device = torch_xla.device()
    self.train_device_loader = pl.MpDeviceLoader(train_loader, self.device)
    self.model = ToyResNet().to(self.device)
    self.optimizer = optim.SGD(
        self.model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    self.loss_fn = nn.CrossEntropyLoss()

  def _train_update(self, step, loss, tracker, epoch):
    print(f'epoch: {epoch}, step: {step}, loss: {loss.item():.6f}, '
          f'rate: {tracker.rate()}')

  def run_optimizer(self):
    xm.optimizer_step(self.optimizer)

  def train_loop_fn(self, loader, epoch):
    tracker = xm.RateTracker()
    self.model.train()
    loader = itertools.islice(loader, self.num_steps)
    for step, (data, target) in enumerate(loader):
      with torch_xla.step():
        self.optimizer.zero_grad()
        output = self.model(data)
        loss = self.loss_fn(output, target)
        loss.backward()
        self.run_optimizer()
        tracker.add(self.batch_size)
        if step % self.log_steps == 0:
          # runs when this step's graph has executed, at the end of the `with`
          xm.add_step_closure(self._train_update, args=(step, loss, tracker, epoch))

  def start_training(self):
    for epoch in range(1, self.num_epochs + 1):
      xm.master_print('Epoch {} train begin {}'.format(
          epoch, time.strftime('%l:%M%p %Z on %b %d, %Y')))
      self.train_loop_fn(self.train_device_loader, epoch)
      xm.master_print('Epoch {} train end {}'.format(
          epoch, time.strftime('%l:%M%p %Z on %b %d, %Y')))
    xm.wait_device_ops()
    checksum = sum(p.norm().item() for p in self.model.parameters())
    print(f'rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}')


def _mp_fn(index):
  base = TrainBase()
  base.start_training()


if __name__ == '__main__':
  torch_xla.launch(_mp_fn, args=())
