"""Device rules of a real backend for the tpu kernels.

The emulator's kernels run CPU kernels on CPU aliases of their tpu arguments,
so a CPU tensor mixed into a tpu op would silently work. A device backend's
kernels do not allow that, and neither do these checks:

- PyTorch's codegen gives every kernel of a device backend a device check
  (torchgen `gen_device_check`): the out= and positional tensor arguments must
  all be on one device, 0-dim tensors included, unless native_functions.yaml
  says `device_check: NoCheck` (CUDA raises "Expected all tensors to be on the
  same device, but got ..."; torch_xla raises "Expected XLA tensor").
- NoCheck ops marked `# TensorIterator` (and the foreach ops, whose slow path
  runs per-element TensorIterator ops) check devices inside TensorIterator:
  CPU 0-dim tensors pass as scalars, index tensors of `index`/`index_put_` may
  stay on the CPU, anything else on another device raises "Expected all
  tensors to be on the same device, but found at least two devices, ...".
- Other NoCheck ops (copies, views, `to`, `set_`, ...) take any device.

The rules come from the installed torch's own native_functions.yaml (torchgen
ships it), read with a line scan at the first check (a few ms, no YAML parser).
"""

import collections
import importlib.util
import os
import sys

import torch

from xla2tpu_emulator import report

EXACT = "exact"
ITER = "iter"
NONE = "none"

_rules = None  # op name ("aten::add.Tensor") -> ITER | NONE; absent = EXACT
_source = None  # path of the yaml read, or None if torch ships none
_plans = {}  # OpOverload -> None (no check) or (checker, op name, [Arg])

# A tensor-like schema argument: position, name, keyword-only, kind ("t" for
# Tensor/Tensor?, "l" for Tensor[], "ol" for Tensor?[]) and whether it is an
# out= argument.
Arg = collections.namedtuple("Arg", "pos name kwonly kind out")


def native_functions_path():
  spec = importlib.util.find_spec("torchgen")
  for root in (spec.submodule_search_locations or []) if spec else []:
    p = os.path.join(root, "packaged", "ATen", "native", "native_functions.yaml")
    if os.path.exists(p):
      return p
  return None


def parse(lines):
  """{op name: ITER | NONE} for the NoCheck entries of native_functions.yaml."""
  rules = {}
  name = None
  for line in lines:
    if line.startswith("- func:"):
      sig = line[len("- func:"):].strip()
      name = "aten::" + sig.split("(", 1)[0].strip()
    elif name is not None and line.lstrip().startswith("device_check:"):
      value, _, comment = line.split(":", 1)[1].partition("#")
      if value.strip() == "NoCheck":
        iterator = "TensorIterator" in comment or "foreach" in comment
        rules[name] = ITER if iterator else NONE
  return rules


def _load():
  global _rules, _source
  _source = native_functions_path()
  if _source is None:
    _rules = {}
    report.warning(
        "device_check_unavailable",
        "torch ships no torchgen/packaged/ATen/native/native_functions.yaml:"
        " the emulator did not check that tpu ops get all their tensors on"
        " tpu (a tensor left on the CPU may pass here and fail on the chip)",
    )
    return
  with open(_source, encoding="utf-8") as f:
    _rules = parse(f)


def rule(name):
  if _rules is None:
    _load()
  if not _source:
    return NONE
  if name.startswith("aten::_foreach_"):
    return ITER
  return _rules.get(name, EXACT)


def _tensor_args(op):
  """The tensor-like arguments of `op`'s schema, as [Arg]."""
  args = []
  for i, a in enumerate(op._schema.arguments):  # pylint: disable=protected-access
    t = str(a.type)
    if t in ("Tensor", "Optional[Tensor]"):
      kind = "t"
    elif t == "List[Tensor]":
      kind = "l"
    elif t == "List[Optional[Tensor]]":
      kind = "ol"
    else:
      continue
    out = a.alias_info is not None and a.alias_info.is_write and a.kwarg_only
    args.append(Arg(i, a.name, a.kwarg_only, kind, out))
  return args


def _values(args, kwargs, spec):
  if not spec.kwonly and spec.pos < len(args):
    v = args[spec.pos]
  else:
    v = kwargs.get(spec.name)
  if v is None:
    return ()
  if spec.kind == "t":
    return (v,) if isinstance(v, torch.Tensor) else ()
  return tuple(x for x in v if isinstance(x, torch.Tensor))


def check(op, args, kwargs):
  """Raises as a device backend would if `op`'s tensors are on two devices.

  Runs before every tpu kernel: what depends only on the op is worked out on
  its first call."""
  try:
    plan = _plans[op]
  except KeyError:
    plan = _plans[op] = _plan(op)
  if plan is not None:
    checker, name, specs = plan
    checker(name, specs, args, kwargs)


def _plan(op):
  name = op.name()
  how = rule(name)
  if how == NONE:
    return None
  return (_check_exact if how == EXACT else _check_iter), name, _tensor_args(op)


def _check_exact(name, specs, args, kwargs):
  # torchgen checks out= then positional arguments; inputs go first here, so
  # that an output allocated from a CPU input's options (bmm's meta uses
  # mat2's) is not what the message blames.
  ordered = [s for s in specs if not s.kwonly] + [s for s in specs if s.out]
  common = None
  for spec in ordered:
    for t in _values(args, kwargs, spec):
      if common is None:
        common, first = t.device, spec
      elif t.device != common:
        msg = _exact_message(name, spec.name, t, common, specs, args, kwargs)
        fail(name, msg, _blamed(t, spec, first))


def _exact_message(name, arg, t, common, specs, args, kwargs):
  if "convolution" in name:
    # The convolution kernels compare types before codegen's check would.
    vals = {s.name: _values(args, kwargs, s) for s in specs}
    inp, weight = vals.get("input", ()), vals.get("weight", ())
    if inp and weight and inp[0].device != weight[0].device:
      return (
          f"Input type ({_type_name(inp[0])}) and weight type"
          f" ({_type_name(weight[0])}) should be the same or input should be"
          " a MKLDNN tensor and weight is a dense tensor"
      )
  return (
      f"Expected all tensors to be on the same device, but got {arg} is on"
      f" {t.device}, different from other tensors on {common} (when checking"
      f" argument in method {name})"
  )


def _type_name(t):
  base = t.type()  # "torch.FloatTensor"; tpu tensors have no legacy type name
  if t.device.type == "tpu" and not base.startswith("torch.tpu."):
    return base.replace("torch.", "torch.tpu.", 1)
  return base


def _check_iter(name, specs, args, kwargs):
  common = None
  first = None
  seen = []
  for spec in specs:
    if spec.kind == "ol":
      continue  # index tensors: moved to the device by the kernel
    for t in _values(args, kwargs, spec):
      seen.append((spec, t))
      if common is None and not _cpu_scalar(t, spec):
        common, first = t.device, spec
  if common is None:
    return
  for spec, t in seen:
    if t.device != common and not _cpu_scalar(t, spec):
      msg = (
          "Expected all tensors to be on the same device, but found at least"
          f" two devices, {common} and {t.device}!"
      )
      fail(name, msg, _blamed(t, spec, first))


def _cpu_scalar(t, spec):
  return t.device.type == "cpu" and t.dim() == 0 and not spec.out


def _blamed(t, spec, first):
  """The argument not on tpu: `t`'s, unless `t` is the tpu one and the
  tensors seen first (argument `first`) were elsewhere."""
  return spec.name if t.device.type != "tpu" else first.name


def fail(name, msg, arg):
  """Records the mix-up at the user's line, naming the off-device argument,
  and raises torch's error (marked as reported)."""
  report.incompatibility(
      "device_mismatch", msg, op=name, frame=sys._getframe(1), argument=arg  # pylint: disable=protected-access
  )
  raise report.reported(RuntimeError(msg))
