"""MNIST on fake data, the shape of pytorch/xla's test_train_mp_mnist.py.

Flags from argparse, a SampleGenerator of one synthetic batch, MpDeviceLoader,
xm.optimizer_step, an accuracy pass reduced with mesh_reduce, and xmp.spawn on
every device.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
import torch_xla.utils.utils as xu


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
    train_loader = xu.SampleGenerator(data=(images, labels), sample_count=8 // xr.world_size())
    test_loader = xu.SampleGenerator(data=(images, labels), sample_count=2)

    device = xm.xla_device()
    model = MNIST().to(device)
    optimizer = optim.SGD(model.parameters(), lr=flags.lr * xr.world_size(), momentum=flags.momentum)
    loss_fn = nn.NLLLoss()

    def train_loop_fn(loader, epoch):
        model.train()
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            output = model(data)
            loss = loss_fn(output, target)
            loss.backward()
            xm.optimizer_step(optimizer)
            if step % 4 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss={loss.item():.6f}")

    def test_loop_fn(loader):
        total_samples = 0
        correct = 0
        model.eval()
        for data, target in loader:
            output = model(data)
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum()
            total_samples += data.size()[0]
        accuracy = 100.0 * correct.item() / total_samples
        return xm.mesh_reduce("test_accuracy", accuracy, lambda xs: sum(xs) / len(xs))

    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    test_device_loader = pl.MpDeviceLoader(test_loader, device)
    accuracy = 0.0
    for epoch in range(1, flags.num_epochs + 1):
        train_loop_fn(train_device_loader, epoch)
        accuracy = test_loop_fn(test_device_loader)
        xm.master_print(f"epoch {epoch} test accuracy={accuracy:.2f}")
    checksum = sum(p.norm().item() for p in model.parameters())
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} checksum={checksum:.6f}")
    return accuracy


def _mp_fn(index, flags):
    torch.set_default_dtype(torch.float32)
    train_mnist(flags)


if __name__ == "__main__":
    FLAGS = parse_flags()
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS.num_cores)
