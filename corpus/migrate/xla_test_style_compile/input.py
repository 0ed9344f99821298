"""A compiled MLP training step, tested the way pytorch/xla's own test scripts are."""
import argparse
import sys
import unittest

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.test.test_utils as test_utils

FLAGS = None


class MLP(nn.Module):
    def __init__(self, width=32, classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.Tanh(), nn.Linear(width, classes))

    def forward(self, x):
        return self.body(x)


def train(steps, batch_size):
    device = torch_xla.device()
    torch.manual_seed(7)
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def train_step(data, target):
        optimizer.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        optimizer.step()
        return loss

    # one graph per step, named in debug output
    compiled_step = torch_xla.compile(train_step, name="mlp_train_step")
    gen = torch.Generator().manual_seed(0)
    losses = []
    for step in range(steps):
        data = torch.randn(batch_size, 16, generator=gen).to(device)
        target = torch.randint(0, 4, (batch_size,), generator=gen).to(device)
        loss = compiled_step(data, target)
        losses.append(loss.item())
        print(f"[{test_utils.now()}] step={step} loss={losses[-1]:.6f}", flush=True)
    checksum = sum(p.detach().sum() for p in model.parameters())
    print(f"checksum={checksum.item():.6f} on {xm.xla_device_hw(device).lower()}", flush=True)
    return losses


class CompiledStepTest(unittest.TestCase):

    @test_utils.mp_test
    def test_loss_goes_down(self):
        losses = train(FLAGS.steps, FLAGS.batch_size)
        self.assertLess(losses[-1], losses[0])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=8)
    FLAGS, rest = parser.parse_known_args()
    # each test runs in a process of its own (mp_test): this one never touches the device
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
