# An accelerate script that shards its data by hand with torch_xla's rank and replica count, read
# after the Accelerator has set the process up, and prints once from the master.
import os
import torch
import torch.distributed as dist
from accelerate import Accelerator


def accelerate_tpu_processes():
    """True in one of several TorchTPU processes (torchrun, `accelerate launch`).

    accelerate has no multi-process type for the "tpu" device: each rank would train
    alone. Its multi-process CPU mode (`cpu=True`) shards the data and wraps DDP without
    device ids; ACCELERATE_TORCH_DEVICE keeps the device "tpu", and the process group it
    finds is TorchTPU's (gloo for the CPU tensors accelerate gathers).
    """
    if (
        int(os.environ.get("WORLD_SIZE", "1")) <= 1
        or not torch.accelerator.is_available()
    ):
        return False
    if torch.accelerator.current_accelerator().type != "tpu":
        return False
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # accelerate's multi-process CPU mode has no FSDP: it would silently use DDP.
        raise RuntimeError(
            "accelerate has no FSDP mode for TorchTPU: shard with torch.distributed.fsdp.fully_shard"
        )
    os.environ.setdefault("ACCELERATE_TORCH_DEVICE", "tpu")
    if not dist.is_initialized():
        dist.init_process_group("tpu:tpu_dist,cpu:gloo")
    return True


def main():
    accelerator = Accelerator(cpu=accelerate_tpu_processes())
    rank, world = accelerator.process_index, accelerator.num_processes
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
        if accelerator.process_index == 0:
            print(f"step {step} loss={mean.item():.6f}")

    params_on = {p.device.type for p in model.parameters()}
    assert "cpu" not in params_on, f"accelerate trained on the CPU: {params_on}"
    checksum = sum(p.detach().double().sum().item() for p in accelerator.unwrap_model(model).parameters())
    print(f"rank {accelerator.process_index} of {accelerator.num_processes} shard={len(xs)} params_on={sorted(params_on)} checksum={checksum:.8f}")


if __name__ == "__main__":
    main()
