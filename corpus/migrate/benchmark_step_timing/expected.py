"""Steps per second of a small conv net: warm-up, timed steps, and torch_xla's metrics."""
import argparse
import time

import torch
import torch.nn as nn


def build_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(8 * 16, 10)
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cache_dir", default="xla_cache")
    args = parser.parse_args()

    device = torch.device("tpu:0")
    torch.manual_seed(0)
    model = build_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.randn(4, 3, 16, 16).to(device)
    labels = torch.arange(4).to(device)

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()
        torch.accelerator.synchronize()

    start = time.perf_counter()
    for i in range(args.steps):
        loss = step()
        torch.accelerator.synchronize()
    elapsed = time.perf_counter() - start
    print(f"loss={loss.item():.6f} after {args.warmup + args.steps} steps")
    print(f"steps/s={args.steps / elapsed:.1f}")
    print(f"compilations={None} executions={None}")
    print("no XLA metrics on TorchTPU: profile with torch.profiler")


if __name__ == "__main__":
    main()
