"""DDP over the "xla" process group, the shape of pytorch/xla's
examples/data_parallel/train_resnet_ddp.py, with a small CNN and synthetic data.

Each rank trains on its own slice of one synthetic dataset; DDP averages the
gradients, so every rank must end with the same parameters (the checksum line).
"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # registers the "xla" backend
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


class SmallCNN(nn.Module):

  def __init__(self, num_classes=4):
    super().__init__()
    self.features = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
    )
    self.classifier = nn.Linear(16, num_classes)

  def forward(self, x):
    x = self.features(x).mean(dim=(2, 3))
    return self.classifier(x)


class TrainDDP:

  def __init__(self, batch_size=4, num_steps=4):
    dist.init_process_group('xla', init_method='xla://')
    self.rank = xr.global_ordinal()
    self.world_size = xr.world_size()
    self.batch_size = batch_size
    self.num_steps = num_steps

    g = torch.Generator().manual_seed(1234)
    n = batch_size * num_steps * 2
    dataset = TensorDataset(
        torch.randn(n, 3, 8, 8, generator=g),
        torch.randint(0, 4, (n,), generator=g))
    sampler = DistributedSampler(
        dataset, num_replicas=self.world_size, rank=self.rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                        drop_last=True)

    self.device = xm.xla_device()
    self.train_device_loader = pl.MpDeviceLoader(loader, self.device)

    torch.manual_seed(0)  # same initial weights on every rank
    model = SmallCNN().to(self.device)
    self.model = DDP(model, gradient_as_bucket_view=True, broadcast_buffers=False)
    self.optimizer = optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
    self.loss_fn = nn.CrossEntropyLoss()

  def train(self):
    self.model.train()
    for step, (data, target) in enumerate(self.train_device_loader):
      if step >= self.num_steps:
        break
      self.optimizer.zero_grad()
      loss = self.loss_fn(self.model(data), target)
      loss.backward()
      self.optimizer.step()
      xm.mark_step()
      if self.rank == 0:
        print(f'step {step} loss={loss.item():.6f}')

    checksum = sum(p.norm().item() for p in self.model.parameters())
    print(f'rank {self.rank} of {self.world_size} checksum={checksum:.6f}')


def _mp_fn(index):
  trainer = TrainDDP()
  trainer.train()
  dist.destroy_process_group()


if __name__ == '__main__':
  xmp.spawn(_mp_fn, args=())
