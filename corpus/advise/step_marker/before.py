# advise-args: --step-marker train_step
# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
w = torch.randn(16, 4, device="tpu", requires_grad=True)
x = torch.randn(6, 32, 16, device="tpu")
y = torch.randn(6, 32, 4, device="tpu")


def train_step(xb, yb):
    # A hand-written update: no torch.optim optimizer marks the steps.
    loss = ((xb @ w - yb) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
        w.grad.zero_()
    return loss.item()  # advise: host_sync


for step in range(6):
    print(f"step {step} loss {train_step(x[step], y[step]):.4f}")
