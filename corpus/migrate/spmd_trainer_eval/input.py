# An SPMD trainer that evaluates (issue 43): a small CNN with BatchNorm trained on a batch
# sharded over the "data" axis, the per-step losses logged before backward, then an eval pass
# that sums the loss, counts correct predictions over `y.size(0)` samples and keeps every
# prediction. Under torch_xla every number is the global batch's.
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr


class SmallCNN(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.view(x.size(0), -1))


class Trainer:
    def __init__(self, batch_size):
        self.device = xm.xla_device()
        n = xr.global_runtime_device_count()
        self.mesh = xs.Mesh(np.arange(n), (n, 1), ("data", "model"))
        self.batch_size = batch_size
        torch.manual_seed(0)
        self.model = SmallCNN().to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        g = torch.Generator().manual_seed(7)
        self.images = torch.randn(48, 1, 8, 8, generator=g)
        self.labels = torch.randint(0, 3, (48,), generator=g)

    def batch(self, start):
        x = self.images[start:start + self.batch_size].to(self.device)
        y = self.labels[start:start + self.batch_size].to(self.device)
        xs.mark_sharding(x, self.mesh, ("data", None, None, None))
        xs.mark_sharding(y, self.mesh, ("data",))
        return x, y

    def train(self, steps):
        self.model.train()
        history = []
        for step in range(steps):
            x, y = self.batch(step * self.batch_size)
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(x), y)
            history.append(loss.item())
            loss.backward()
            self.optimizer.step()
            xm.mark_step()
            print(f"step {step} loss {history[-1]:.6f} on {x.shape[0]} images")
        print(f"mean training loss {sum(history) / len(history):.6f}")

    @torch.no_grad()
    def evaluate(self, starts):
        self.model.eval()
        loss_sum, correct, total, predictions = 0.0, 0, 0, []
        for start in starts:
            x, y = self.batch(start)
            logits = self.model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            predicted = logits.argmax(dim=1)
            correct += (predicted == y).sum().item()
            total += y.size(0)
            predictions.append(predicted)
        predictions = torch.cat(predictions)
        print(f"eval loss {loss_sum / total:.6f} accuracy {100.0 * correct / total:.2f}% ({correct}/{total})")
        print("predictions", predictions.cpu().tolist())
        print("running mean", " ".join(f"{v:.6f}" for v in self.model.bn.running_mean.cpu().tolist()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    xr.use_spmd()
    trainer = Trainer(args.batch_size)
    trainer.train(args.steps)
    trainer.evaluate([32, 40])


if __name__ == "__main__":
    main()
