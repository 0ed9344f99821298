import torch
dev = torch.device("tpu:0"); x = torch.ones(3, device=dev)
for i in range(3): x = x * 2
y = x + 1; print(y.cpu())
