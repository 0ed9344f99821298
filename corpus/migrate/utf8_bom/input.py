# -*- coding: utf-8 -*-
# Entraînement sur TPU — script avec BOM
import torch
import torch_xla
import torch_xla.core.xla_model as xm

torch.manual_seed(0)  # graine fixe : poids et données identiques partout
appareil = torch_xla.device()  # « le TPU »
modèle = torch.nn.Linear(16, 16).to(appareil)
sortie = modèle(torch.randn(4, 16).to(appareil))  # données tirées sur le CPU
torch_xla.sync()
print(f"résultat : {sortie.sum().item():.6f}")
xm.master_print("terminé ✓")
