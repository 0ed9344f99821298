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
