//! Replays the fuzzer's corpus (`fuzz/corpus/pipeline`) and its regression inputs
//! (`fuzz/regressions/pipeline`, each a minimised input that once broke the engine) through the
//! properties the fuzz target asserts (`tests/support/properties.rs`), on the stable toolchain.

#[path = "support/properties.rs"]
mod properties;

use std::path::{Path, PathBuf};
use std::time::Instant;

fn inputs(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    files
}

/// Every file in `dir` through the properties; the failures by name.
fn replay(dir: &str) -> (usize, Vec<String>) {
    let files = inputs(dir);
    let mut failures = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("readable");
        if let Err(panic) = std::panic::catch_unwind(|| properties::check_bytes(&bytes)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{}: {message}", file.display()));
        }
    }
    (files.len(), failures)
}

#[test]
fn fuzz_corpus_keeps_every_property() {
    let started = Instant::now();
    let (n, failures) = replay("fuzz/corpus/pipeline");
    println!("replayed {n} corpus inputs in {:.1?}", started.elapsed());
    assert!(n > 0, "fuzz/corpus/pipeline is empty");
    assert!(failures.is_empty(), "{} corpus inputs break a property:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn fuzz_regressions_stay_fixed() {
    let (n, failures) = replay("fuzz/regressions/pipeline");
    println!("replayed {n} regression inputs");
    assert!(failures.is_empty(), "{} regressions are back:\n{}", failures.len(), failures.join("\n"));
}
