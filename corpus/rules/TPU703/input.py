# TPU703 grad-scaler: reported only
import torch

scaler = torch.cuda.amp.GradScaler()
scaler2 = torch.amp.GradScaler("tpu")
