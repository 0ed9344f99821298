import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def run_epoch(model, loader, optimizer, device):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = nn.functional.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
            print(batch_idx, f"{loss.item():.6f}")


def main():
    torch.manual_seed(0)
    device = torch.device("tpu:0")
    ds = TensorDataset(torch.randn(256, 20), torch.randint(0, 4, (256,)))
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4), nn.LogSoftmax(dim=1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for epoch in range(3):
        run_epoch(model, loader, optimizer, device)
        # evaluation in a single step context
        model.eval()
        with torch.no_grad():
            acc = (model(ds.tensors[0][:128].to(device)).argmax(1) == ds.tensors[1][:128].to(device)).float().mean()
        print(f"epoch {epoch} acc={acc.item():.6f}")


main()
