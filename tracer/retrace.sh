#!/usr/bin/env bash
# Re-run everything that derives from one type's tiny config and inputs, after a change to its
# recipe (xla2tpu_tracer/hf_types) or to the generic builders: the float32 and bf16 op profiles,
# the profiler crosscheck and the execution on the emulated chip, for the ids given
# (transformers/llama or bare names). A trace that does worse keeps the earlier profile.
#   tracer/retrace.sh glm4v videomae ...        (from the repository root; jobs: $JOBS, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: tracer/retrace.sh ID..." >&2; exit 2; }
py() { PYTHONPATH=tracer nice -n 10 tracer/.venv/bin/python -m xla2tpu_tracer "$@"; }
jobs=${JOBS:-2}
py trace --out corpus/ops --only "$@" --retry-failed --jobs "$jobs" --timeout 120
py trace --precision bf16 --out corpus/ops-bf16 --only "$@" --retry-failed --jobs "$jobs" --timeout 120
py crosscheck --ops corpus/ops --out corpus/crosscheck --only "$@" --force --jobs "$jobs"
(cd tracer && PYTHONPATH=. nice -n 10 .venv/bin/python -m xla2tpu_tracer execute --out ../corpus/exec \
    --ops ../corpus/ops --only "$@" --force --jobs "$jobs")
