"""Multi-core MNIST-style training with xmp.spawn (classic PyTorch/XLA recipe)."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
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


def torchtpu_save(data, path):
    """`torch.save` of `data` with its tensors on the CPU (loads without a chip)."""
    cpu = torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.cpu, data)
    torch.save(cpu, path)


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


FLAGS = {
    "batch_size": 64,
    "num_epochs": 2,
    "lr": 0.01,
    "num_cores": 8,
}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def _mp_fn(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    torch.manual_seed(1)
    dataset = TensorDataset(torch.randn(512, 1, 28, 28), torch.randint(0, 10, (512,)))
    sampler = DistributedSampler(
        dataset,
        num_replicas=dist.get_world_size(),
        rank=dist.get_rank(),
        shuffle=True,
    )
    loader = DataLoader(dataset, batch_size=flags["batch_size"], sampler=sampler, num_workers=2)

    device = torch.device("tpu:0")
    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=flags["lr"] * dist.get_world_size(), momentum=0.5)

    for epoch in range(flags["num_epochs"]):
        para_loader = loader
        model.train()
        for step, (data, target) in enumerate(para_loader):
            (data, target) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (data, target))
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            torchtpu_optimizer_step(optimizer)
            if step % 2 == 0:
                torchtpu_rank0_print(f"[{epoch}] step {step} loss={loss.item():.6f}")
        dist.barrier()

    checksum = sum(p.norm().item() for p in model.parameters())  # a norm: a signed sum cancels and magnifies rounding
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} checksum={checksum:.6f}")
    # every rank calls xm.save (it synchronises the ranks); only the master writes
    if dist.get_node_local_rank(fallback_rank=0) == 0:
        torchtpu_save(model.state_dict(), "mnist.pt")
    if dist.is_initialized():
        dist.barrier()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_cores", type=int, default=FLAGS["num_cores"])
    FLAGS["num_cores"] = parser.parse_args().num_cores
    torchtpu_spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS["num_cores"], start_method="fork")
