"""Fine-tune a small classifier with SPMD data parallelism on a TPU VM.

One process drives every chip: the global batch is annotated on the mesh's "data" axis and the
partitioner splits it. Hyperparameters come from a JSON config; the launch script starts it.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/finetune.json")
    parser.add_argument("--max-steps", type=int, default=None)
    return parser.parse_args()


def build_model(hidden):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, hidden), nn.GELU(), nn.LayerNorm(hidden), nn.Linear(hidden, 4))


def main():
    args = parse_args()
    with open(args.config) as f:
        config = json.load(f)
    steps = args.max_steps or config["steps"]

    xr.use_spmd()
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices,), ("data",))
    device = xm.xla_device()

    model = build_model(config["hidden"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / config["warmup"]))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)

    g = torch.Generator().manual_seed(config["seed"])
    features = torch.randn(256, 32, generator=g)
    labels = (features[:, :4].argmax(dim=1) + (features[:, 4] > 1).long()) % 4
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(features, labels), batch_size=config["global_batch"], shuffle=True,
        drop_last=True, generator=torch.Generator().manual_seed(config["seed"]),
    )

    step = 0
    while step < steps:
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            xs.mark_sharding(x, mesh, ("data", None))
            xs.mark_sharding(y, mesh, ("data",))
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config["max_grad_norm"])
            optimizer.step()
            scheduler.step()
            xm.mark_step()
            print(f"step {step} loss {loss.item():.6f} lr {scheduler.get_last_lr()[0]:.6f}")
            step += 1
            if step == steps:
                break

    state = {k: v.cpu() for k, v in model.state_dict().items()}
    print(f"checksum={sum(v.double().sum().item() for v in state.values()):.6f}")
    torch.save(state, "finetuned.pt")


if __name__ == "__main__":
    main()
