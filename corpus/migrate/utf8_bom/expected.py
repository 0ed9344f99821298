# -*- coding: utf-8 -*-
# Entraînement sur TPU — script avec BOM
import os
import torch
import torch.distributed as dist

appareil = torch.device("tpu")  # « le TPU »
modèle = torch.nn.Linear(16, 16).to(appareil)
sortie = modèle(torch.randn(4, 16, device=appareil))
print("résultat :", sortie.sum().item())
if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
    print("terminé ✓")
