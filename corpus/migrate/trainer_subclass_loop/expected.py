# A trainer class whose subclass owns the loop (issue 43 item 11): the base class builds the
# device loader and keeps it in `self.loader`; the project's trainer subclasses it and overrides
# the training loop, which iterates `self.loader`. Both loops must get their batches on the chip.
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def torchtpu_spawn(
    fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"
):
    """Run `fn(index, *args)` in one TorchTPU process per chip (every attached chip unless
    `nprocs` says; `nprocs=1` runs it here), each with torchrun's variables. This process's
    environment is left as it was: here the world is still one process."""
    parent_env = os.environ.copy()
    try:
        torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=nprocs)
        chips = os.environ["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        nodes = int(os.environ.get("NNODES", "1"))
        local = len(chips) // nodes
        os.environ.setdefault("MASTER_ADDR", "localhost")
        os.environ.setdefault("MASTER_PORT", "29500")
        os.environ["LOCAL_WORLD_SIZE"] = str(local)
        os.environ["WORLD_SIZE"] = str(nodes * local)
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
    os.environ["LOCAL_RANK"] = str(index)
    node = int(os.environ.get("NODE_RANK", "0"))
    os.environ["RANK"] = str(node * int(os.environ["LOCAL_WORLD_SIZE"]) + index)
    fn(index, *args)


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


class BaseTrainer:
    def __init__(self, epochs):
        self.device = torch.device("tpu:0")
        self.epochs = epochs
        torch.manual_seed(0)
        features = torch.randn(64, 8)
        labels = (features[:, 0] + features[:, 1] > 0).long()
        dataset = TensorDataset(features, labels)
        sampler = DistributedSampler(
            dataset, num_replicas=torchtpu_world_size(), rank=torchtpu_rank(), shuffle=False
        )
        self.loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        self.model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.2)

    def train_epoch(self, epoch):
        for features, labels in self.loader:
            features, labels = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.device), (features, labels))
            self.optimizer.zero_grad()
            nn.functional.cross_entropy(self.model(features), labels).backward()
            torchtpu_optimizer_step(self.optimizer)

    def fit(self):
        for epoch in range(self.epochs):
            self.train_epoch(epoch)
        checksum = sum(p.sum().item() for p in self.model.parameters())
        print(f"rank {torchtpu_rank()} of {torchtpu_world_size()} checksum={checksum:.6f}")


class ClassifierTrainer(BaseTrainer):
    """The project's trainer: its own loop, with logging and accuracy."""

    def train_epoch(self, epoch):
        self.model.train()
        correct = total = 0
        for step, (features, labels) in enumerate(self.loader):
            (features, labels) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.device), (features, labels))
            self.optimizer.zero_grad()
            logits = self.model(features)
            loss = nn.functional.cross_entropy(logits, labels)
            loss.backward()
            torchtpu_optimizer_step(self.optimizer)
            correct += (logits.argmax(dim=1) == labels).sum().item()
            total += labels.numel()
            if step % 2 == 0:
                torchtpu_rank0_print(f"epoch {epoch} step {step} loss={loss.item():.6f}")
        torchtpu_rank0_print(f"epoch {epoch} accuracy={correct / total:.6f}")


def _mp_fn(index):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    ClassifierTrainer(epochs=2).fit()


if __name__ == "__main__":
    torchtpu_spawn(_mp_fn, args=())
