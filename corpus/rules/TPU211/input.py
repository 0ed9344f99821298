# TPU211 device-loader: reported only
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

loader = torch.utils.data.DataLoader(list(range(8)), batch_size=2)
device = xm.xla_device()
for batch in pl.MpDeviceLoader(loader, device):
    print(batch)
for batch in pl.ParallelLoader(loader, [device]).per_device_loader(device):
    print(batch)
