# TPU211 device-loader
import torch
import torch_xla.distributed.parallel_loader as pl


class torchtpu_device_loader:
    """What `MpDeviceLoader(loader, device)` becomes: the loader's batches with every tensor
    moved to `device` (then passed through `sharding`, this process's slice of the global
    batch, when given), without background prefetching."""

    def __init__(self, loader, device, sharding=None):
        self.loader, self.device, self.sharding = loader, device, sharding

    def __iter__(self):
        for batch in self.loader:
            yield torch.utils._pytree.tree_map_only(torch.Tensor, self.move, batch)

    def __len__(self):
        return len(self.loader)

    def move(self, tensor):
        tensor = tensor.to(self.device)
        return tensor if self.sharding is None else self.sharding(tensor)


loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2)
device = torch.device("tpu:0")
for batch in loader:
    batch = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), batch)
    print(batch)
for step, (x, y) in enumerate(loader):
    (x, y) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (x, y))
    print(step, x, y)


def train(model, loader, device):
    train_loader = loader
    print(len(train_loader), "batches")
    for epoch in range(2):
        for x, y in train_loader:
            x, y = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (x, y))
            model(x).sum().backward()


def evaluate(model, loader, device):
    para_loader = loader
    for batch in para_loader:
        batch = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), batch)
        model(batch)


def make(loader, device):
    return torchtpu_device_loader(loader, device)  # returned: its loops are elsewhere, a loader that goes along


def sharded(loader, device, sharding):
    for batch in torchtpu_device_loader(loader, device, sharding):  # SPMD input sharding: converted
        print(batch)
    for batch in pl.ParallelLoader(loader, [device], input_sharding=sharding).per_device_loader(device):  # reported
        print(batch)


class Trainer:
    def __init__(self, loader):
        self.device = torch.device("tpu:0")
        self.train_loader = loader  # iterated by another method: converted

    def epoch(self):
        for step, (x, y) in enumerate(self.train_loader):
            (x, y) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.device), (x, y))
            print(step, x.sum(), y.sum())


class Evaluator:
    def __init__(self, loader):
        self.device = torch.device("tpu:0")
        self.eval_loader = torchtpu_device_loader(loader, self.device)  # handed out below: a loader that goes along

    def loader(self):
        return self.eval_loader
