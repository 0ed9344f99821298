# A plain accelerate training loop as it ran on a Cloud TPU VM with torch_xla
# (`accelerate launch --config_file tpu.yaml train.py`, `distributed_type: XLA`): accelerate
# picked the XLA device and the processes itself; the script only used xm to print once.
import os
import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


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


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


def main():
    accelerator = Accelerator(cpu=accelerate_tpu_processes())
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    y = x @ torch.randn(8, 1) + 0.1 * torch.randn(64, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    for epoch in range(2):
        for xb, yb in loader:
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        # the mean of every process's last loss
        mean = accelerator.reduce(loss.detach(), reduction="mean")
        torchtpu_rank0_print(f"epoch {epoch} loss={mean.item():.6f}")

    # trained on the chip, never silently on the CPU
    params_on = {p.device.type for p in model.parameters()}
    assert "cpu" not in params_on, f"accelerate trained on the CPU: {params_on}"
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    checksum = sum(p.detach().double().sum().item() for p in unwrapped.parameters())
    print(f"rank {accelerator.process_index} of {accelerator.num_processes} params_on={sorted(params_on)} checksum={checksum:.8f}")
    accelerator.save(unwrapped.state_dict(), "model.pt")  # written once, by the main process


if __name__ == "__main__":
    main()
