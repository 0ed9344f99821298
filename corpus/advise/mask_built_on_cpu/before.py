# advise-expect: eager_dispatch
import torch

torch.manual_seed(0)
n = 8
attn = torch.nn.MultiheadAttention(16, 2, batch_first=True).to("tpu")
head = torch.nn.Linear(16, 4).to("tpu")
opt = torch.optim.AdamW([*attn.parameters(), *head.parameters()], lr=1e-2)
x = torch.randn(6, 4, n, 16, device="tpu")
y = torch.randint(0, 4, (6, 4), device="tpu")
for step in range(6):
    causal = torch.ones(n, n, dtype=torch.bool).triu(1).to("tpu")  # advise: transfer
    h, _ = attn(x[step], x[step], x[step], attn_mask=causal)
    loss = torch.nn.functional.cross_entropy(head(h[:, -1]), y[step])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.4f}")
