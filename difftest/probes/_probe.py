"""Tiny helper shared by the probes: run one API call, print one RESULT line.

Every probe line has the form
    RESULT <name>: OK -> <repr of value>
    RESULT <name>: ERROR <ExceptionType>: <first line of message>
so that run_probes.sh output can be grepped and diffed between runs.
"""
import os
import sys
import traceback


def show(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...<%d chars>" % len(text)


def check(name, fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # SystemExit too: some APIs call sys.exit
        msg = (str(exc).strip().splitlines() or [""])[0]
        print(f"RESULT {name}: ERROR {type(exc).__name__}: {msg[:300]}", flush=True)
        if os.environ.get("PROBE_TRACEBACK"):
            traceback.print_exc()
        return None
    print(f"RESULT {name}: OK -> {show(value)}", flush=True)
    return value


def note(name, text):
    print(f"RESULT {name}: {text}", flush=True)


def env_summary():
    keys = ["PJRT_DEVICE", "CPU_NUM_DEVICES", "XLA_FLAGS", "XLA_USE_SPMD", "PT_XLA_DEBUG_LEVEL"]
    print("ENV " + " ".join(f"{k}={os.environ.get(k, '')!r}" for k in keys), file=sys.stderr, flush=True)
