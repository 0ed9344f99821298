# -*- coding: utf-8 -*-
# Entraînement sur TPU — script avec BOM
import os
import torch
import torch.distributed as dist


def torchtpu_rank():
    """This process's rank: the process group's, else torchrun's `RANK` (0 in a single process)."""
    if dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


def torchtpu_rank0_print(*args, **kwargs):
    """`print(*args, **kwargs)` on rank 0 only; every rank has evaluated the arguments."""
    if torchtpu_rank() == 0:
        print(*args, **kwargs)


torch.manual_seed(0)  # graine fixe : poids et données identiques partout
appareil = torch.device("tpu:0")  # « le TPU »
modèle = torch.nn.Linear(16, 16).to(appareil)
sortie = modèle(torch.randn(4, 16).to(appareil))  # données tirées sur le CPU
print(f"résultat : {sortie.sum().item():.6f}")
torchtpu_rank0_print("terminé ✓")
