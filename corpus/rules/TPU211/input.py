# TPU211 device-loader
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2)
device = xm.xla_device()
for batch in pl.MpDeviceLoader(loader, device):
    print(batch)
for step, (x, y) in enumerate(pl.ParallelLoader(loader, [device]).per_device_loader(device)):
    print(step, x, y)


def train(model, loader, device):
    train_loader = pl.MpDeviceLoader(loader, device, loader_prefetch_size=32)
    print(len(train_loader), "batches")
    for epoch in range(2):
        for x, y in train_loader:
            model(x).sum().backward()


def evaluate(model, loader, device):
    para_loader = pl.ParallelLoader(loader, [device])
    for batch in para_loader.per_device_loader(device):
        model(batch)


def make(loader, device):
    return pl.MpDeviceLoader(loader, device)  # returned: its loops are elsewhere, a loader that goes along


def sharded(loader, device, sharding):
    for batch in pl.MpDeviceLoader(loader, device, input_sharding=sharding):  # SPMD input sharding: converted
        print(batch)
    for batch in pl.ParallelLoader(loader, [device], input_sharding=sharding).per_device_loader(device):  # reported
        print(batch)


class Trainer:
    def __init__(self, loader):
        self.device = xm.xla_device()
        self.train_loader = pl.MpDeviceLoader(loader, self.device)  # iterated by another method: converted

    def epoch(self):
        for step, (x, y) in enumerate(self.train_loader):
            print(step, x.sum(), y.sum())


class Evaluator:
    def __init__(self, loader):
        self.device = xm.xla_device()
        self.eval_loader = pl.MpDeviceLoader(loader, self.device)  # handed out below: a loader that goes along

    def loader(self):
        return self.eval_loader
