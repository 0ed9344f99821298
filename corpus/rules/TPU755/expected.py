import torch
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(100, 8), torch.randn(100, 1))
train_loader = DataLoader(data, batch_size=32, shuffle=True, drop_last=True)  # reported
eval_loader = DataLoader(data, 32, drop_last=True)  # reported
kept = DataLoader(data, batch_size=32, drop_last=True)  # not reported
whole = DataLoader(data, batch_size=None)  # no batching: not reported
custom = DataLoader(data, batch_sampler=[[0, 1], [2]])  # the sampler decides: not reported

step = torch.compile(torch.nn.Linear(8, 1), backend="tpu")
