"""Shared attempt loop for libraries whose models are built from an explicit recipe
(diffusers components, timm families): cpu -> fake -> meta."""

from __future__ import annotations

import time

from .output import phase_coverage
from . import phases
from .phases import PhaseError, make_env, run_phases
from .recorder import OpRecorder


def _short(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:300]


def trace_recipe(build, make_call, deadline, variant="tiny", envs=("cpu", "fake", "meta"), class_name=None,
                 recorder_cls=OpRecorder):
    """``build()`` -> model (called inside the env); ``make_call(model)`` -> call(m, training)."""
    first_reason = None
    for env_kind in envs:
        if time.time() > deadline - 3:
            break
        method = f"{variant}/{env_kind}"
        env = make_env(env_kind)
        phases.ATTEMPT = method
        rec = recorder_cls()
        notes, failure, failed_phase = [], None, None
        try:
            with env():
                model = build()
                notes += run_phases(model, make_call(model), rec, env)
        except PhaseError as e:
            failure = f"{e.phase} failed: {_short(e.err)}"
            failed_phase = e.phase
        except Exception as e:  # noqa: BLE001
            failure = f"init: {_short(e)}"
            failed_phase = "init"
        if failure and first_reason is None:
            first_reason = failure
        if rec.stats and (failure is None or not failure.startswith("inference")):
            return {
                "status": "partial" if failure else "ok", "method": method,
                "classes": [class_name] if class_name else [], "notes": notes + ([failure] if failure else []),
                "stats": rec.stats, "data_dependent": sorted(rec.data_dependent), "reason": failure or "",
                "coverage": {class_name or "model": phase_coverage(failed_phase)},
            }
    return {"status": "error", "method": f"{variant}/{envs[0]}", "reason": first_reason or "no attempt ran"}
