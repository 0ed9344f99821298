"""Run a model through the three recorded phases and pick a training loss."""

from __future__ import annotations

import contextlib

import torch
from torch.utils._pytree import tree_flatten

from .recorder import OpRecorder


def _flat_tensors(out):
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    elif isinstance(out, dict):
        out = list(out.values())
    flat, _ = tree_flatten(out)
    res = []
    for x in flat:
        if isinstance(x, torch.Tensor):
            res.append(x)
        elif hasattr(x, "to_tuple"):
            res.extend(_flat_tensors(x))
    return res


def model_loss(out):
    """The model's own loss if it returned one that needs grad, else None."""
    loss = getattr(out, "loss", None)
    if loss is None and isinstance(out, dict):
        loss = out.get("loss")
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss
    return None


def generic_loss(out):
    """Sum of all differentiable float outputs (computed outside the recorder)."""
    parts = [t for t in _flat_tensors(out) if t.is_floating_point() and t.requires_grad]
    if not parts:
        return None
    total = parts[0].float().sum()
    for t in parts[1:]:
        total = total + t.float().sum()
    return total


# Context factory around the forward passes (inference and training forward, including the
# loss); backward runs outside it. `trace --precision bf16` sets autocast_tpu.autocast.
FORWARD_CONTEXT = contextlib.nullcontext


# `execute` (execute.py) sets EXECUTOR: run_phases then runs the model on the CPU and on the
# emulated TorchTPU instead of recording; ATTEMPT names the attempt ("tiny/cpu") it belongs to.
EXECUTOR = None
ATTEMPT = ""


def on_model_device(model, tree):
    """``tree``'s CPU tensors moved to the device of ``model``'s parameters: for harness calls
    that are not module calls (a VLM's ``get_image_features``)."""
    param = next(iter(model.parameters()), None)
    if param is None or param.device.type == "cpu":
        return tree
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.to(param.device) if isinstance(x, torch.Tensor) and x.device.type == "cpu" else x, tree)


class PhaseError(Exception):
    def __init__(self, phase: str, err: BaseException):
        super().__init__(f"{phase}: {type(err).__name__}: {err}")
        self.phase = phase
        self.err = err


def run_phases(model, call, recorder: OpRecorder, env=contextlib.nullcontext, train=True):
    """Inference (eval, no_grad), then train forward + backward.

    ``call(model, training: bool)`` runs one forward and returns its output.
    Ops go into ``recorder``; raises PhaseError naming the failed phase. Returns the
    list of notes (e.g. that a generic loss was used).
    """
    if EXECUTOR is not None:
        return EXECUTOR(model, call, train)
    notes = []
    model.eval()
    recorder.phase = "inference"
    try:
        with FORWARD_CONTEXT(), torch.no_grad(), recorder:
            call(model, False)
    except Exception as e:  # noqa: BLE001
        raise PhaseError("inference", e) from e
    if not train:
        return notes
    model.train()
    recorder.phase = "forward"
    try:
        with FORWARD_CONTEXT(), recorder:
            out = call(model, True)
            loss = model_loss(out)
    except Exception as e:  # noqa: BLE001
        raise PhaseError("forward", e) from e
    if loss is None:
        loss = generic_loss(out)
        if loss is None:
            raise PhaseError("backward", RuntimeError("no differentiable float output"))
        notes.append("training loss: sum of float outputs")
    if loss.numel() != 1:
        loss = loss.float().sum()
        notes.append("training loss: sum of a non-scalar loss output")
    recorder.phase = "backward"
    try:
        with recorder:
            loss.backward()
    except Exception as e:  # noqa: BLE001
        raise PhaseError("backward", e) from e
    return notes


def make_env(kind: str):
    """Context factory for a tensor environment: cpu, fake or meta."""
    if kind == "cpu":
        return contextlib.nullcontext
    if kind == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)
        return lambda: mode
    if kind == "meta":
        return lambda: torch.device("meta")
    raise ValueError(kind)
