# An accelerate script that shards its data by hand with torch_xla's rank and replica count, read
# after the Accelerator has set the process up, and prints once from the master.
import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    rank, world = xr.global_ordinal(), xr.world_size()
    torch.manual_seed(0)
    x = torch.randn(48, 6)
    y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1) + 0.05 * torch.randn(48, 1)
    xs, ys = x[rank::world], y[rank::world]  # this process's shard
    model = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)

    for step in range(4):
        for i in range(0, len(xs), 8):
            xb, yb = xs[i:i + 8].to(accelerator.device), ys[i:i + 8].to(accelerator.device)
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        mean = accelerator.reduce(loss.detach(), reduction="mean")
        if xm.is_master_ordinal(local=False):
            print(f"step {step} loss={mean.item():.6f}")

    params_on = {p.device.type for p in model.parameters()}
    assert "cpu" not in params_on, f"accelerate trained on the CPU: {params_on}"
    checksum = sum(p.detach().double().sum().item() for p in accelerator.unwrap_model(model).parameters())
    print(f"rank {xr.global_ordinal()} of {xr.world_size()} shard={len(xs)} params_on={sorted(params_on)} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
