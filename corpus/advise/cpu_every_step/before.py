# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(6, 32, 16, device="tpu")
y = torch.randint(0, 4, (6, 32), device="tpu")
predictions = []
for step in range(6):
    logits = model(x[step])
    loss = torch.nn.functional.cross_entropy(logits, y[step])
    opt.zero_grad()
    loss.backward()
    opt.step()
    predictions.append(logits.argmax(-1).cpu())  # advise: host_sync
print("predicted class counts", torch.bincount(torch.cat(predictions), minlength=4).tolist())
