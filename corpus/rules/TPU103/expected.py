# TPU103 device-kind
import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

kind = (torch.accelerator.current_accelerator() or torch.device("cpu")).type
hw = (torch.accelerator.current_accelerator() or torch.device("cpu")).type
if (torch.accelerator.current_accelerator() or torch.device("cpu")).type == "tpu":
    print("tpu")
acc = torch.accelerator.current_accelerator()  # already portable: untouched


def kind_through_a_variable(d):
    hw = (torch.accelerator.current_accelerator() or torch.device("cpu")).type  # carried over: its comparisons below
    print(f"hardware {hw}")
    return hw in ("tpu", "NEURON") or hw != 'cpu'


def kind_never_tpu(d):
    kind = (torch.accelerator.current_accelerator() or torch.device("cpu")).type  # converted: "GPU" stays, never the kind on TorchTPU (simply false)
    if (torch.accelerator.current_accelerator() or torch.device("cpu")).type == 'NEURON':
        return "neuron"
    return kind == "GPU"


def kind_unknown(d):
    kind = xm.xla_device_hw(d)  # reported: "XPU" is no kind torch_xla reported
    return kind == "XPU"


def kind_passed_on(d):
    kind = xr.device_type()  # reported: compared out of sight
    return configure(kind)


available = xr.device_type() is not None  # reported: the TorchTPU kind is never None
