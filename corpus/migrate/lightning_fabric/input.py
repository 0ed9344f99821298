# A Lightning Fabric loop as it ran on a Cloud TPU VM: `Fabric(accelerator="tpu", devices=8)`
# started one torch_xla process per core (`fabric.launch`), and Fabric's XLA strategy pointed the
# optimizer, built on the CPU parameters, at the ones on the device.
import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.1 * torch.randn(64, 1, generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)


def train(fabric):
    fabric.seed_everything(0, verbose=False)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(make_loader())
    trained_on = set()
    for epoch in range(2):
        total = 0.0
        for x, y in loader:
            trained_on.update(p.device.type for p in model.parameters())
            loss = torch.nn.functional.mse_loss(model(x), y)
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item()
        mean = fabric.all_reduce(torch.tensor(total / len(loader), device=fabric.device), reduce_op="mean")
        fabric.print(f"epoch {epoch} loss={mean.item():.6f}")
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    print(f"rank {fabric.global_rank} of {fabric.world_size} trained_on={sorted(trained_on)} checksum={checksum:.8f}")
    fabric.save("model.ckpt", {"model": model, "optimizer": optimizer})


if __name__ == "__main__":
    fabric = L.Fabric(accelerator="tpu", devices=8, precision="32-true")
    fabric.launch(train)
