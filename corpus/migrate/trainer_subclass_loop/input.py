# A trainer class whose subclass owns the loop (issue 43 item 11): the base class builds the
# device loader and keeps it in `self.loader`; the project's trainer subclasses it and overrides
# the training loop, which iterates `self.loader`. Both loops must get their batches on the chip.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class BaseTrainer:
    def __init__(self, epochs):
        self.device = xm.xla_device()
        self.epochs = epochs
        torch.manual_seed(0)
        features = torch.randn(64, 8)
        labels = (features[:, 0] + features[:, 1] > 0).long()
        dataset = TensorDataset(features, labels)
        sampler = DistributedSampler(
            dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=False
        )
        self.loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=8, sampler=sampler), self.device)
        self.model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.2)

    def train_epoch(self, epoch):
        for features, labels in self.loader:
            self.optimizer.zero_grad()
            nn.functional.cross_entropy(self.model(features), labels).backward()
            xm.optimizer_step(self.optimizer)

    def fit(self):
        for epoch in range(self.epochs):
            self.train_epoch(epoch)
        checksum = sum(p.sum().item() for p in self.model.parameters())
        print(f"rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}")


class ClassifierTrainer(BaseTrainer):
    """The project's trainer: its own loop, with logging and accuracy."""

    def train_epoch(self, epoch):
        self.model.train()
        correct = total = 0
        for step, (features, labels) in enumerate(self.loader):
            self.optimizer.zero_grad()
            logits = self.model(features)
            loss = nn.functional.cross_entropy(logits, labels)
            loss.backward()
            xm.optimizer_step(self.optimizer)
            correct += (logits.argmax(dim=1) == labels).sum().item()
            total += labels.numel()
            if step % 2 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss={loss.item():.6f}")
        xm.master_print(f"epoch {epoch} accuracy={correct / total:.6f}")


def _mp_fn(index):
    ClassifierTrainer(epochs=2).fit()


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
