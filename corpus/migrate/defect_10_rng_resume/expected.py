"""Resumable training: the CPU RNG state goes into the checkpoint, the XLA generator gets its seed back."""
import os
import argparse

import torch, torch.distributed as dist
import torch.nn as nn


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def train(model, opt, device, steps, start=0):
    for step in range(start, start + steps):
        x = torch.rand(8, 3)  # data augmentation noise drawn on the CPU
        y = x.sum(dim=1, keepdim=True)
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss={loss.item():.6f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device("tpu:0")
    model = nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, device, args.steps)

    # checkpoint: weights + CPU RNG state
    ckpt = {
        "model": {k: v.cpu() for k, v in model.state_dict().items()},
        "cpu_rng": torch.get_rng_state(),
        "seed": args.seed,
    }
    torch.save(ckpt, "ckpt.pt")
    print(f"saved at step {args.steps}, next cpu draw would be {torch.rand(1).item():.6f}")

    # ... later: resume
    ckpt = torch.load("ckpt.pt")
    model.load_state_dict(ckpt["model"])
    torch.set_rng_state(ckpt["cpu_rng"])
    torch.tpu.manual_seed(ckpt["seed"])  # the device generator only: the CPU stream continues where it was
    print("resumed cpu draws:", ", ".join(f"{v:.6f}" for v in torch.rand(3).tolist()))
    torch.set_rng_state(ckpt["cpu_rng"])
    torch.tpu.manual_seed(ckpt["seed"])
    train(model, opt, device, args.steps, start=args.steps)
    if torchtpu_rank() == 0:
        print(f"final weight={model.weight.sum().item():.6f} bias={model.bias.item():.6f}")


if __name__ == "__main__":
    main()
