# -*- coding: utf-8 -*-
# Entraînement sur TPU — script avec BOM
import torch
import torch_xla
import torch_xla.core.xla_model as xm

appareil = torch_xla.device()  # « le TPU »
modèle = torch.nn.Linear(16, 16).to(appareil)
sortie = modèle(torch.randn(4, 16, device=appareil))
torch_xla.sync()
print("résultat :", sortie.sum().item())
xm.master_print("terminé ✓")
