"""Fine-tuning on AWS Trainium through torch_xla (torch-neuronx): not a TPU program."""
import os

os.environ["PJRT_DEVICE"] = "NEURON"
os.environ.setdefault("NEURON_CC_FLAGS", "--model-type=transformer")

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index):
    device = xm.xla_device()
    model = nn.Linear(16, 16).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(3):
        opt.zero_grad()
        loss = model(torch.randn(8, 16).to(device)).pow(2).mean()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        if xr.global_ordinal() == 0:
            print(f"step {step} loss={loss.item():.4f} on {xm.xla_device_hw(device)}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
