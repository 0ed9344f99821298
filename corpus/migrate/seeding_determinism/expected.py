import random

import numpy as np
import torch


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.tpu.manual_seed(seed)


def set_seed_new_api(seed: int) -> None:
    torch.tpu.manual_seed(seed)


if __name__ == "__main__":
    set_seed(0)
    # host generators: seeded identically on every backend
    print(f"{random.random():.6f} {np.random.rand():.6f} {torch.rand(1).item():.6f}")
    dev = torch.device("tpu:0")
    a = torch.rand(3, device=dev)
    set_seed_new_api(0)
    b = torch.rand(3, device=dev)
    print(torch.allclose(a.cpu(), b.cpu()))
