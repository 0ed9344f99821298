"""Record the ATen operator overloads a piece of PyTorch code dispatches.

The recorder is a ``TorchDispatchMode``. It runs at the Python dispatch key, below
Autograd, so CompositeImplicitAutograd ops are already decomposed when they reach it.

Composite-explicit ops (a CompositeExplicitAutograd kernel and no CPU kernel, e.g.
``aten::embedding``) are recorded as themselves.  In addition, the ops that their
default kernel calls ("inner" ops) are captured by running that kernel a second time
under a nested recording mode: inside ``__torch_dispatch__`` our mode is popped, so we
push an ``_InnerRecorder`` and call ``func._op_dk(DispatchKey.CompositeExplicitAutograd,
...)``, which invokes the composite kernel directly; the ops it calls go through the
dispatcher again and reach the nested mode (and, below it, FakeTensorMode if active).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

PHASES = ("inference", "forward", "backward")

# Ops that copy a value to the host (a device->host sync on an accelerator).
HOST_SYNC_OPS = frozenset(
    {"aten::_local_scalar_dense", "aten::item", "aten::is_nonzero", "aten::equal"}
)

# Ops whose output shape depends on tensor data.
DYNAMIC_SHAPE_OPS = frozenset(
    {
        "aten::nonzero",
        "aten::argwhere",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::unique_dim_consecutive",
        "aten::repeat_interleave.Tensor",
        "aten::repeat_interleave.self_Tensor",
        "aten::bincount",
        "aten::_ctc_loss",  # target lengths read on host
        "aten::_nested_tensor_from_mask",
    }
)

# Device-specific kernels -> device-neutral requirement.
_EXACT_NEUTRAL = {
    "aten::mkldnn_rnn_layer": "rnn",
    "aten::mkldnn_rnn_layer_backward": "rnn_backward",
    "aten::_weight_int4pack_mm_for_cpu": "weight_int4pack_mm",
    "aten::_convert_weight_to_int4pack_for_cpu": "convert_weight_to_int4pack",
    "aten::_dyn_quant_matmul_4bit": "weight_int4pack_mm",
}


def neutral_name(op: str) -> str | None:
    """Device-neutral name of a device-specific op, or None for a portable op."""
    if op in _EXACT_NEUTRAL:
        return _EXACT_NEUTRAL[op]
    base = op.split(".", 1)[0]
    if base.startswith("aten::_scaled_dot_product_") or base in (
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_forward",
        "aten::_flash_attention_backward",
        "aten::_efficient_attention_backward",
    ):
        return "sdpa_backward" if base.endswith("_backward") else "sdpa"
    short = base[len("aten::"):] if base.startswith("aten::") else base
    if short.startswith("mkldnn_") or short.startswith("_mkldnn_"):
        rest = short.split("mkldnn_", 1)[1]
        return rest
    if "_for_cpu" in short:
        return short.replace("_for_cpu", "").lstrip("_")
    if short.startswith("_nnpack_") or short.startswith("_slow_conv") or short.startswith("slow_conv"):
        return "convolution_backward" if short.endswith("_backward") else "convolution"
    return None


def op_name(func) -> str:
    """Dispatcher name of an OpOverload: ``aten::add.Tensor``, ``aten::relu``."""
    schema = func._schema
    name = schema.name
    overload = schema.overload_name
    return f"{name}.{overload}" if overload and overload != "default" else name


_composite_cache: dict[tuple[str, str], bool] = {}


def runs_composite_on_cpu(name: str, key: str) -> bool:
    """True if the op has a ``key`` kernel (CompositeExplicitAutograd, CompositeImplicitAutograd)
    and no CPU kernel, so that composite is what runs on CPU."""
    hit = _composite_cache.get((name, key))
    if hit is None:
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        try:
            hit = has(name, key) and not has(name, "CPU")
        except RuntimeError:
            hit = False
        _composite_cache[(name, key)] = hit
    return hit


def is_composite_explicit(name: str) -> bool:
    """True if the op runs a CompositeExplicitAutograd kernel on CPU (no CPU kernel)."""
    return runs_composite_on_cpu(name, "CompositeExplicitAutograd")


def _dtype_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


@dataclass
class OpStats:
    count: int = 0
    dtypes: set = field(default_factory=set)
    phases: set = field(default_factory=set)
    inner: set = field(default_factory=set)


class _InnerRecorder(TorchDispatchMode):
    """Collects the op names a composite kernel dispatches (one level deep)."""

    def __init__(self):
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        # Below Autograd, CompositeImplicitAutograd ops reach the Python key
        # undecomposed; decompose them so inner lists hold the post-CIA op set,
        # like the top-level recording.
        if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        self.ops.add(name)
        return func(*args, **kwargs)


class OpRecorder(TorchDispatchMode):
    """Records every ATen overload dispatched while active.

    Set ``recorder.phase`` to one of PHASES before running each phase.
    """

    # Composite kernels are re-run to capture inner ops at most this many times per
    # (op, input dtypes) key, to bound the cost.
    MAX_INNER_RUNS = 2

    def __init__(self, capture_inner: bool = True):
        super().__init__()
        self.phase = "inference"
        self.stats: dict[str, OpStats] = {}
        self.capture_inner = capture_inner
        self._inner_runs: dict[tuple, int] = {}
        # Ops seen with data-dependent output shapes beyond DYNAMIC_SHAPE_OPS
        # (boolean-mask indexing).
        self.data_dependent: set[str] = set()

    # -- dispatch -------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        # Under torch.inference_mode (SAM2/SAM3 video trackers decorate their forward with it)
        # the Autograd keys are skipped and CompositeImplicitAutograd ops reach the Python key
        # undecomposed: decompose them, so a profile always holds the post-CIA op set. An op
        # with a CPU kernel as well (silu_backward) runs that kernel, as it does elsewhere.
        if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd") \
                and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"):
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        st = self.stats.get(name)
        if st is None:
            st = self.stats[name] = OpStats()
        st.count += 1
        st.phases.add(self.phase)
        flat_in, _ = tree_flatten((args, kwargs))
        in_dtypes = tuple(sorted({_dtype_name(t.dtype) for t in flat_in if isinstance(t, torch.Tensor)}))
        st.dtypes.update(in_dtypes)
        if name == "aten::index.Tensor" and any(
            isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in flat_in[1:]
        ):
            self.data_dependent.add(name)
        if self.capture_inner and is_composite_explicit(name):
            self._capture_inner(func, name, st, in_dtypes, args, kwargs)
        out = func(*args, **kwargs)
        flat_out, _ = tree_flatten(out)
        for t in flat_out:
            if isinstance(t, torch.Tensor):
                st.dtypes.add(_dtype_name(t.dtype))
        return out

    def _capture_inner(self, func, name, st, in_dtypes, args, kwargs):
        key = (name, in_dtypes)
        runs = self._inner_runs.get(key, 0)
        if runs >= self.MAX_INNER_RUNS:
            return
        self._inner_runs[key] = runs + 1
        if func._schema.is_mutable:
            # Do not mutate the real arguments twice.
            clone = lambda x: x.clone() if isinstance(x, torch.Tensor) else x  # noqa: E731
            args, kwargs = tree_map(clone, args), tree_map(clone, kwargs)
        inner = _InnerRecorder()
        try:
            with inner:
                func._op_dk(torch._C.DispatchKey.CompositeExplicitAutograd, *args, **kwargs)
        except Exception:  # noqa: BLE001 - best effort; the real call below decides
            pass
        inner.ops.discard(name)
        st.inner.update(inner.ops)

    # -- results --------------------------------------------------------------
    def merge_into(self, acc: dict[str, OpStats]) -> None:
        for name, st in self.stats.items():
            dst = acc.setdefault(name, OpStats())
            dst.count += st.count
            dst.dtypes |= st.dtypes
            dst.phases |= st.phases
            dst.inner |= st.inner


def ops_to_json(stats: dict[str, OpStats]) -> tuple[list[dict], list[str], list[str]]:
    """(ops, host_syncs, dynamic_shape_ops) in the profile schema, sorted."""
    ops = []
    for name in sorted(stats):
        st = stats[name]
        entry = {
            "op": name,
            "count": st.count,
            "dtypes": sorted(st.dtypes),
            "phases": sorted(st.phases),
        }
        if st.inner:
            entry["inner"] = sorted(st.inner)
        neutral = neutral_name(name)
        if neutral:
            entry["neutral"] = neutral
        ops.append(entry)
    host = sorted(n for n in stats if n in HOST_SYNC_OPS)
    dyn = sorted(n for n in stats if n in DYNAMIC_SHAPE_OPS or n.startswith("aten::unique"))
    return ops, host, dyn
