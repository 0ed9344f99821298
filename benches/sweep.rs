//! Benchmark of the offline sweep over the embedded snapshot (`harness = false`; see
//! src/sweep/NOTES_FOR_INTEGRATOR.md). Run: `cargo bench --bench sweep` (SWEEP_BENCH_ITERS=N).
//! Times the library stages and the release binary end to end, process start included.
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use xla2tpu::ops::{Profiles, Registry};
use xla2tpu::sweep::report::{self, Format};
use xla2tpu::sweep::{Options, models, sweep};

fn main() {
    let iters: usize = std::env::var("SWEEP_BENCH_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let started = Instant::now();
    let profiles = Profiles::embedded();
    let tpu = Registry::builtin("torchtpu-0.2.0").expect("builtin backend");
    let xla = Registry::builtin("torch_xla-2.9").expect("builtin backend");
    println!("one-off setup (parse embedded profiles + two registries): {:?}", started.elapsed());
    println!("{} profiles; {iters} iterations per stage; min / median / max\n", profiles.ids().len());

    let list = bench("load embedded snapshot + top 5000", iters, || models::embedded().top(5000));
    let opts = Options::default();
    let r = bench("sweep --top 5000", iters, || sweep(&list, profiles, &tpu, None, &opts));
    bench("sweep --top 5000 --compare torch_xla-2.9", iters, || sweep(&list, profiles, &tpu, Some(&xla), &opts));
    for format in [Format::Text, Format::Json, Format::Md, Format::Html, Format::Csv] {
        bench(&format!("render {format:?}"), iters, || report::render(&r, format));
    }

    // Set by Cargo for benches of this package; absent when the file is built elsewhere.
    if let Some(exe) = option_env!("CARGO_BIN_EXE_xla2tpu") {
        bench("binary: xla2tpu sweep --top 5000 (end to end)", iters.min(10), || {
            let out = Command::new(exe).args(["sweep", "--top", "5000"]).output().expect("run the binary");
            assert!(out.status.success());
        });
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status")
        && let Some(line) = status.lines().find(|l| l.starts_with("VmHWM"))
    {
        println!("\npeak RSS of this benchmark process: {}", line.trim_start_matches("VmHWM:").trim());
    }
}

fn bench<T>(name: &str, iters: usize, mut f: impl FnMut() -> T) -> T {
    let mut times: Vec<Duration> = Vec::with_capacity(iters);
    let mut last = None;
    for _ in 0..iters.max(1) {
        let t = Instant::now();
        last = Some(black_box(f()));
        times.push(t.elapsed());
    }
    times.sort();
    println!("{name:<50} {:>10.2?} {:>10.2?} {:>10.2?}", times[0], times[times.len() / 2], times[times.len() - 1]);
    last.expect("at least one iteration")
}
