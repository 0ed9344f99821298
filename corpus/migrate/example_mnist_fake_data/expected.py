"""MNIST on fake data, the shape of pytorch/xla's test_train_mp_mnist.py.

Flags from argparse, a SampleGenerator of one synthetic batch, MpDeviceLoader,
xm.optimizer_step, an accuracy pass reduced with mesh_reduce, and xmp.spawn on
every device.
"""
import os
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def torchtpu_world_size():
    """The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process)."""
    if dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1"))


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


def parse_flags():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--num_cores", type=int, default=None)
    return parser.parse_args()


class MNIST(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.bn1 = nn.BatchNorm2d(10)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.bn2 = nn.BatchNorm2d(20)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = self.bn1(x)
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = self.bn2(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def train_mnist(flags):
    torch.manual_seed(1)
    images = torch.randn(flags.batch_size, 1, 28, 28)
    labels = torch.randint(0, 10, (flags.batch_size,))
    train_loader = [(images, labels)] * (8 // torchtpu_world_size())
    test_loader = [(images, labels)] * 2

    device = torch.device("tpu:0")
    model = MNIST().to(device)
    optimizer = optim.SGD(model.parameters(), lr=flags.lr * dist.get_world_size(), momentum=flags.momentum)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        model.train()
        for step, (data, target) in enumerate(loader):
            (data, target) = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (data, target))
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            torchtpu_optimizer_step(optimizer)
            if step % 4 == 0:
                torchtpu_rank0_print(f"epoch {epoch} step {step} loss={loss.item():.6f}")

    def test_loop_fn(loader):
        total_samples = 0
        correct = 0
        model.eval()
        for data, target in loader:
            data, target = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), (data, target))
            output = model(data)
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum()
            total_samples += data.size()[0]
        accuracy = 100.0 * correct.item() / total_samples
        return torchtpu_mesh_reduce(accuracy, lambda xs: sum(xs) / len(xs))

    train_device_loader = train_loader
    test_device_loader = test_loader
    accuracy = 0.0
    for epoch in range(1, flags.num_epochs + 1):
        train_loop_fn(train_device_loader, epoch)
        accuracy = test_loop_fn(test_device_loader)
        torchtpu_rank0_print(f"epoch {epoch} test accuracy={accuracy:.2f}")
    checksum = sum(p.norm().item() for p in model.parameters())
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} checksum={checksum:.6f}")
    return accuracy


def _mp_fn(index, flags):
    # One of a job's processes (torchrun, torchtpu_spawn): join its group.
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("tpu_dist")
    torch.set_default_dtype(torch.float32)
    train_mnist(flags)


if __name__ == "__main__":
    FLAGS = parse_flags()
    torchtpu_spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)
