//! Throughput of `check` (parse + resolve + match) and `migrate` (to a
//! fixpoint) on the corpus programs, single-threaded, plus one large file to
//! catch super-linear behaviour. Run with `cargo bench --bench migrate`.

use std::path::Path;
use std::time::{Duration, Instant};

use xla2tpu::migrate::rules::RuleSet;
use xla2tpu::migrate::{Selection, lint, migrate};

fn inputs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut texts = Vec::new();
    for family in ["migrate", "rules"] {
        for entry in std::fs::read_dir(root.join(family)).into_iter().flatten().flatten() {
            if let Ok(bytes) = std::fs::read(entry.path().join("input.py"))
                && let Ok(text) = String::from_utf8(bytes)
            {
                texts.push(text.trim_start_matches('\u{feff}').to_string());
            }
        }
    }
    texts.sort();
    texts
}

fn measure(label: &str, files: &[String], mut f: impl FnMut(&str)) {
    let bytes: usize = files.iter().map(String::len).sum();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for text in files {
            f(text);
        }
        best = best.min(start.elapsed());
    }
    let secs = best.as_secs_f64();
    println!(
        "{label:<28} {:>6} files {:>8.1} KiB  best of 3: {:>8.2} ms  {:>8.0} files/s  {:>6.1} MB/s",
        files.len(),
        bytes as f64 / 1024.0,
        secs * 1e3,
        files.len() as f64 / secs,
        bytes as f64 / secs / 1e6
    );
}

fn main() {
    let rules = RuleSet::load(&[]).expect("rules load");
    let corpus = inputs();
    assert!(!corpus.is_empty(), "no corpus inputs found");
    // About 2,000 files of realistic size.
    let many: Vec<String> = corpus.iter().cycle().take(2_000).cloned().collect();
    let all_fixes = Selection { unsafe_fixes: true, ..Selection::default() };

    measure("check (lint only)", &many, |t| {
        std::hint::black_box(lint(t, &rules, &Selection::default()).ok());
    });
    measure("migrate --unsafe-fixes", &many, |t| {
        std::hint::black_box(migrate(t, &rules, &all_fixes));
    });

    // One file of ~1 MiB: every corpus program concatenated inside functions.
    let mut big = String::from("import torch\nimport torch_xla.core.xla_model as xm\n\n");
    let mut i = 0;
    while big.len() < 1 << 20 {
        for text in &corpus {
            big.push_str(&format!("def block_{i}():\n"));
            for line in text.lines() {
                big.push_str("    ");
                big.push_str(line);
                big.push('\n');
            }
            big.push_str("    pass\n\n");
            i += 1;
        }
    }
    let parses = ruff_python_parser::parse_module(&big).is_ok();
    let big = if parses { big } else { corpus.join("\n") };
    measure("check, one ~1 MiB file", std::slice::from_ref(&big), |t| {
        std::hint::black_box(lint(t, &rules, &Selection::default()).ok());
    });
    measure("migrate, one ~1 MiB file", std::slice::from_ref(&big), |t| {
        std::hint::black_box(migrate(t, &rules, &all_fixes));
    });
}
