from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import torch


class torchtpu_device_loader:
    """What `MpDeviceLoader(loader, device)` becomes: the loader's batches with every tensor
    moved to `device` (then passed through `sharding`, this process's slice of the global
    batch, when given), without background prefetching."""

    def __init__(self, loader, device, sharding=None):
        self.loader, self.device, self.sharding = loader, device, sharding

    def __iter__(self):
        for batch in self.loader:
            yield torch.utils._pytree.tree_map_only(torch.Tensor, self.move, batch)

    def __len__(self):
        return len(self.loader)

    def move(self, tensor):
        tensor = tensor.to(self.device)
        return tensor if self.sharding is None else self.sharding(tensor)


if TYPE_CHECKING:
    import torch_xla.distributed.parallel_loader as pl


def to_device_iter(loader, device: torch.device) -> "pl.MpDeviceLoader":
    return torchtpu_device_loader(loader, device)


def count_batches(loader: Optional[pl.MpDeviceLoader]) -> int:
    return 0 if loader is None else len(loader)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(12, 3)), batch_size=4)
    batches = to_device_iter(data, torch.device("tpu"))
    print(count_batches(None), count_batches(batches))
    for (x,) in batches:
        print(x.device, f"{x.sum().item():.6f}")
