# advise-args: --step-marker train_step
# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
w = torch.randn(16, 4, device="tpu", requires_grad=True)
x = torch.randn(6, 32, 16, device="tpu")
y = torch.randn(6, 32, 4, device="tpu")


def train_step(xb, yb):
    loss = ((xb @ w - yb) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
        w.grad.zero_()
    return loss.detach()  # stays on the chip


losses = [train_step(x[step], y[step]) for step in range(6)]
for step, value in enumerate(torch.stack(losses).tolist()):
    print(f"step {step} loss {value:.4f}")
