# Fake-data classifier, multi-core by default; `--single_core` runs the worker directly in this
# process (the way to debug it with pdb: no subprocesses).
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


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


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--single_core", action="store_true")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=2)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def fake_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    return TensorDataset(x, (x[:, :4].argmax(dim=1)))


def train_loop(model, loader, optimizer, device):
    model.train()
    for data, target in loader:
        data, target = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (data, target))
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        torchtpu_optimizer_step(optimizer)
    return loss.item()


def test_loop(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (data, target))
            correct += model(data).argmax(dim=1).eq(target).sum().item()
            total += target.size(0)
    return torchtpu_mesh_reduce(correct / total, lambda xs: sum(xs) / len(xs))


def _mp_fn(index, args):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    torch.manual_seed(0)
    device = torch.device("tpu:0")
    world, rank = torchtpu_world_size(), torchtpu_rank()
    train, test = fake_data(128, 1), fake_data(64, 2)
    train_loader = DataLoader(train, batch_size=args.batch_size,
                              sampler=DistributedSampler(train, num_replicas=world, rank=rank, shuffle=False))
    test_loader = DataLoader(test, batch_size=args.batch_size,
                             sampler=DistributedSampler(test, num_replicas=world, rank=rank, shuffle=False))
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * world)
    for epoch in range(1, args.epochs + 1):
        loss = train_loop(model, train_loader, optimizer, device)
        accuracy = test_loop(model, test_loader, device)
        torchtpu_rank0_print(f"epoch {epoch} loss={loss:.6f} accuracy={accuracy:.6f}")
    print(f"[{index}] rank {rank} of {world}: final accuracy={accuracy:.6f}", flush=True)


if __name__ == "__main__":
    args = get_args()
    if args.single_core:
        _mp_fn(0, args)
    else:
        torchtpu_spawn(_mp_fn, args=(args,))
