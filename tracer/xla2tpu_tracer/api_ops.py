"""Table from PyTorch's public Python API to the ATen ops each call dispatches.

``python -m xla2tpu_tracer api --output rules/api/torch-<version>.tsv``

What is enumerated (programmatically, nothing hand-listed):
  * public callables of ``torch``, ``torch.nn.functional``, ``torch.linalg``, ``torch.special``,
    ``torch.fft`` (``dir()`` of each module, functions only),
  * public methods of ``torch.Tensor`` plus its arithmetic / comparison / indexing dunders,
  * ``torch.nn`` module classes (their forward).

Where the inputs come from, in order:
  1. ``torch.testing._internal.common_methods_invocations.op_db``: PyTorch's own OpInfo catalogue.
     An OpInfo is tied to the API objects it names (``op``, ``method_variant``, ``inplace_variant``,
     ``operator_variant``, ``aliases``) by identity. OpInfos whose ``op`` is a test wrapper (a
     lambda that re-orders arguments or seeds the RNG) are run once under a ``TorchFunctionMode``
     that captures the public call the wrapper makes; that call is then replayed directly.
     APIs still without samples borrow the samples of the OpInfo of the same name
     (``torch.relu`` <- ``nn.functional.relu``, ``torch.abs_`` <- ``abs``).
  2. ``torch.testing._internal.common_modules.module_db`` for ``nn`` modules (constructor and
     forward inputs), plus a few small recipes for modules module_db lacks (``_module_recipes``).
  3. A generic fallback for the rest: one call per overload of the API's ATen schemas
     (``torch._C._jit_get_schemas_for_operator``) or Python signature, with small values chosen
     from the parameter's type and name.

Each call runs under the tracer's ``OpRecorder`` (forward), then, when an output requires grad,
``torch.autograd.grad(outputs, inputs, ones)`` under a second recorder (backward), so the two
phases are recorded separately. Calls are grouped into jobs (one OpInfo, API or module); each job
runs in a forked worker with a per-call alarm and a per-job kill timeout.

A call's *variant* is its call shape: the names of the parameters passed positionally, in order,
then the keyword names, sorted, each followed by ``=`` (``input,dim=,keepdim=``). Positional names
come from the overload the call binds to (ATen schema, ``self`` renamed ``input`` for functions;
Python signature; ``torch.overrides.get_testing_overrides()`` lambda). Tensor methods start with
``self``. nn modules' variants describe the constructor call.
"""

from __future__ import annotations

import datetime
import inspect
import json
import operator
import os
import platform
import re
import signal
import sys
import tempfile
import time
import traceback
import types
import unittest
import warnings
from dataclasses import dataclass, field

FORMAT = "xla2tpu-api-ops/1"
NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")
PHASES = ("forward", "backward", "eval")
HEADER = ("api", "variant", "phase", "ops", "inner", "neutral")
COMMAND = "PYTHONPATH=tracer tracer/.venv/bin/python -m xla2tpu_tracer api --output rules/api/torch-{v}.tsv"

# Tensor dunders that are operators users write (x + y, x[i], float(x), ...).
_DUNDER_RE = re.compile(
    r"^__(i|r)?(add|sub|mul|div|truediv|floordiv|mod|pow|matmul|and|or|xor|lshift|rshift)__$"
    r"|^__(eq|ne|lt|le|gt|ge|neg|pos|abs|invert|getitem|setitem|bool|float|int|index|len|contains)__$"
)

# APIs without any op_db sample that are not tensor computations, or need inputs this generator
# does not build. Checked in order; the first match gives the reason. Applied only to APIs that
# got no op_db sample (an op_db-covered API is always run).
_SKIP_RULES: list[tuple[str, str]] = [
    (r"\.(cudnn|miopen|mkldnn|fbgemm|cudnn_is_acceptable)_?\w*$|\.(to_mkldnn|ipu|xpu|mtia|cuda)$",
     "backend-specific kernel or device (CUDA/ROCm/oneDNN/FBGEMM/IPU/XPU/MTIA)"),
    (r"\.(q_\w+|quantize\w*|quantized_\w+|fake_quantize\w*|dequantize|int_repr|choose_qparams\w*"
     r"|fused_moving_avg_obs_fake_quant|empty_quantized|qscheme)$",
     "quantized tensors (the table covers dense float/int/bool tensors)"),
    (r"\.(sparse_\w+|to_sparse\w*|to_dense|(c?col_|crow_|row_)?indices(_copy)?|values|values_copy|coalesce"
     r"|is_coalesced|smm|hsmm|dsmm|spmm|saddmm|sspaddmm|hspmm|resize_as_sparse_|dense_dim"
     r"|to_padded_tensor)$",
     "sparse or nested layouts (the table covers dense strided tensors)"),
    (r"^torch\.(set_\w+|get_\w+|is_\w+_enabled|is_\w+_available|are_deterministic_algorithms_enabled"
     r"|is_grad_enabled|is_inference_mode_enabled|autocast_\w+_nesting|clear_autocast_cache"
     r"|manual_seed|seed|initial_seed|use_deterministic_algorithms|init_num_threads"
     r"|compiled_with_cxx11_abi|prepare_multiprocessing_environment|profiler_\w+"
     r"|thread_safe_generator|classproperty|typename|merge_type_from_type_comment|parse_ir"
     r"|parse_schema|parse_type_comment|unify_type_list|import_ir_module\w*|can_cast"
     r"|promote_types|is_storage|is_tensor)$",
     "global state, configuration, dtype arithmetic or TorchScript utility (no tensor computation)"),
    (r"^torch\.(compile|vmap|cond|while_loop|fork|wait|sym_\w+)$",
     "compilation, functorch, control-flow or symbolic-shape utility"),
    (r"^torch\.(load|save|from_file|from_numpy|frombuffer|from_dlpack|to_dlpack)$",
     "serialization or zero-copy interop with host memory"),
    (r"^torch\.Tensor\.(cpu|numpy|tolist|pin_memory|is_pinned|record_stream|storage|untyped_storage"
     r"|storage_type|share_memory_|is_shared|data_ptr|const_data_ptr|register_hook"
     r"|register_post_accumulate_grad_hook|retain_grad|module_load|as_subclass|apply_|map_|map2_"
     r"|reinforce|dim_order|is_set_to|set_|backward|new|get_device|element_size|requires_grad_"
     r"|detach_|resize|resize_as)$",
     "device transfer, storage, hook, autograd entry point or Python-callback method "
     "(on CPU its ops are not those a TPU run dispatches)"),
    (r"^torch\.nn\.functional\.(handle_torch_function|has_torch_function\w*|boolean_dispatch"
     r"|assert_int_or_pair)$",
     "helper imported into the namespace, not an operator"),
]

_MODULE_SKIP = {
    "Module": "container or base class", "Container": "container or base class",
    "Sequential": "container or base class", "ModuleList": "container or base class",
    "ModuleDict": "container or base class", "ParameterList": "container or base class",
    "ParameterDict": "container or base class", "RNNBase": "container or base class",
    "RNNCellBase": "container or base class",
    "DataParallel": "multi-device wrapper (its forward is the wrapped module's)",
    "SyncBatchNorm": "needs a distributed process group (forward is BatchNorm's on one device)",
    "NLLLoss2d": "deprecated alias of NLLLoss",
}


# --------------------------------------------------------------------------- catalogues

def _stub_expecttest() -> None:
    """torch.testing._internal imports ``expecttest`` (a test-only dependency not in the pinned
    venv) for its TestCase base class only; a stub is enough to load op_db and module_db."""
    if "expecttest" in sys.modules:
        return
    try:
        import expecttest  # noqa: F401
    except ImportError:
        m = types.ModuleType("expecttest")
        m.TestCase = unittest.TestCase
        m.ACCEPT = False
        sys.modules["expecttest"] = m


def load_catalogues():
    _stub_expecttest()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.common_modules import module_db
    return op_db, module_db


# --------------------------------------------------------------------------- enumeration

@dataclass
class Api:
    name: str  # qualified: torch.median, torch.Tensor.median, torch.nn.Mish
    ns: str  # torch, torch.nn.functional, ..., torch.Tensor, torch.nn
    obj: object
    kind: str  # function | method | module

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[1]

    @property
    def inplace(self) -> bool:
        s = self.short
        if s.startswith("__"):
            return (s.startswith("__i") and s not in ("__int__", "__index__", "__invert__")) or s == "__setitem__"
        return s.endswith("_") and self.kind != "module"


def _is_function(o) -> bool:
    return isinstance(o, (types.BuiltinFunctionType, types.FunctionType)) or (
        callable(o) and type(o).__name__ in ("builtin_function_or_method", "function", "_lru_cache_wrapper")
    )


def enumerate_apis() -> tuple[dict[str, Api], dict[str, int]]:
    """(apis by name, count of private names per namespace that were not enumerated)."""
    import torch

    apis: dict[str, Api] = {}
    private: dict[str, int] = {}
    for ns in NAMESPACES:
        mod = {"torch": torch, "torch.nn.functional": torch.nn.functional, "torch.linalg": torch.linalg,
               "torch.special": torch.special, "torch.fft": torch.fft}[ns]
        for n in sorted(dir(mod)):
            o = getattr(mod, n, None)
            if n.startswith("_"):
                if _is_function(o):
                    private[ns] = private.get(ns, 0) + 1
                continue
            if inspect.isclass(o) or inspect.ismodule(o) or not _is_function(o):
                continue
            apis[f"{ns}.{n}"] = Api(f"{ns}.{n}", ns, o, "function")
    for n in sorted(dir(torch.Tensor)):
        static = inspect.getattr_static(torch.Tensor, n, None)
        if isinstance(static, property) or type(static).__name__ in ("getset_descriptor", "member_descriptor"):
            continue
        o = getattr(torch.Tensor, n, None)
        if o is None or not callable(o) or inspect.isclass(o):
            continue
        if n.startswith("_"):
            if not _DUNDER_RE.match(n):
                private["torch.Tensor"] = private.get("torch.Tensor", 0) + 1
                continue
        apis[f"torch.Tensor.{n}"] = Api(f"torch.Tensor.{n}", "torch.Tensor", o, "method")
    for n in sorted(dir(torch.nn)):
        o = getattr(torch.nn, n, None)
        if n.startswith("_") or not inspect.isclass(o) or not issubclass(o, torch.nn.Module):
            continue
        apis[f"torch.nn.{n}"] = Api(f"torch.nn.{n}", "torch.nn", o, "module")
    return apis, private


# --------------------------------------------------------------------------- variant naming

def _type_ok(val, typ: str) -> float:
    """How well a Python value fits an ATen schema type (0 = not at all)."""
    import torch

    if typ.startswith("Optional[") and typ.endswith("]"):
        if val is None:
            return 2
        typ = typ[len("Optional["):-1]
    if val is None:
        return 0
    is_t = isinstance(val, torch.Tensor)
    if typ == "Tensor":
        return 2 if is_t else (0.5 if isinstance(val, (int, float, complex)) and not isinstance(val, bool) else 0)
    if typ in ("List[Tensor]", "List[Optional[Tensor]]"):
        return 2 if isinstance(val, (list, tuple)) and all(isinstance(x, torch.Tensor) or x is None for x in val) else 0
    if typ == "bool":
        return 2 if isinstance(val, bool) else 0
    if typ in ("int", "SymInt"):
        return 2 if isinstance(val, int) and not isinstance(val, bool) else (1 if isinstance(val, bool) else 0)
    if typ in ("float", "SymFloat"):
        return 2 if isinstance(val, float) else (1 if isinstance(val, int) and not isinstance(val, bool) else 0)
    if typ in ("number", "Scalar"):
        if isinstance(val, (int, float, complex)):
            return 2
        return 0.5 if is_t and val.dim() == 0 else 0
    if typ in ("List[int]", "List[SymInt]"):
        if isinstance(val, int) and not isinstance(val, bool):
            return 1
        return 2 if isinstance(val, (list, tuple, torch.Size)) and all(isinstance(x, int) for x in val) else 0
    if typ == "List[float]":
        return 2 if isinstance(val, (list, tuple)) and all(isinstance(x, (int, float)) for x in val) else 0
    if typ == "List[bool]":
        return 2 if isinstance(val, (list, tuple)) and all(isinstance(x, bool) for x in val) else 0
    if typ == "str":
        return 2 if isinstance(val, str) else 0
    if typ == "ScalarType":
        return 2 if isinstance(val, torch.dtype) else 0
    if typ == "Layout":
        return 2 if isinstance(val, torch.layout) else 0
    if typ == "Device":
        return 2 if isinstance(val, (torch.device, str, int)) else 0
    if typ == "MemoryFormat":
        return 2 if isinstance(val, torch.memory_format) else 0
    if typ == "Generator":
        return 2 if isinstance(val, torch.Generator) else 0
    if typ == "complex":
        return 2 if isinstance(val, (complex, float, int)) else 0
    return 0.5  # unknown type string: accept weakly


_schema_cache: dict[str, list] = {}


def _schemas(aten_name: str) -> list:
    hit = _schema_cache.get(aten_name)
    if hit is None:
        import torch

        try:
            raw = torch._C._jit_get_schemas_for_operator(aten_name)
        except Exception:  # noqa: BLE001
            raw = []
        hit = []
        for s in raw:
            if any(a.is_out for a in s.arguments):
                continue
            if any("Dimname" in str(a.real_type) for a in s.arguments):
                continue
            hit.append(s)
        _schema_cache[aten_name] = hit
    return hit


def _aten_name(api: Api) -> str | None:
    n = getattr(api.obj, "__name__", None)
    if not n or not isinstance(api.obj, types.BuiltinFunctionType) and type(api.obj).__name__ != "method_descriptor":
        return None
    return "aten::" + n


def _bind_schema(schema, pos, kw, method: bool):
    """Parameter names for (pos, kw) if the call binds to this schema, with a fit score."""
    params = list(schema.arguments)
    if method:
        if not params or params[0].name != "self":
            return None
        params = params[1:]
    names = []
    score = 0.0
    positional = [p for p in params if not p.kwarg_only]
    if len(pos) > len(positional):
        return None
    bound = set()
    for val, p in zip(pos, positional):
        s = _type_ok(val, str(p.real_type))
        if not s:
            return None
        score += s
        name = "input" if (p.name == "self" and not method) else p.name
        names.append(name)
        bound.add(p.name)
    for k, val in kw.items():
        if k == "requires_grad":  # added by the Python binding of factory functions
            continue
        cand = [p for p in params if p.name == k or (k == "input" and p.name == "self" and not method)]
        if not cand or cand[0].name in bound:
            return None
        s = _type_ok(val, str(cand[0].real_type))
        if not s:
            return None
        score += s
        bound.add(cand[0].name)
    for p in params:
        if p.name not in bound and not p.has_default_value() and not str(p.real_type).startswith("Optional["):
            return None
    return names, score


def _py_signature(api: Api):
    """A Python signature for naming: the function's own, else the testing-override lambda's."""
    sig = None
    target = api.obj.__init__ if api.kind == "module" else api.obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        kinds = {p.kind for p in sig.parameters.values()}
        if api.kind == "module" or kinds - {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
            return sig
    lam = _testing_overrides().get(api.obj)
    if lam is not None:
        try:
            return inspect.signature(lam)
        except (TypeError, ValueError):
            return None
    return sig


_overrides = None


def _testing_overrides() -> dict:
    global _overrides
    if _overrides is None:
        import torch

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _overrides = torch.overrides.get_testing_overrides()
    return _overrides


def _names_from_signature(sig, pos, method_or_module: bool) -> list[str] | None:
    params = list(sig.parameters.values())
    if method_or_module and params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                          inspect.Parameter.POSITIONAL_OR_KEYWORD):
        params = params[1:]  # the receiver (self; "input" in some testing-override lambdas)
    names = []
    i = 0
    for p in params:
        if i >= len(pos):
            break
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            names.append("*" + p.name)
            i = len(pos)
            break
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD):
            return None
        names.append(p.name)
        i += 1
    if i < len(pos):
        return None
    return names


_variant_cache: dict = {}
_CHOICE_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,24}$")


def _choice(name: str, val) -> bool:
    """String arguments select an algorithm (mode='bilinear', reduction='sum', padding_mode=
    'reflect', approximate='tanh', rounding_mode='floor', ord='nuc'), so their value is part of the
    variant. Free text (einsum equations) is not."""
    return isinstance(val, str) and name not in ("equation", "subscripts") and bool(_CHOICE_RE.match(val))



def _val_key(v):
    import torch

    if isinstance(v, torch.Tensor):
        return ("T", str(v.dtype), v.dim() == 0)
    if isinstance(v, (list, tuple)):
        return ("L", tuple(_val_key(x) for x in v[:4]))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, (bool, int, float, complex)) or v is None:
        return (type(v).__name__,)
    return (type(v).__name__,)


def variant(api: Api, pos: tuple, kw: dict) -> str:
    """Call-shape description: ``input,dim`` / ``self,dim=,keepdim=`` / ``in_features,out_features``."""
    key = (api.name, tuple(_val_key(v) for v in pos), tuple(sorted((k, _val_key(v)) for k, v in kw.items())))
    hit = _variant_cache.get(key)
    if hit is not None:
        return hit
    method = api.kind == "method"
    if method:
        pos = tuple(pos[1:])  # the receiver; named "self" below
    names = None
    aten = _aten_name(api) if api.kind != "module" else None
    if aten:
        best = None
        for s in _schemas(aten):
            b = _bind_schema(s, pos, kw, method)
            if b is None and len(pos) > 1 and all(isinstance(x, int) and not isinstance(x, bool) for x in pos):
                # torch.zeros(2, 3) / x.view(2, 3): Python varargs for a leading int[] parameter.
                b = _bind_schema(s, (list(pos),), kw, method)
                if b is not None:
                    b = (["*" + b[0][0]], b[1])
            if b and (best is None or b[1] > best[1]):
                best = b
        if best:
            names = best[0]
    if names is None:
        sig = _py_signature(api)
        if sig is not None:
            names = _names_from_signature(sig, pos, method or api.kind == "module")
    if names is None:
        if api.short.startswith("__") and len(pos) == 1:
            names = ["other"]
        else:
            names = [f"arg{i + 1}" for i in range(len(pos))]
    items = (["self"] if method else [])
    for i, name in enumerate(names):
        val = pos[i] if i < len(pos) and not name.startswith("*") else None
        items.append(name + (f":{val}" if _choice(name, val) else ""))
    items += [f"{k}={kw[k]}" if _choice(k, kw[k]) else f"{k}=" for k in sorted(kw)]
    out = ",".join(items) if items else "()"
    _variant_cache[key] = out
    return out


# --------------------------------------------------------------------------- running one call

class CallTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CallTimeout("per-call timeout")


class _Alarm:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        return False


def _flat(x):
    from torch.utils._pytree import tree_flatten

    return tree_flatten(x)[0]


def _stats_to_ops(stats) -> dict[str, list[str]]:
    return {name: sorted(st.inner) for name, st in stats.items()}


def record_call(fn, pos, kw, *, inplace=False, grad=True, out_process=None, timeout=20.0, module=None,
                eval_phase=False):
    """Run ``fn(*pos, **kw)`` under the recorder. Returns {phase: {op: [inner ops]}} and an error
    note for a failed backward. Raises if the forward fails."""
    import torch

    from .recorder import OpRecorder

    leaves = [t for t in _flat((pos, kw)) if isinstance(t, torch.Tensor) and t.requires_grad]
    if module is not None:
        leaves += [p for p in module.parameters() if p.requires_grad]
    if inplace and pos and isinstance(pos[0], torch.Tensor):
        pos = (pos[0].clone(),) + tuple(pos[1:])
    res: dict[str, dict] = {}
    note = None
    rec = OpRecorder()
    rec.phase = "forward"
    with _Alarm(timeout):
        with rec:
            out = fn(*pos, **kw)
    res["forward"] = _stats_to_ops(rec.stats)
    if grad and leaves:
        try:
            processed = out_process(out) if out_process else out
        except Exception:  # noqa: BLE001
            processed = out
        outs = [t for t in _flat(processed) if isinstance(t, torch.Tensor) and t.requires_grad
                and (t.is_floating_point() or t.is_complex())]
        if outs:
            seeds = [torch.ones_like(t) for t in outs]
            rec2 = OpRecorder()
            rec2.phase = "backward"
            try:
                with _Alarm(timeout):
                    with rec2:
                        torch.autograd.grad(outs, leaves, seeds, allow_unused=True)
                res["backward"] = _stats_to_ops(rec2.stats)
            except Exception as e:  # noqa: BLE001
                note = f"backward: {_error_text(e)}"
    if eval_phase and module is not None:
        module.eval()
        rec3 = OpRecorder()
        rec3.phase = "eval"
        try:
            with _Alarm(timeout), torch.no_grad(), rec3:
                fn(*pos, **kw)
            res["eval"] = _stats_to_ops(rec3.stats)
        except Exception as e:  # noqa: BLE001
            note = f"eval: {type(e).__name__}"
        module.train()
    return res, note


# --------------------------------------------------------------------------- jobs

@dataclass
class Job:
    key: str  # stable id, also the sort key
    kind: str  # opinfo | capture | generic | module
    apis: list = field(default_factory=list)  # api names (opinfo: (api, call) pairs)
    index: int = -1  # op_db / module_db index


class _Emitter:
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")

    def __call__(self, **rec):
        self.f.write(json.dumps(rec, sort_keys=True) + "\n")
        self.f.flush()


def _pick_dtype(op):
    import torch

    try:
        sup = op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        sup = op.dtypes
    for dt in (torch.float32, torch.int64, torch.bool, torch.int32, torch.uint8, torch.complex64, torch.float64):
        if dt in sup:
            return dt
    return None


def _error_text(e):
    """`Type: first line of the message`, short enough for one table note."""
    msg = str(e).splitlines()[0][:160] if str(e) else ""
    return f"{type(e).__name__}: {msg}"


def _emit_recorded(emit, api, v, res, note):
    for phase, ops in res.items():
        emit(a=api.name, v=v, p=phase, o=ops)
    if note:
        emit(a=api.name, v=v, n=note)


def _seed():
    import random

    import torch

    torch.manual_seed(0)
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass


class _Ctx:
    """State shared by the job functions in a worker (set in the parent before forking)."""

    apis: dict[str, Api] = {}
    op_db: list = []
    module_db: list = []
    max_samples = 3
    timeout = 20.0


def _run_samples(emit, api: Api, call, samples, grad, inplace):
    """Run (pos, kw) samples of one API; at most max_samples successful calls per variant."""
    done: dict[str, int] = {}
    tried: dict[str, int] = {}
    ok = 0
    last_err = None
    for i, (pos, kw, proc) in enumerate(samples):
        try:
            v = variant(api, pos, kw)
        except Exception:  # noqa: BLE001
            continue
        if done.get(v, 0) >= _Ctx.max_samples or tried.get(v, 0) >= 3 * _Ctx.max_samples:
            continue
        tried[v] = tried.get(v, 0) + 1
        _seed()
        try:
            res, note = record_call(call, pos, kw, inplace=inplace, grad=grad, out_process=proc,
                                    timeout=_Ctx.timeout)
        except CallTimeout:
            emit(a=api.name, v=v, e="timeout")
            last_err = "timeout"
            continue
        except Exception as e:  # noqa: BLE001
            last_err = _error_text(e)
            continue
        done[v] = done.get(v, 0) + 1
        ok += 1
        _emit_recorded(emit, api, v, res, note)
    if not ok:
        emit(a=api.name, e=f"no sample call succeeded ({last_err})" if last_err else "no usable sample")
    return ok


def _opinfo_samples(op, dtype, grad):
    _seed()
    out = []
    with _Alarm(max(_Ctx.timeout, 30.0)):
        for s in op.sample_inputs("cpu", dtype, requires_grad=grad):
            pos = (s.input,) + tuple(s.args)
            out.append((pos, dict(s.kwargs), s.output_process_fn_grad))
    return out


def _job_opinfo(job: Job, emit):
    op = _Ctx.op_db[job.index]
    dtype = _pick_dtype(op)
    if dtype is None:
        for name, _ in job.apis:
            emit(a=name, e="OpInfo supports no usable CPU dtype")
        return
    grad = bool(op.supports_autograd) and (dtype.is_floating_point or dtype.is_complex)
    samples = _opinfo_samples(op, dtype, grad)
    for name, how in job.apis:
        api = _Ctx.apis[name]
        call = api.obj
        if how == "operator":
            call = None
            for f in (op.operator_variant, op.inplace_operator_variant):
                if f is not None and api.short == f"__{f.__name__.rstrip('_')}__":
                    call = f
            if call is None:
                continue
        g = grad and (not api.inplace or op.supports_inplace_autograd)
        _run_samples(emit, api, call, samples, g, api.inplace)


class _Capture:
    """Captures the outermost public torch call a test wrapper makes."""

    def __new__(cls):
        from torch.overrides import TorchFunctionMode

        class Mode(TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.calls = []
                self.depth = 0

            def __torch_function__(self, func, types_, args=(), kwargs=None):
                kwargs = kwargs or {}
                if self.depth == 0:
                    self.calls.append((func, args, kwargs))
                self.depth += 1
                try:
                    return func(*args, **kwargs)
                finally:
                    self.depth -= 1

        return Mode()


def _strip_defaults(api: Api, kw: dict) -> dict:
    """handle_torch_function passes every default as a keyword; drop those equal to the default."""
    import torch

    try:
        sig = inspect.signature(api.obj)
    except (TypeError, ValueError):
        return kw
    out = {}
    for k, v in kw.items():
        p = sig.parameters.get(k)
        if p is not None and p.default is not inspect.Parameter.empty and not isinstance(v, torch.Tensor):
            try:
                if v is p.default or (type(v) is type(p.default) and v == p.default):
                    continue
            except Exception:  # noqa: BLE001
                pass
        out[k] = v
    return out


def _job_capture(job: Job, emit):
    """An OpInfo whose ``op`` is a wrapper: run it under a TorchFunctionMode, keep the captured
    public calls to the wanted APIs and replay each one directly."""
    op = _Ctx.op_db[job.index]
    dtype = _pick_dtype(op)
    if dtype is None:
        return
    grad = bool(op.supports_autograd) and (dtype.is_floating_point or dtype.is_complex)
    wanted = {}
    for name in job.apis:
        api = _Ctx.apis[name]
        wanted[id(api.obj)] = api
        base = getattr(_tensorbase(), api.short, None) if api.kind == "method" else None
        if base is not None:
            wanted[id(base)] = api
    per_api: dict[str, list] = {}
    for pos, kw, proc in _opinfo_samples(op, dtype, grad):
        cap = _Capture()
        _seed()
        try:
            with _Alarm(_Ctx.timeout), cap:
                op.op(*pos, **kw)
        except Exception:  # noqa: BLE001
            continue
        for func, args, kwargs in cap.calls:
            api = wanted.get(id(func))
            if api is not None:
                kwargs = _strip_defaults(api, dict(kwargs))
                per_api.setdefault(api.name, []).append((tuple(args), kwargs, None))
                break
    for name in job.apis:
        api = _Ctx.apis[name]
        samples = per_api.get(name, [])
        if samples:
            _run_samples(emit, api, api.obj, samples, grad, api.inplace)


def _tensorbase():
    import torch

    return torch._C.TensorBase


# ---- generic inputs

_SHAPES = [(3, 3), (2, 3, 4), (1, 2, 4, 4), (4,), (1, 2, 4, 4, 4), (1,)]
_TENSOR_NAMES = {"input", "x", "tensor", "self", "a", "b", "A", "B", "other", "target", "weight", "bias",
                 "query", "key_", "y", "x1", "x2", "input1", "input2", "tensor1", "tensor2", "mat", "mat1",
                 "mat2", "vec", "src", "end_", "LU", "grad"}


def _gen_value(name: str, typ: str, shape, optional_no_default: bool):
    """A small value for a parameter, or raise LookupError if none fits."""
    import torch

    typ = typ or ""
    if typ.startswith("Optional[") and optional_no_default:
        return None
    t = typ[len("Optional["):-1] if typ.startswith("Optional[") else typ
    lname = name.lower()
    if t in ("Tensor", "") and (t == "Tensor" or lname in _TENSOR_NAMES or lname.startswith("input")
                               or lname.startswith("tensor")):
        if lname in ("index", "indices", "idx", "target", "labels", "offsets"):
            return torch.zeros(shape, dtype=torch.long)
        if lname in ("mask", "condition"):
            return torch.randn(shape) > 0
        return torch.randn(shape, requires_grad=True)
    if t in ("List[Tensor]", "List[Optional[Tensor]]") or lname == "tensors":
        return [torch.randn(shape, requires_grad=True), torch.randn(shape, requires_grad=True)]
    if t in ("int", "SymInt") or (not t and lname in ("dim", "groups", "n", "k", "num_classes", "chunks")):
        return {"dim": 0, "groups": 1, "window_length": 4, "high": 5, "n": 2, "chunks": 2}.get(lname, 1)
    if t in ("List[int]", "List[SymInt]") or (not t and lname in ("size", "shape", "dims", "kernel_size", "output_size",
                                                                   "stride", "padding", "dilation")):
        if lname in ("kernel_size",):
            return 2
        if lname in ("stride", "dilation"):
            return 1
        if lname in ("padding",):
            return 0
        if lname in ("dim", "dims"):
            return [0]
        return [2, 3]
    if t in ("float", "SymFloat") or (not t and lname in ("p", "eps", "alpha", "beta", "lambd", "negative_slope")):
        return 2.0 if lname == "norm_type" else 0.5
    if t in ("number", "Scalar", "complex"):
        return 1.0
    if t == "bool":
        return False
    if t == "ScalarType":
        return torch.float32
    if t == "Layout":
        return torch.strided
    if t == "Device":
        return "cpu"
    if t == "MemoryFormat":
        return torch.contiguous_format
    if lname in ("key", "idx"):
        return 0
    if lname == "value":
        return 1.0
    raise LookupError(f"no generic value for {name}: {typ or 'untyped'}")


def _generic_calls(api: Api, shape):
    """Candidate (pos, kw) calls, one per overload, with tensors of ``shape``."""
    method = api.kind == "method"
    calls = []
    aten = _aten_name(api)
    schemas = _schemas(aten) if aten else []
    for s in schemas:
        params = list(s.arguments)
        if method:
            if not params or params[0].name != "self":
                continue
            params = params[1:]
        try:
            pos, kw = [], {}
            for p in params:
                typ = str(p.real_type)
                if p.has_default_value():
                    continue
                if typ == "Generator" or typ.startswith("Optional[Generator"):
                    if typ.startswith("Optional["):
                        continue
                    raise LookupError("generator")
                v = _gen_value(p.name, typ, shape, typ.startswith("Optional["))
                if p.kwarg_only:
                    if v is not None:
                        kw[p.name] = v
                else:
                    pos.append(v)
            calls.append((tuple(pos), kw))
        except LookupError:
            continue
    if not schemas:
        try:
            sig = inspect.signature(api.obj)
        except (TypeError, ValueError):
            sig = _py_signature(api)
        if sig is not None:
            params = list(sig.parameters.values())
            if method and params and params[0].name == "self":
                params = params[1:]
            try:
                pos, kw = [], {}
                for p in params:
                    if p.kind == inspect.Parameter.VAR_POSITIONAL:
                        if p.name in ("tensors", "args", "operands") and not pos:
                            pos += [_gen_value("input", "Tensor", shape, False)] * 2
                        break
                    if p.kind == inspect.Parameter.VAR_KEYWORD or p.default is not inspect.Parameter.empty:
                        continue
                    ann = p.annotation
                    typ = ""
                    if ann is not inspect.Parameter.empty and ann is not None:
                        a = ann if isinstance(ann, str) else str(ann)
                        listy = any(w in a for w in ("List", "list", "tuple", "Tuple", "Sequence"))
                        if "Tensor" in a:
                            typ = "List[Tensor]" if listy else "Tensor"
                        elif "float" in a:
                            typ = "float"
                        elif "int" in a:
                            typ = "List[int]" if listy else "int"
                        elif "bool" in a:
                            typ = "bool"
                    v = _gen_value(p.name, typ, shape, False)
                    if p.kind == inspect.Parameter.KEYWORD_ONLY:
                        kw[p.name] = v
                    else:
                        pos.append(v)
                calls.append((tuple(pos), kw))
            except LookupError:
                pass
    if method:
        calls = [((_gen_value("self", "Tensor", shape, False),) + pos, kw) for pos, kw in calls]
    return calls


def _job_generic(job: Job, emit):
    import torch

    for name in job.apis:
        api = _Ctx.apis[name]
        n_over = None
        done_variants: set[str] = set()
        last_err = "no overload could be given generic inputs"
        for shape in _SHAPES:
            _seed()
            cands = _generic_calls(api, shape)
            if n_over is None:
                n_over = len(cands)
            for pos, kw in cands:
                try:
                    v = variant(api, pos, kw)
                except Exception:  # noqa: BLE001
                    continue
                if v in done_variants:
                    continue
                grad = any(isinstance(t, torch.Tensor) and t.requires_grad for t in _flat((pos, kw)))
                try:
                    res, note = record_call(api.obj, pos, kw, inplace=api.inplace, grad=grad and not api.inplace,
                                            timeout=_Ctx.timeout)
                except CallTimeout:
                    last_err = "timeout"
                    continue
                except Exception as e:  # noqa: BLE001
                    last_err = _error_text(e)
                    continue
                done_variants.add(v)
                for phase, ops in res.items():
                    emit(a=api.name, v=v, p=phase, o=ops, g=1)
                if note:
                    emit(a=api.name, v=v, n=note)
            if n_over is not None and len(done_variants) >= n_over:
                break
        if not done_variants:
            emit(a=api.name, e=f"generic inputs failed: {last_err}")


# ---- modules

def _module_recipes():
    """Constructor and forward inputs for torch.nn modules that module_db has no entry for."""
    import torch
    import torch.nn.functional as F

    r = lambda *s: torch.randn(*s, requires_grad=True)  # noqa: E731

    def unpool(d):
        x = torch.randn(*([1, 2] + [4] * d))
        y, idx = getattr(F, f"max_pool{d}d")(x, 2, return_indices=True)
        return (y.requires_grad_(), idx)

    def decoder():
        layer = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
        return (layer, 1), {}

    return {
        "AdaptiveLogSoftmaxWithLoss": lambda: (((8, 10, [4]), {}), (r(3, 8), torch.tensor([0, 5, 9]))),
        "AlphaDropout": lambda: (((), {}), (r(2, 3, 4),)),
        "ChannelShuffle": lambda: (((2,), {}), (r(1, 4, 2, 2),)),
        "CosineSimilarity": lambda: (((), {}), (r(3, 4), r(3, 4))),
        "CrossMapLRN2d": lambda: (((3,), {}), (r(1, 4, 3, 3),)),
        "Dropout": lambda: (((), {}), (r(2, 3, 4),)),
        "Dropout1d": lambda: (((), {}), (r(2, 3, 4),)),
        "Dropout2d": lambda: (((), {}), (r(2, 3, 4, 4),)),
        "Dropout3d": lambda: (((), {}), (r(2, 3, 2, 2, 2),)),
        "EmbeddingBag": lambda: (((10, 3), {}), (torch.tensor([[1, 2, 4], [4, 3, 9]]),)),
        "FeatureAlphaDropout": lambda: (((), {}), (r(2, 3, 2, 2),)),
        "Flatten": lambda: (((), {}), (r(2, 3, 4),)),
        "Fold": lambda: (((), {"output_size": (4, 4), "kernel_size": 2}), (r(1, 4, 9),)),
        "Hardsigmoid": lambda: (((), {}), (r(3, 4),)),
        "Identity": lambda: (((), {}), (r(3, 4),)),
        "LazyBatchNorm1d": lambda: (((), {}), (r(4, 3),)),
        "LazyBatchNorm2d": lambda: (((), {}), (r(2, 3, 4, 4),)),
        "LazyBatchNorm3d": lambda: (((), {}), (r(2, 3, 2, 2, 2),)),
        "LazyInstanceNorm1d": lambda: (((), {}), (r(2, 3, 4),)),
        "LazyInstanceNorm2d": lambda: (((), {}), (r(2, 3, 4, 4),)),
        "LazyInstanceNorm3d": lambda: (((), {}), (r(2, 3, 2, 2, 2),)),
        "LazyLinear": lambda: (((3,), {}), (r(2, 4),)),
        "MaxUnpool1d": lambda: (((2,), {}), unpool(1)),
        "MaxUnpool2d": lambda: (((2,), {}), unpool(2)),
        "MaxUnpool3d": lambda: (((2,), {}), unpool(3)),
        "PairwiseDistance": lambda: (((), {}), (r(3, 4), r(3, 4))),
        "PixelShuffle": lambda: (((2,), {}), (r(1, 4, 2, 2),)),
        "PixelUnshuffle": lambda: (((2,), {}), (r(1, 1, 4, 4),)),
        "RReLU": lambda: (((), {}), (r(3, 4),)),
        "TransformerDecoder": lambda: (decoder(), (r(2, 3, 8), r(2, 3, 8))),
        "TripletMarginLoss": lambda: (((), {}), (r(3, 4), r(3, 4), r(3, 4))),
        "TripletMarginWithDistanceLoss": lambda: (((), {}), (r(3, 4), r(3, 4), r(3, 4))),
        "Unflatten": lambda: (((1, (2, 2)), {}), (r(3, 4),)),
        "Unfold": lambda: (((), {"kernel_size": 2}), (r(1, 2, 4, 4),)),
        "Upsample": lambda: (((), {"scale_factor": 2}), (r(1, 1, 2, 2),)),
        "UpsamplingBilinear2d": lambda: (((), {"scale_factor": 2}), (r(1, 1, 2, 2),)),
        "UpsamplingNearest2d": lambda: (((), {"scale_factor": 2}), (r(1, 1, 2, 2),)),
    }, F


def _job_module(job: Job, emit):
    import torch

    name = job.apis[0]
    api = _Ctx.apis[name]
    cls = api.obj
    samples = []  # (ctor_args, ctor_kwargs, fwd_args, fwd_kwargs)
    _seed()
    if job.index >= 0:
        mi = _Ctx.module_db[job.index]
        with _Alarm(max(_Ctx.timeout, 30.0)):
            ins = mi.module_inputs_func(mi, device="cpu", dtype=torch.float32, requires_grad=True, training=True)
        for m in ins:
            samples.append((tuple(m.constructor_input.args), dict(m.constructor_input.kwargs),
                            tuple(m.forward_input.args), dict(m.forward_input.kwargs)))
    else:
        recipes, _ = _module_recipes()
        (cargs, ckw), fargs = recipes[api.short]()
        samples.append((tuple(cargs), dict(ckw), tuple(fargs), {}))
    done: dict[str, int] = {}
    ok = 0
    last_err = None
    for cargs, ckw, fargs, fkw in samples:
        try:
            v = variant(api, cargs, ckw)
        except Exception:  # noqa: BLE001
            continue
        if done.get(v, 0) >= _Ctx.max_samples:
            continue
        _seed()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = cls(*cargs, **ckw)
            mod.train()
            res, note = record_call(mod, fargs, fkw, grad=True, module=mod, timeout=_Ctx.timeout, eval_phase=True)
        except CallTimeout:
            last_err = "timeout"
            continue
        except Exception as e:  # noqa: BLE001
            last_err = _error_text(e)
            continue
        done[v] = done.get(v, 0) + 1
        ok += 1
        _emit_recorded(emit, api, v, res, note)
    if not ok:
        emit(a=api.name, e=f"module could not be run ({last_err})")


_JOB_FUNCS = {"opinfo": _job_opinfo, "capture": _job_capture, "generic": _job_generic, "module": _job_module}


# --------------------------------------------------------------------------- planning

def _skip_reason(name: str) -> str | None:
    for pat, why in _SKIP_RULES:
        if re.search(pat, name):
            return why
    return None


def _opinfo_name_candidates(api: Api) -> list[str]:
    s = api.short
    if api.inplace and not s.startswith("__"):
        s = s[:-1]
    if s.startswith("__"):
        core = s.strip("_")
        table = {"truediv": "div", "itruediv": "div", "floordiv": "floor_divide", "div": "div"}
        return [s, table.get(core, core)]
    if api.ns == "torch.nn.functional":
        return ["nn.functional." + s, s]
    if api.ns in ("torch.linalg", "torch.special", "torch.fft"):
        sub = api.ns.split(".")[1]
        return [f"{sub}.{s}"] + ([s] if sub == "special" else [])
    return [s, "nn.functional." + s, "special." + s]


def plan(apis: dict[str, Api], op_db, module_db) -> tuple[list[Job], dict[str, str]]:
    """Jobs to run and {api: skip reason} for APIs deliberately not run."""
    import torch

    by_id: dict[int, list[str]] = {}
    for name, api in apis.items():
        if api.kind == "module":
            continue
        by_id.setdefault(id(api.obj), []).append(name)
        if api.kind == "method":
            base = getattr(torch._C.TensorBase, api.short, None)
            if base is not None and base is not api.obj:
                by_id.setdefault(id(base), []).append(name)
    jobs: list[Job] = []
    covered: set[str] = set()
    skipped: dict[str, str] = {}
    unmapped: list[int] = []
    for i, op in enumerate(op_db):
        forms: list[tuple[str, str]] = []
        cands = [op.op, op.method_variant, op.inplace_variant]
        for a in op.aliases:
            cands += [a.op, a.method_variant, a.inplace_variant]
        for f in cands:
            for name in by_id.get(id(f), []) if f is not None else []:
                forms.append((name, "call"))
        for f, pre in ((op.operator_variant, ""), (op.inplace_operator_variant, "")):
            if f is None:
                continue
            n = f.__name__.rstrip("_")
            dn = f"torch.Tensor.__{pre}{n}__"
            if dn in apis:
                forms.append((dn, "operator"))
        forms = sorted(set(forms))
        if forms:
            covered.update(n for n, _ in forms)
            jobs.append(Job(f"opinfo:{i:04d}:{op.name}.{op.variant_test_name}", "opinfo", forms, i))
        if not any(h == "call" and apis[n].obj is op.op for n, h in forms):
            unmapped.append(i)
    # Wrapper OpInfos: capture the public call they make.
    op_by_name: dict[str, list[int]] = {}
    for i, op in enumerate(op_db):
        op_by_name.setdefault(op.name, []).append(i)
    rest = [n for n, a in apis.items() if a.kind != "module" and n not in covered]
    for i in unmapped:
        op = op_db[i]
        wanted = []
        for n in rest:
            api = apis[n]
            if op.name in _opinfo_name_candidates(api)[:1] or op.name.split(".")[-1] == api.short.rstrip("_"):
                wanted.append(n)
        if wanted:
            jobs.append(Job(f"capture:{i:04d}:{op.name}.{op.variant_test_name}", "capture", sorted(wanted), i))
            covered.update(wanted)
    # Same-name OpInfo samples for the remaining APIs (torch.relu <- nn.functional.relu).
    rest = [n for n in rest if n not in covered]
    for n in rest:
        for cand in _opinfo_name_candidates(apis[n]):
            if cand in op_by_name:
                for i in op_by_name[cand]:
                    jobs.append(Job(f"byname:{i:04d}:{n}", "opinfo", [(n, "call")], i))
                covered.add(n)
                break
    # Generic fallback for what is left, unless a skip rule says why not.
    for n in sorted(apis):
        api = apis[n]
        if api.kind == "module" or n in covered:
            continue
        why = _skip_reason(n)
        if why:
            skipped[n] = why
            continue
        jobs.append(Job(f"generic:{n}", "generic", [n]))
    # nn modules.
    mdb = {m.module_cls: j for j, m in enumerate(module_db)}
    recipes, _ = _module_recipes()
    for n in sorted(apis):
        api = apis[n]
        if api.kind != "module":
            continue
        if api.obj in mdb:
            jobs.append(Job(f"module:{n}", "module", [n], mdb[api.obj]))
        elif api.short in recipes:
            jobs.append(Job(f"module:{n}", "module", [n], -1))
        elif api.short in _MODULE_SKIP:
            skipped[n] = _MODULE_SKIP[api.short]
        else:
            skipped[n] = "no module_db entry and no recipe"
    jobs.sort(key=lambda j: j.key)
    return jobs, skipped


# --------------------------------------------------------------------------- pool

def _child(job: Job, out_path: str) -> None:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    code = 0
    emit = _Emitter(out_path)
    try:
        warnings.simplefilter("ignore")
        _JOB_FUNCS[job.kind](job, emit)
        emit(done=1)
    except BaseException as e:  # noqa: BLE001
        emit(job_error=f"{type(e).__name__}: {str(e)[:200]}", tb=traceback.format_exc()[-600:])
        code = 1
    emit.f.close()
    os._exit(code)


def run_jobs(jobs: list[Job], workers: int, job_timeout: float, progress=True) -> tuple[list[dict], dict]:
    """Run jobs in forked workers; returns (records, {job key: failure}) ."""
    tmp = tempfile.mkdtemp(prefix="xla2tpu-api-")
    pending = list(jobs)
    running: dict[int, tuple[Job, float, str]] = {}
    per_job: dict[str, list[dict]] = {}
    failures: dict[str, str] = {}
    n = len(jobs)
    finished = 0
    t0 = time.time()

    def collect(job, path, failure=None):
        nonlocal finished
        finished += 1
        done = False
        records = per_job.setdefault(job.key, [])
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("done"):
                        done = True
                    elif "job_error" in rec:
                        failure = failure or rec["job_error"]
                    else:
                        records.append(rec)
            os.remove(path)
        if not done:
            failures[job.key] = failure or "worker ended without finishing"
        if progress and (finished % 100 == 0 or finished == n):
            print(f"[{finished}/{n} {time.time() - t0:5.0f}s] {sum(map(len, per_job.values()))} records, "
                  f"{len(failures)} job failures",
                  file=sys.stderr, flush=True)

    try:
        while pending or running:
            while pending and len(running) < workers:
                job = pending.pop(0)
                path = os.path.join(tmp, f"{len(pending)}.jsonl")
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(job, path)
                running[pid] = (job, time.time(), path)
            time.sleep(0.02)
            for pid in list(running):
                job, start, path = running[pid]
                wpid, status = os.waitpid(pid, os.WNOHANG)
                if wpid == 0:
                    if time.time() - start > job_timeout:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        del running[pid]
                        collect(job, path, f"job timeout after {job_timeout:.0f}s")
                    continue
                del running[pid]
                fail = None
                if os.WIFSIGNALED(status):
                    fail = "worker crashed (killed by a signal)"
                collect(job, path, fail)
    finally:
        for pid in running:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        try:
            os.rmdir(tmp)
        except OSError:
            pass
    # Records in job order (not completion order), so first-error choices are stable.
    records = [r for job in jobs for r in per_job.get(job.key, [])]
    return records, failures


# --------------------------------------------------------------------------- table

@dataclass
class Row:
    ops: dict = field(default_factory=dict)  # op -> set(inner)


def build_rows(records: list[dict]) -> dict[tuple[str, str, str], Row]:
    """Union of ops over the sample calls of each (api, variant, phase). A variant recorded from
    op_db / module_db samples wins over generic-input calls of the same API."""
    sampled_apis = {r["a"] for r in records if "p" in r and not r.get("g")}
    rows: dict[tuple[str, str, str], Row] = {}
    for r in records:
        if "p" not in r:
            continue
        if r.get("g") and r["a"] in sampled_apis:
            continue
        row = rows.setdefault((r["a"], r["v"], r["p"]), Row())
        for op, inner in r["o"].items():
            row.ops.setdefault(op, set()).update(inner)
    # Drop eval rows identical to the training forward.
    for key in [k for k in rows if k[2] == "eval"]:
        fwd = rows.get((key[0], key[1], "forward"))
        if fwd is not None and set(fwd.ops) == set(rows[key].ops):
            del rows[key]
    return rows


def _phase_rank(p: str) -> int:
    return PHASES.index(p) if p in PHASES else len(PHASES)


def format_rows(rows) -> list[str]:
    from .recorder import neutral_name

    lines = []
    for (api, var, phase) in sorted(rows, key=lambda k: (k[0], k[1], _phase_rank(k[2]))):
        row = rows[(api, var, phase)]
        names = sorted(row.ops)
        inner = ";".join(f"{op}={','.join(sorted(row.ops[op]))}" for op in names if row.ops[op])
        neutral = ";".join(f"{op}={neutral_name(op)}" for op in names if neutral_name(op))
        lines.append("\t".join([api, var, phase, ",".join(names) or "-", inner or "-", neutral or "-"]))
    return lines


def summarize(apis: dict[str, Api], rows, skipped: dict[str, str], private: dict[str, int]):
    ns_order = list(NAMESPACES) + ["torch.Tensor", "torch.nn"]
    per_ns = {ns: {"apis": 0, "covered": 0, "variants": 0, "skipped": 0, "failed": 0, "private": private.get(ns, 0)}
              for ns in ns_order}
    variants_of: dict[str, set] = {}
    for (api, var, phase) in rows:
        variants_of.setdefault(api, set()).add(var)
    for name, api in apis.items():
        s = per_ns[api.ns]
        s["apis"] += 1
        if name in variants_of:
            s["covered"] += 1
            s["variants"] += len(variants_of[name])
        elif name in skipped:
            s["skipped"] += 1
        else:
            s["failed"] += 1
    return per_ns, ns_order


def write_outputs(path: str, apis, rows, skipped, errors, private, torch_version: str, date: str) -> None:
    per_ns, ns_order = summarize(apis, rows, skipped, private)
    skip_path = re.sub(r"\.tsv$", "", path) + ".skipped.txt"
    head = [
        f"# format: {FORMAT}",
        f"# torch: {torch_version}",
        f"# python: {platform.python_version()}",
        f"# generator: xla2tpu_tracer api_ops (tracer/xla2tpu_tracer/api_ops.py)",
        f"# command: {COMMAND.format(v=torch_version)}",
        f"# generated: {date}",
        "# method: each public API called on small CPU inputs (float32; int/bool where the op needs them) under the "
        "tracer's OpRecorder (TorchDispatchMode, post-CompositeImplicit ops); inputs from op_db OpInfo SampleInputs, "
        "module_db ModuleInputs, else generic values built from the ATen schema / signature; forward recorded, then "
        "torch.autograd.grad(outputs, inputs, ones) recorded as backward when an output requires grad; nn modules "
        "also in eval mode (eval row only where its ops differ from forward).",
        "# columns: api (qualified name); variant (call shape: positional parameter names in order, then keyword "
        "names sorted with '=', methods start with 'self', nn modules describe the constructor call); phase "
        "(forward|backward|eval); ops (sorted dispatcher names, '-' none); inner (op=ops its composite-explicit "
        "kernel calls, ';'-separated, '-' none); neutral (op=device-neutral requirement for CPU-specific kernels)",
    ]
    for ns in ns_order:
        s = per_ns[ns]
        head.append(f"# coverage {ns}: {s['covered']}/{s['apis']} APIs, {s['variants']} variants; "
                    f"{s['skipped']} skipped by rule, {s['failed']} without a successful call; "
                    f"{s['private']} private names not enumerated")
    reasons: dict[str, int] = {}
    for why in skipped.values():
        reasons[why] = reasons.get(why, 0) + 1
    for why, cnt in sorted(reasons.items(), key=lambda x: (-x[1], x[0])):
        head.append(f"# skipped {cnt}: {why}")
    head.append(f"# skipped and failed APIs with reasons: {os.path.basename(skip_path)}")
    lines = head + ["\t".join(HEADER)] + format_rows(rows)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    covered = {k[0] for k in rows}
    slines = [f"# format: {FORMAT}-skipped", f"# torch: {torch_version}",
              "# APIs of the enumerated namespaces that have no row in the table, and why", "api\tstatus\treason"]
    for name in sorted(apis):
        if name in covered:
            continue
        if name in skipped:
            slines.append(f"{name}\tskipped\t{skipped[name]}")
        else:
            slines.append(f"{name}\tfailed\t{_clean(errors.get(name, 'no call succeeded'))}")
    with open(skip_path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(slines) + "\n")


def _clean(msg: str) -> str:
    msg = re.sub(r"0x[0-9a-f]+", "0x…", msg)
    return re.sub(r"\s+", " ", msg).strip()[:200]


def _date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%d")
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def generate(output: str, workers: int = 2, timeout: float = 20.0, job_timeout: float = 240.0,
             max_samples: int = 3, only: list[str] | None = None) -> dict:
    import torch

    torch.set_num_threads(1)
    t0 = time.time()
    op_db, module_db = load_catalogues()
    apis, private = enumerate_apis()
    if only:
        keep = set(only)
        apis = {n: a for n, a in apis.items() if n in keep}
    jobs, skipped = plan(apis, op_db, module_db)
    _Ctx.apis, _Ctx.op_db, _Ctx.module_db = apis, op_db, module_db
    _Ctx.max_samples, _Ctx.timeout = max_samples, timeout
    print(f"{len(apis)} APIs, {len(jobs)} jobs, {len(skipped)} skipped by rule "
          f"(catalogues loaded in {time.time() - t0:.0f}s)", file=sys.stderr, flush=True)
    records, failures = run_jobs(jobs, workers, job_timeout)
    # Second round: generic inputs for APIs whose borrowed samples all failed.
    had_generic = {j.apis[0] for j in jobs if j.kind == "generic"}
    with_rows = {r["a"] for r in records if r.get("p") == "forward"}
    again = [Job(f"generic:{n}", "generic", [n]) for n in sorted(apis)
             if apis[n].kind != "module" and n not in with_rows and n not in skipped and n not in had_generic]
    if again:
        print(f"second round: generic inputs for {len(again)} APIs", file=sys.stderr, flush=True)
        more, fail2 = run_jobs(again, workers, job_timeout)
        records += more
        failures.update(fail2)
        jobs = jobs + again
    errors: dict[str, str] = {}
    for r in records:
        if "e" in r and "v" not in r:
            errors.setdefault(r["a"], r["e"])
    for job in jobs:
        if job.key in failures:
            for a in job.apis:
                name = a[0] if isinstance(a, tuple) else a
                errors.setdefault(name, failures[job.key])
    rows = build_rows(records)
    elapsed = time.time() - t0
    write_outputs(output, apis, rows, skipped, errors, private if not only else {}, torch.__version__.split("+")[0],
                  _date())
    return {"apis": len(apis), "rows": len(rows), "jobs": len(jobs), "job_failures": failures,
            "seconds": round(elapsed, 1)}
