//! A test that cannot run here (no venv, no wheel) says so where a person sees it. libtest
//! captures a passing test's `eprintln!`, so a skip goes to the real stderr at once and again
//! after the binary's `test result:` line; under CI (the `XLA2TPU_REQUIRE_*` variable set by
//! `scripts/test`) it fails instead.
#![allow(dead_code)] // each test binary uses what it needs

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SUMMARY: Once = Once::new();

/// Fails when `require` is set; otherwise records that the calling test did not run, and why.
pub fn skip(require: &str, why: &str) {
    assert!(std::env::var_os(require).is_none(), "{why} ({require} is set)");
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
    SKIPPED.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{test}: {why}"));
    // SAFETY: `summary` is a plain extern "C" function with no arguments, as atexit requires.
    SUMMARY.call_once(|| unsafe {
        libc::atexit(summary);
    });
}

extern "C" fn summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let mut err = std::io::stderr().lock();
    let tests: std::collections::BTreeSet<&str> = skipped.iter().filter_map(|s| s.split(": ").next()).collect();
    let _ = writeln!(err, "\n{} test(s) SKIPPED, not run (scripts/test prepares what they need):", tests.len());
    for s in skipped.iter() {
        let _ = writeln!(err, "  {s}");
    }
}

/// The pinned torch 2.15 venv's Python (`tracer/setup_venv.sh`), or `None` after a skip.
pub fn tracer_python() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tracer/.venv/bin/python");
    if p.is_file() {
        return Some(p);
    }
    skip("XLA2TPU_REQUIRE_TRACER", "tracer/.venv not found (scripts/test creates it)");
    None
}
