"""An independent second tracing of every traced type, to check the committed profiles.

The profiles come from ``OpRecorder``, a ``TorchDispatchMode`` (sometimes on FakeTensor or
meta tensors). The crosscheck builds the same model with the same inputs, runs the same
three phases on REAL CPU tensors, and records with the PyTorch profiler instead: Kineto's
RecordFunction events, which the dispatcher emits for every operator call at every level
(CompositeImplicit ops, their decompositions, and ops that kernels call internally).

Normalisation of the profiler's view to the profiles' view (the dispatch mode sees the
post-CompositeImplicitAutograd op set, one level: what reaches the Python dispatch key):

- keep ``aten::`` events whose op is not decomposed (no CompositeImplicitAutograd kernel)
  and whose nearest ``aten::`` ancestor event is absent (called from Python or from an
  autograd node such as ``AddmmBackward0``) or decomposed. An op called from inside a
  real kernel (``aten::empty`` in ``native_layer_norm``, ``aten::index_select`` in
  ``aten::embedding``) is below the dispatch mode's view and dropped; ``inner`` lists in
  the profiles are a separate, composite-explicit-only view and are not compared.
- overloads: the profiler names the operator packet (``aten::add``), not the overload.
  The overload is resolved by matching the event's recorded inputs (argument count, and
  per argument tensor / scalar / list, from ``input_dtypes``) against the packet's schemas.
  When exactly one schema matches, that overload is the op; when several match (e.g.
  overloads that differ only in an argument's scalar type), ``candidates`` keeps all of
  them and the op counts as seen by the profile if the profile has any of them. Whether
  an event is decomposed is decided on the resolved overloads: decomposed only if every
  candidate is CompositeImplicit, so an unresolvable event is kept, which can only lower
  agreement, never raise it.
- ``prim::`` and non-aten events (autograd nodes, ``detach``) are dropped, as they need no
  backend kernel; the same ``neutral`` mapping as the profiles is applied on both sides.

Agreement for a type = |P ∩ X| / |X|: of the ops the crosscheck saw (X), the share the
profile (P) has. Ops only in P (e.g. from fake-tensor branches) do not count against it.
"""

from __future__ import annotations

import glob
import json
import os
import time

import torch

from . import output
from .recorder import OpStats, runs_composite_on_cpu

SCHEMA = 1
_SPECIAL = frozenset({"Scalar", "ScalarList", "TensorList", "GenericList", ""})

_schemas: dict[str, list] | None = None


def _schemas_by_packet() -> dict[str, list]:
    """Dispatcher-registered schemas per packet (the JIT also lists ``prim_*`` overloads that
    never reach the dispatcher)."""
    global _schemas
    if _schemas is None:
        _schemas = {}
        for s in torch._C._jit_get_all_schemas():
            if not s.name.startswith("aten::"):
                continue
            try:
                torch._C._dispatch_find_schema_or_throw(s.name, s.overload_name)
            except RuntimeError:
                continue
            _schemas.setdefault(s.name, []).append(s)
    return _schemas


def overload_name(schema) -> str:
    o = schema.overload_name
    return f"{schema.name}.{o}" if o and o != "default" else schema.name


def decomposed(name: str) -> bool:
    """True if the overload runs a CompositeImplicitAutograd kernel on CPU: the dispatch
    mode never sees it, only what it decomposes into."""
    return runs_composite_on_cpu(name, "CompositeImplicitAutograd")


def real_siblings(packet: str) -> list[str]:
    """Functional overloads of ``packet`` that run a real kernel."""
    return sorted(overload_name(s) for s in _schemas_by_packet().get(packet, [])
                  if not any(a.is_out for a in s.arguments) and not decomposed(overload_name(s)))


def _arg_fits(typ: str, got: str) -> bool:
    """Can an argument of schema type ``typ`` have been recorded as ``got`` (a tensor dtype
    name such as ``float``, or ``Scalar``/``ScalarList``/``TensorList``/``GenericList``/"")?"""
    optional = typ.startswith("Optional[")
    base = typ[len("Optional["):-1] if optional else typ
    tensor_in = got not in _SPECIAL
    if got == "":
        return True  # None, or a type the profiler does not name (str, Device, ...)
    if base == "Tensor":
        return tensor_in
    if base.startswith("List[") and "Tensor" in base:
        return got in ("TensorList", "GenericList")
    if base.startswith("List["):
        return got in ("ScalarList", "GenericList")
    if base in ("number", "int", "float", "bool", "complex", "SymInt", "Scalar"):
        return got == "Scalar"
    return True


def resolve(packet: str, in_dtypes) -> list[str]:
    """Overload names of ``packet`` whose schema fits the recorded inputs (may be several)."""
    schemas = _schemas_by_packet().get(packet, [])
    n = len(in_dtypes)
    fits = [s for s in schemas if len(s.arguments) == n
            and all(_arg_fits(str(a.type), d) for a, d in zip(s.arguments, in_dtypes))]
    if not fits:  # profiler left out trailing defaults, or an unknown encoding: packet level
        fits = schemas
    # An out= variant fits whenever its functional twin does (one more tensor argument);
    # models call the functional form, so out variants count only if nothing else fits.
    functional = [s for s in fits if not any(a.is_out for a in s.arguments)]
    fits = functional or fits
    return sorted({overload_name(s) for s in fits}) or [packet]


def _equivalents(name: str, via_engine: bool) -> list[str]:
    """Ops the dispatch mode sees in place of ``name`` because the mode itself changes the
    path taken (observer effects, measured on bert/llama; see corpus/crosscheck/README.md):

    - ``aten::reshape`` (CompositeImplicit) returns ``_reshape_alias`` unless
      ``isTensorSubclassLike``, which is true whenever a dispatch mode is active: then ``view``.
    - ``index`` backward calls ``_index_put_impl_`` unless the grad is subclass-like
      (again: a mode is active), then ``index_put``.
    - the autograd engine accumulates a gradient that reaches a node twice with ``add_``
      only if the buffer's use_count is 1; the mode's Python wrappers hold a reference,
      so under the mode it is the out-of-place ``add.Tensor``.
    """
    if name == "aten::_reshape_alias":
        return ["aten::view"]
    if name == "aten::add_.Tensor" and via_engine:
        return ["aten::add.Tensor"]
    if name == "aten::_index_put_impl_":
        # index's backward formula takes out-of-place index_put for subclass-like grads
        return ["aten::index_put", "aten::index_put_"]
    return []


class ProfilerRecorder:
    """Drop-in for ``OpRecorder`` in ``phases.run_phases`` (``phase``, context manager,
    ``stats``, ``merge_into``, ``data_dependent``), recording with ``torch.profiler``."""

    def __init__(self, capture_inner: bool = False):
        self.phase = "inference"
        self.stats: dict[str, OpStats] = {}
        self.data_dependent: set[str] = set()
        self._prof = None

    def __enter__(self):
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc):
        prof, self._prof = self._prof, None
        prof.__exit__(*exc)
        self._collect(prof.events())
        return False

    def _collect(self, events) -> None:
        info = {}  # id(event) -> (candidates, decomposed)

        def classify(e):
            key = id(e)
            if key not in info:
                cands = resolve(e.name, list(e.input_dtypes or []))
                dec = all(decomposed(c) for c in cands)
                if dec and "upsample" in e.name and not any(c.name == e.name for c in e.cpu_children):
                    # The upsample_*.vec overloads are CompositeImplicit and call their real
                    # sibling (upsample_nearest2d) without an event of its own: the dispatch
                    # mode sees the sibling, so the event stands for it. (Not a general rule:
                    # min.other also has no same-packet child but decomposes to minimum.)
                    real = real_siblings(e.name)
                    if real:
                        cands, dec = real, False
                info[key] = (cands, dec)
            return info[key]

        kept = []
        for e in events:
            if not e.name.startswith("aten::"):
                continue
            cands, dec = classify(e)
            if dec:
                continue
            # Seen by the dispatch mode only if no enclosing aten op ran a real kernel: a
            # real kernel's own calls never reach the Python key (the mode is popped).
            parent, below_kernel, via_engine = e.cpu_parent, False, False
            while parent is not None:
                if parent.name.startswith("aten::") and not classify(parent)[1]:
                    below_kernel = True
                    break
                if parent.name.startswith("autograd::engine::evaluate_function") and parent is e.cpu_parent:
                    via_engine = True
                parent = parent.cpu_parent
            if not below_kernel:
                kept.append((e, cands, via_engine, e.cpu_parent is None))
        kept.sort(key=lambda k: (k[0].thread, k[0].time_range.start))
        skip = set()
        for i, (e, _, _, top) in enumerate(kept):
            # torch.tensor(data): internal_new_from_data runs empty + to before and detach_
            # after lift_fresh with the Python key excluded; the dispatch mode sees only
            # aten::lift_fresh, whatever the model.
            if e.name == "aten::lift_fresh" and top:
                j = i - 1
                while j >= 0 and kept[j][3] and kept[j][0].name in ("aten::to", "aten::empty") and i - j <= 2:
                    skip.add(j)
                    j -= 1
                if i + 1 < len(kept) and kept[i + 1][3] and kept[i + 1][0].name == "aten::detach_":
                    skip.add(i + 1)
        for i, (e, cands, via_engine, _) in enumerate(kept):
            if i in skip:
                continue
            name = cands[0] if len(cands) == 1 else e.name
            st = self.stats.setdefault(name, OpStats())
            st.count += 1
            st.phases.add(self.phase)
            # Overload candidates ("?") and dispatch-mode equivalents ("=") travel in the
            # stats' inner set, which the runner passes through to make_file.
            if len(cands) > 1:
                st.inner.update("?" + c for c in cands)
            st.inner.update("=" + c for c in _equivalents(name, via_engine))
            if name == "aten::index.Tensor" and "bool" in (e.input_dtypes or [])[1:]:
                self.data_dependent.add(name)

    def merge_into(self, acc: dict) -> None:
        for name, st in self.stats.items():
            dst = acc.setdefault(name, OpStats())
            dst.count += st.count
            dst.phases |= st.phases
            dst.inner |= st.inner


def warm_up() -> None:
    """Kineto's first session costs ~4 s; pay it once in the parent before forking."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True):
        torch.ones(1).add(1)


# ---------------------------------------------------------------------------- tracing
def _profile_method(out_ops: str | None, target_id: str) -> str:
    if out_ops:
        path = output.profile_path(out_ops, target_id)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f).get("method", "")
    return ""


def trace(target, deadline: float, ops_dir: str | None = "corpus/ops") -> dict:
    """Real-tensor, profiler-recorded tracing of one target, with the profile's config variant."""
    if target.library == "transformers":
        from . import hf

        head, base = hf.classes_for(target.name)
        class_list = ([(head[0], head[1])] if head else []) + ([("base", base)] if base else [])
        if not class_list:
            return {"status": "no_model_class", "reason": "no class in any auto model mapping"}
        # tiny/cpu first (cheap; widths do not change the op set), then the profile's own
        # variant if that was `layers`. Real tensors at default widths can exceed the RSS
        # cap, so the tiny result is checkpointed first and survives a killed worker.
        variants = ["tiny"]
        if _profile_method(ops_dir, target.id).startswith("layers/"):
            variants.append("layers")
        best = first_err = None
        for v in variants:
            if time.time() > deadline - 3:
                break
            res = hf._attempt(target.name, class_list, v, "cpu", recorder_cls=ProfilerRecorder)
            if res["status"] == "ok":
                return res
            if res["status"] == "partial" and (best is None or res["severity"] < best["severity"]):
                best = res
                from .runner import checkpoint

                checkpoint(best)
            if res["status"] != "partial" and first_err is None:
                first_err = res
        return best or first_err or {"status": "error", "method": "tiny/cpu", "reason": "no attempt ran"}
    # Every other library is a generic recipe: the same recipe on real tensors, other recorder.
    from . import targets

    return targets.trace(target, deadline, envs=("cpu",), recorder_cls=ProfilerRecorder)


def make_file(target, res: dict, versions: dict) -> dict:
    """The crosscheck JSON of one type (written by the runner in place of a profile)."""
    ops = []
    for o in res.get("ops", []):
        entry = {"op": o["op"], "count": o["count"], "phases": o["phases"]}
        cands = sorted(c[1:] for c in o.get("inner", []) if c.startswith("?"))
        if cands:
            entry["candidates"] = cands
        equiv = sorted(c[1:] for c in o.get("inner", []) if c.startswith("="))
        if equiv:
            entry["equivalent"] = equiv
        if "neutral" in o:
            entry["neutral"] = o["neutral"]
        ops.append(entry)
    return {
        "schema": SCHEMA,
        "id": target.id,
        "library": target.library,
        "name": target.name,
        "method": res.get("method", "") + "/profiler",
        "status": res["status"],
        "reason": res.get("reason", ""),
        "classes": sorted(res.get("classes", [])),
        "coverage": dict(sorted(res.get("coverage", {}).items())),
        "versions": output.profile_versions(versions, target.library),
        "ops": sorted(ops, key=lambda o: o["op"]),
    }


# ---------------------------------------------------------------------------- comparison
def profile_keys(prof: dict) -> set[str]:
    """Op names of a profile plus ``neutral:<name>`` for its device-specific kernels."""
    keys = set()
    for o in prof["ops"]:
        keys.add(o["op"])
        if "neutral" in o:
            keys.add("neutral:" + o["neutral"])
    return keys


def compare(prof: dict, cross: dict, equivalents: bool = True) -> tuple[int, int, list[str]]:
    """(matched, seen by the crosscheck, missed op names) for one type. A crosscheck op is
    matched if the profile has it (or one of its overload ``candidates``), one of its
    dispatch-mode ``equivalent`` ops, or its neutral name. tests/ops_crosscheck.rs
    implements the same rule."""
    have = profile_keys(prof)
    seen = matched = 0
    missed = []
    for o in cross["ops"]:
        if not o["op"].startswith("aten::"):
            continue
        seen += 1
        keys = set(o.get("candidates") or [o["op"]])
        if equivalents:
            keys |= set(o.get("equivalent", []))
        if o.get("neutral"):
            keys.add("neutral:" + o["neutral"])
        if keys & have:
            matched += 1
        else:
            missed.append(o["op"])
    return matched, seen, missed


def _load_dir(d: str) -> dict[str, dict]:
    out = {}
    for path in glob.glob(os.path.join(d, "*", "*.json")):
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
        if "id" in obj:
            out[obj["id"]] = obj
    return out


def report(ops_dir: str, cross_dir: str, worst: int = 25) -> dict:
    profs = _load_dir(ops_dir)
    cross = _load_dir(cross_dir)
    rows, failures, missing = [], [], []
    tot_m = tot_s = raw_m = 0
    for tid in sorted(profs):
        x = cross.get(tid)
        if x is None:
            missing.append(tid)
            continue
        if x["status"] not in output.GOOD:
            failures.append((tid, x["status"], x.get("reason", "")))
            continue
        m, s, missed = compare(profs[tid], x)
        raw_m += compare(profs[tid], x, equivalents=False)[0]
        tot_m += m
        tot_s += s
        rows.append({"id": tid, "agreement": m / s if s else 1.0, "matched": m, "seen": s, "missed": missed,
                     "profile_method": profs[tid].get("method", ""), "profile_status": profs[tid]["status"],
                     "cross_status": x["status"]})
    return {"overall": tot_m / tot_s if tot_s else 0.0, "raw": raw_m / tot_s if tot_s else 0.0, "matched": tot_m, "seen": tot_s, "types": rows,
            "failures": failures, "missing": missing, "profiles": len(profs),
            "worst": sorted(rows, key=lambda r: (r["agreement"], r["id"]))[:worst]}


def format_report(rep: dict) -> str:
    lines = [f"overall agreement: {100 * rep['overall']:.2f}% ({rep['matched']}/{rep['seen']} ops seen by the "
             f"crosscheck are in the profiles), {len(rep['types'])} types compared of {rep['profiles']} profiles",
             f"without the dispatch-mode equivalents (README, observer effects): {100 * rep['raw']:.2f}%",
             f"crosscheck failures: {len(rep['failures'])}; profiles without a crosscheck file: {len(rep['missing'])}"]
    under = [r for r in rep["types"] if r["agreement"] < 0.9]
    lines.append(f"types under 90%: {len(under)}")
    lines += ["", "| type | agreement | seen | profile | crosscheck | missed ops |", "|---|---:|---:|---|---|---|"]
    for r in rep["worst"]:
        if r["agreement"] >= 1.0:
            break
        lines.append(f"| {r['id']} | {100 * r['agreement']:.1f}% | {r['seen']} | {r['profile_method']} "
                     f"{r['profile_status']} | {r['cross_status']} | {', '.join(r['missed'])} |")
    if rep["failures"]:
        lines += ["", "failures:"] + [f"- {t}: {s}: {why}" for t, s, why in rep["failures"]]
    if rep["missing"]:
        lines += ["", "no crosscheck file: " + ", ".join(rep["missing"])]
    return "\n".join(lines) + "\n"
