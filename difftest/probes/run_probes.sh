#!/usr/bin/env bash
# Re-run every torch_xla-on-CPU probe in difftest/.venv (see ../README.md, FACTS).
# Usage: probes/run_probes.sh [OUTDIR]   (default: a fresh temp dir)
# Prints each probe's stdout RESULT lines; full stdout/stderr are kept in OUTDIR.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$here/../.venv/bin/python}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
export PJRT_DEVICE=CPU
unset XLA_FLAGS CPU_NUM_DEVICES XLA_USE_SPMD
cd "$here"

run() {  # run NAME TIMEOUT [env VAR=..] python-args...
    local name="$1" limit="$2"; shift 2
    local t0=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr" </dev/null
    rc=$?
    echo "=== $name  (exit $rc, $((SECONDS - t0))s)  cmd: ${*/#$py/python}"
    if grep -qE '^(RESULT|WORKER)' "$out/$name.stdout"; then
        grep -E '^(RESULT|WORKER)' "$out/$name.stdout" | cut -c1-400
    else
        head -20 "$out/$name.stdout"
    fi
    local n; n=$(grep -c . "$out/$name.stderr")
    if [ "$n" -gt 0 ]; then
        echo "--- stderr: $n non-empty lines; distinct (first 8, numbers masked):"
        sed -E 's/[0-9]+/N/g' "$out/$name.stderr" | grep . | sort | uniq -c | sort -rn | head -8
    fi
}

run p00_noise 120 "$py" p00_noise.py
run p00_noise_no_pjrt_env 120 env -u PJRT_DEVICE "$py" p00_noise.py
run p00_noise_pjrt_tpu 120 env PJRT_DEVICE=TPU "$py" p00_noise.py
run p01_devices 120 "$py" p01_devices.py
run p02_sync 120 "$py" p02_sync.py
run p03_collectives 120 "$py" p03_collectives.py
run p03_collectives_always_allreduce 120 env XLA_ALWAYS_ALLREDUCE=1 "$py" p03_collectives.py
run p04_optimizer_save 120 "$py" p04_optimizer_save.py
run p05_rng 120 "$py" p05_rng.py
run p06_loaders 120 "$py" p06_loaders.py
for m in none 1 2 none_fork 1_fork 2_fork launch launch_debug_single after_init after_init_1; do
    run "p07_spawn_$m" 180 "$py" p07_spawn.py "$m"
done
for m in none none_nocollective 2 none_fork launch; do
    run "p07_spawn_${m}_cpu_num_devices_2" 180 env CPU_NUM_DEVICES=2 "$py" p07_spawn.py "$m"
done
for m in standalone standalone_plain_import standalone_env ddp spawned; do
    run "p08_dist_$m" 180 "$py" p08_dist.py "$m"
done
run p09_compile 300 "$py" p09_compile.py
run p10_amp 180 "$py" p10_amp.py
run p11_spmd_default 180 "$py" p11_spmd.py
run p11_spmd_cpu_num_devices_4 180 env CPU_NUM_DEVICES=4 "$py" p11_spmd.py
run p11_spmd_xla_flags_4 180 env XLA_FLAGS=--xla_force_host_platform_device_count=4 "$py" p11_spmd.py
run p12_fsdp 180 "$py" p12_fsdp.py
for m in server eager cache cache_late; do
    run "p13_misc_$m" 120 "$py" p13_misc.py "$m"
done
run p14_mlp_parity 300 "$py" p14_mlp_parity.py 5
run p14_mlp_parity_100_steps 300 "$py" p14_mlp_parity.py 100
run p15_timing 120 "$py" p15_timing.py
echo "full outputs: $out"
