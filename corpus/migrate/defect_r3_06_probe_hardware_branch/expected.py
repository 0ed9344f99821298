"""A training script that runs with torch_xla when it is there, and on the CPU otherwise."""
import torch
import torch.nn as nn

try:
    import torch_tpu  # noqa: F401  (TorchTPU probe; was a torch_xla import)

    HAS_XLA = True
except ImportError:
    HAS_XLA = False


def setup_device():
    if not HAS_XLA:
        return torch.device("cpu"), torch.float32
    device = torch.device("tpu:0")
    # Neuron cores are fed bf16; TPUs and the CPU fallback train in fp32
    dtype = torch.bfloat16 if (torch.accelerator.current_accelerator() or torch.device("cpu")).type == "NEURON" else torch.float32
    if (torch.accelerator.current_accelerator() or torch.device("cpu")).type in ("GPU", "CUDA"):
        print("warning: torch_xla on a GPU is not tested")
    return device, dtype


def main():
    device, dtype = setup_device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device, dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x = torch.randn(32, 8).to(device, dtype)
    y = x.sum(dim=1, keepdim=True).tanh()
    for step in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss={loss.item():.6f} ({dtype}, {device.type})")


if __name__ == "__main__":
    main()
