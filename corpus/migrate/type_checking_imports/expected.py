from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch

if TYPE_CHECKING:
    import torch_xla.distributed.parallel_loader as pl


def to_device_iter(loader, device: torch.device) -> "pl.MpDeviceLoader":
    import torch_xla.distributed.parallel_loader as pl

    return pl.MpDeviceLoader(loader, device)


def count_batches(loader: Optional[pl.MpDeviceLoader]) -> int:
    return 0 if loader is None else len(loader)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(12, 3)), batch_size=4)
    batches = to_device_iter(data, torch.device("tpu"))
    print(count_batches(None), count_batches(batches))
    for (x,) in batches:
        print(x.device, f"{x.sum().item():.6f}")
