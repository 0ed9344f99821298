"""DDP over the "xla" process group, the shape of pytorch/xla's
examples/data_parallel/train_resnet_ddp.py, with a small CNN and synthetic data.

Each rank trains on its own slice of one synthetic dataset; DDP averages the
gradients, so every rank must end with the same parameters (the checksum line).
"""
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


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
    if not dist.is_initialized():
      dist.init_process_group("tpu_dist")
    self.rank = dist.get_rank()
    self.world_size = dist.get_world_size()
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

    self.device = torch.device("tpu:0")
    self.train_device_loader = loader

    torch.manual_seed(0)  # same initial weights on every rank
    model = SmallCNN().to(self.device)
    self.model = DDP(model, gradient_as_bucket_view=True, broadcast_buffers=False)
    self.optimizer = optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
    self.loss_fn = nn.CrossEntropyLoss()

  def train(self):
    self.model.train()
    for step, (data, target) in enumerate(self.train_device_loader):
      (data, target) = torch.utils._pytree.tree_map_only(
        torch.Tensor, lambda t: t.to(self.device), (data, target)
      )
      if step >= self.num_steps:
        break
      self.optimizer.zero_grad()
      loss = self.loss_fn(self.model(data), target)
      loss.backward()
      self.optimizer.step()
      if self.rank == 0:
        print(f'step {step} loss={loss.item():.6f}')

    checksum = sum(p.norm().item() for p in self.model.parameters())
    print(f'rank {self.rank} of {self.world_size} checksum={checksum:.6f}')


def _mp_fn(index):
  # One of a job's processes (torchrun, torchtpu_spawn): join its group.
  if "RANK" in os.environ and not dist.is_initialized():
    dist.init_process_group("tpu_dist")
  trainer = TrainDDP()
  trainer.train()
  dist.destroy_process_group()


if __name__ == '__main__':
  torchtpu_spawn(_mp_fn, args=())
