# Fine-tune a ResNet-ish conv net on fake CIFAR batches, torch_xla 2.5+ style.
import torch
import torch.nn as nn
import torch_xla


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


def train(num_steps: int = 50) -> float:
    torch.manual_seed(0)  # weights and fake batches drawn on the CPU
    device = torch_xla.device()
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    total = torch.zeros((), device=device)
    for i in range(num_steps):
        images = torch.randn(32, 3, 32, 32).to(device)
        labels = torch.randint(0, 10, (32,)).to(device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        total += loss.detach()
        torch_xla.sync()

    torch_xla.sync(wait=True)  # block until the last step has finished
    return (total / num_steps).item()


if __name__ == "__main__":
    print(f"mean loss {train(num_steps=4):.6f}")
