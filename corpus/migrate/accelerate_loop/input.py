# A plain accelerate training loop as it ran on a Cloud TPU VM with torch_xla
# (`accelerate launch --config_file tpu.yaml train.py`, `distributed_type: XLA`): accelerate
# picked the XLA device and the processes itself; the script only used xm to print once.
import torch
import torch_xla.core.xla_model as xm
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def main():
    accelerator = Accelerator()
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
        xm.master_print(f"epoch {epoch} loss={mean.item():.6f}")

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
