# bf16 autocast training on a single TPU core (torch_xla.amp)
import torch
import torch.distributed as dist
import torch.nn as nn


def torchtpu_optimizer_step(optimizer):
    """Average the gradients over the process group (if any), then `optimizer.step()`."""
    if dist.is_initialized():
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= dist.get_world_size()
    return optimizer.step()


class Regressor(nn.Module):
    def __init__(self, d_in=32, d_hidden=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d_in, d_hidden), nn.GELU(),
            nn.Linear(d_hidden, d_hidden), nn.GELU(),
        )
        self.head = nn.Linear(d_hidden, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    device = torch.device("tpu:0")
    torch.manual_seed(7)
    data = torch.randn(3, 16, 32)          # 3 batches, built on the host
    target = data[:, :, :4].sum(dim=2, keepdim=True)  # y depends on the first 4 features

    model = Regressor().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    for step in range(3):
        x = data[step].to(device)
        y = target[step].to(device)
        optimizer.zero_grad()
        with torch.autocast("tpu", dtype=torch.bfloat16):
            out = model(x)
            loss = nn.functional.mse_loss(out.float(), y)
        loss.backward()
        torchtpu_optimizer_step(optimizer)
        print(f"step {step} loss={loss.item():.4f}")

    # weights stay fp32 under autocast
    print("param dtype:", next(model.parameters()).dtype)


if __name__ == "__main__":
    main()
