# -*- coding: utf-8 -*-
# Entraînement sur TPU — script avec BOM
import os
import torch
import torch.distributed as dist

torch.manual_seed(0)  # graine fixe : poids et données identiques partout
appareil = torch.device("tpu:0")  # « le TPU »
modèle = torch.nn.Linear(16, 16).to(appareil)
sortie = modèle(torch.randn(4, 16).to(appareil))  # données tirées sur le CPU
print(f"résultat : {sortie.sum().item():.6f}")
if (dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))) == 0:
    print("terminé ✓")
