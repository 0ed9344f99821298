//! Where a `check` or `migrate` run spends its time, phase by phase. `XLA2TPU_TIMINGS=1` prints
//! the breakdown to standard error at the end of the run (`bench/vs-ruff` reads it). Workers run
//! in parallel, so a phase's time is summed over threads: the phases add up to CPU time, not wall
//! time. Timing a phase costs two clock reads, so it is always on and only the report is optional.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Discovery: walking directories, configuration lookups, excludes.
    Walk,
    /// Reading a file and checking it is UTF-8 text.
    Read,
    /// Deciding from its bytes whether any rule could match it.
    Prefilter,
    /// Parsing (every pass of `migrate` included).
    Parse,
    /// Binding names, resolving them and matching rules.
    Semantic,
    /// Applying fixes and building diffs (`migrate`).
    Fix,
    /// Locating, framing and printing findings.
    Render,
}

const PHASES: [(Phase, &str); 7] = [
    (Phase::Walk, "walk"),
    (Phase::Read, "read"),
    (Phase::Prefilter, "prefilter"),
    (Phase::Parse, "parse"),
    (Phase::Semantic, "semantic model"),
    (Phase::Fix, "fix"),
    (Phase::Render, "render"),
];

static NANOS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];
static COUNTS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];

/// Run `f`, counting its time towards `phase`.
pub fn time<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    NANOS[phase as usize].fetch_add(nanos, Ordering::Relaxed);
    COUNTS[phase as usize].fetch_add(1, Ordering::Relaxed);
    out
}

/// Run `f` inside a timed `phase` without counting its time there: a walk waiting for the
/// workers to catch up is not walking. The enclosing [`time`] adds the elapsed time back
/// (the counter wraps, so the order of the two does not matter).
pub fn excluded<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    NANOS[phase as usize].fetch_sub(nanos, Ordering::Relaxed);
    out
}

/// The breakdown as one line, when `XLA2TPU_TIMINGS` asks for it.
pub fn report() -> Option<String> {
    std::env::var_os("XLA2TPU_TIMINGS").filter(|v| !v.is_empty() && v != "0")?;
    Some(breakdown())
}

/// The breakdown as one line (`--verbose`).
pub fn breakdown() -> String {
    let parts: Vec<String> = PHASES
        .iter()
        .map(|&(phase, name)| {
            let ms = NANOS[phase as usize].load(Ordering::Relaxed) as f64 / 1e6;
            let n = COUNTS[phase as usize].load(Ordering::Relaxed);
            format!("{name} {ms:.1} ms ({n})")
        })
        .collect();
    format!("timings (ms summed over threads, calls in parentheses): {}", parts.join(", "))
}
