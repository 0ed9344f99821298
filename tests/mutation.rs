//! Deterministic mutation test: every `input.py` of `corpus/migrate` and `corpus/rules`, mutated
//! the way real files differ from the fixtures (a line duplicated or deleted, a block
//! re-indented, a statement wrapped in `if True:` / `with nullcontext():` / `try:`, torch_xla
//! calls inserted between statements, CRLF line endings, a BOM, tab indentation), through the
//! properties the fuzz target asserts (`tests/support/properties.rs`). Mutants that do not parse
//! must be reported and returned unchanged, never made worse.
//!
//! The mutations are drawn from a fixed seed, so a failure reproduces; set
//! `XLA2TPU_MUTATION_SEED=N` to explore another draw, and `XLA2TPU_MUTATION_ROUNDS=N` for more
//! mutants per file.

#[path = "support/properties.rs"]
mod properties;

use std::path::{Path, PathBuf};
use std::time::Instant;

use ruff_python_ast::Stmt;
use ruff_python_ast::statement_visitor::{StatementVisitor, walk_stmt};
use ruff_python_parser::parse_module;
use ruff_text_size::{Ranged, TextRange};
use xla2tpu::source::{SourceFile, newline_of};

const SEED: u64 = 0x5eed_8a11_2026;
/// Random mutants per file (besides the whole-file ones: CRLF, BOM, tabs).
const ROUNDS: usize = 30;

/// splitmix64: small, seeded, the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() { None } else { items.get(self.below(items.len())) }
    }
}

/// FNV-1a, to give every file its own stream from the one seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn corpus_inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut files = Vec::new();
    for family in ["migrate", "rules"] {
        for entry in std::fs::read_dir(root.join(family)).expect("corpus dir").flatten() {
            let input = entry.path().join("input.py");
            if input.is_file() {
                files.push(input);
            }
        }
    }
    files.sort();
    files
}

/// torch_xla code a user may have anywhere a statement goes.
const INSERTIONS: &[&str] = &[
    "xm.mark_step()",
    "xm.optimizer_step(opt)",
    "xm.optimizer_step(optimizer, barrier=True)",
    "torch_xla.sync()",
    "xm.xla_device()",
    "device = xm.xla_device()",
    "dev = torch_xla.device()",
    "xm.wait_device_ops()",
    "xm.master_print(\"step\", loss)",
    "xm.rendezvous(\"sync\")",
    "n = xm.xrt_world_size()",
    "rank = xm.get_ordinal()",
    "if xm.is_master_ordinal():\n    print(1)",
    "torch_xla.core.xla_model.mark_step()",
    "import torch_xla.core.xla_model as xm",
    "import torch_xla",
    "import torch_xla.distributed.xla_multiprocessing as xmp",
    "xmp.spawn(main, args=())",
    "os.environ[\"PJRT_DEVICE\"] = \"TPU\"",
    "x = x.to(\"xla\")",
    "t = torch.device(\"xla:0\")",
    "with torch_xla.step():\n    pass",
    "with torch_xla.amp.autocast(device):\n    y = model(x)",
    "model = torch.compile(model, backend=\"openxla\")",
    "loader = pl.MpDeviceLoader(loader, device)",
    "xm.all_reduce(xm.REDUCE_SUM, [t])",
    "del xm",
    "xm = None",
];

/// Each statement's range, outermost first, in source order.
#[derive(Default)]
struct Statements(Vec<TextRange>);

impl<'a> StatementVisitor<'a> for Statements {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.0.push(stmt.range());
        walk_stmt(self, stmt);
    }
}

/// A text's lines, each with its terminator.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// A statement that has its lines to itself: (first line, last line, indentation).
fn whole_line_statements(text: &str) -> Vec<(usize, usize, String)> {
    let Ok(parsed) = parse_module(text) else { return Vec::new() };
    let mut visitor = Statements::default();
    visitor.visit_body(&parsed.syntax().body);
    let line_of = |offset: usize| text[..offset].matches('\n').count();
    let mut out = Vec::new();
    for range in visitor.0 {
        let (start, end) = (usize::from(range.start()), usize::from(range.end()));
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let before = &text[line_start..start];
        let rest = text[end..].split('\n').next().unwrap_or_default().trim();
        if before.trim().is_empty() && (rest.is_empty() || rest.starts_with('#')) {
            out.push((line_of(start), line_of(end), before.to_string()));
        }
    }
    out
}

/// `line` indented by `by` (blank lines stay as they are).
fn indent(line: &str, by: &str) -> String {
    if is_blank(line) { line.to_string() } else { format!("{by}{line}") }
}

fn join(lines: &[String]) -> String {
    lines.concat()
}

/// One random mutation of `text`; `None` when it does not apply to this file.
fn mutate(text: &str, rng: &mut Rng) -> Option<(String, String)> {
    let nl = newline_of(text);
    let all: Vec<String> = lines(text).into_iter().map(str::to_string).collect();
    if all.is_empty() {
        return None;
    }
    let statements = whole_line_statements(text);
    match rng.below(7) {
        0 => {
            let i = rng.below(all.len());
            let mut out = all.clone();
            let mut line = all[i].clone();
            if !line.ends_with('\n') {
                line.push_str(nl);
            }
            out.insert(i, line);
            Some((format!("duplicate line {}", i + 1), join(&out)))
        }
        1 => {
            let i = rng.below(all.len());
            let mut out = all.clone();
            out.remove(i);
            Some((format!("delete line {}", i + 1), join(&out)))
        }
        2 => {
            // Re-indent a block body: every line from a body's first one while it is indented at
            // least as deep, 2 or 4 spaces further (or one tab).
            let starts: Vec<usize> =
                (1..all.len()).filter(|&i| all[i - 1].trim_end().ends_with(':') && !is_blank(&all[i])).collect();
            let &start = rng.pick(&starts)?;
            let depth = indentation(&all[start]).len();
            let by = *rng.pick(&["  ", "    ", "\t"])?;
            let mut out = all.clone();
            for line in out.iter_mut().skip(start) {
                if !is_blank(line) && indentation(line).len() < depth {
                    break;
                }
                *line = indent(line, by);
            }
            Some((format!("re-indent the block at line {} by {by:?}", start + 1), join(&out)))
        }
        3 => {
            let &(first, last, ref ind) = rng.pick(&statements)?;
            let (header, footer): (String, Vec<String>) = match rng.below(3) {
                0 => (format!("{ind}if True:{nl}"), Vec::new()),
                1 => (format!("{ind}with nullcontext():{nl}"), Vec::new()),
                _ => (
                    format!("{ind}try:{nl}"),
                    vec![format!("{ind}except Exception:{nl}"), format!("{ind}    pass{nl}")],
                ),
            };
            let mut out: Vec<String> = all[..first].to_vec();
            out.push(header.clone());
            for line in &all[first..=last] {
                let mut line = indent(line, "    ");
                if !line.ends_with('\n') {
                    line.push_str(nl);
                }
                out.push(line);
            }
            out.extend(footer);
            out.extend_from_slice(&all[last + 1..]);
            Some((format!("wrap lines {}-{} in `{}`", first + 1, last + 1, header.trim()), join(&out)))
        }
        4 | 5 => {
            // An insertion before or after a statement, at its indentation.
            let &(first, last, ref ind) = rng.pick(&statements)?;
            let code = *rng.pick(INSERTIONS)?;
            let inserted: String = code.split('\n').map(|l| format!("{ind}{l}{nl}")).collect();
            let mut out = all.clone();
            let at = if rng.below(2) == 0 { first } else { last + 1 };
            if at == out.len() && !out[at - 1].ends_with('\n') {
                out[at - 1].push_str(nl);
            }
            out.insert(at, inserted);
            Some((format!("insert `{code}` at line {}", at + 1), join(&out)))
        }
        _ => {
            // Two statements swap places (when at the same indentation).
            let &(a_first, a_last, ref a_ind) = rng.pick(&statements)?;
            let &(b_first, b_last, ref b_ind) = rng.pick(&statements)?;
            if a_ind != b_ind || a_last >= b_first {
                return None;
            }
            let mut out: Vec<String> = all[..a_first].to_vec();
            out.extend_from_slice(&all[b_first..=b_last]);
            out.extend_from_slice(&all[a_last + 1..b_first]);
            out.extend_from_slice(&all[a_first..=a_last]);
            out.extend_from_slice(&all[b_last + 1..]);
            let mut text = join(&out);
            if !text.ends_with('\n') {
                text.push_str(nl);
            }
            Some((format!("swap lines {}-{} with {}-{}", a_first + 1, a_last + 1, b_first + 1, b_last + 1), text))
        }
    }
}

/// The whole-file mutations: CRLF endings, a BOM, tabs for leading spaces.
fn whole_file(text: &str) -> Vec<(String, Vec<u8>)> {
    let lf = text.replace("\r\n", "\n");
    let crlf = lf.replace('\n', "\r\n");
    let tabs: String = lines(text)
        .into_iter()
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            format!("{}{}{}", "\t".repeat(spaces / 4), " ".repeat(spaces % 4), &line[spaces..])
        })
        .collect();
    let mut bom = "\u{feff}".as_bytes().to_vec();
    bom.extend_from_slice(text.as_bytes());
    let mut bom_crlf = "\u{feff}".as_bytes().to_vec();
    bom_crlf.extend_from_slice(crlf.as_bytes());
    vec![
        ("CRLF line endings".to_string(), crlf.into_bytes()),
        ("LF line endings".to_string(), lf.into_bytes()),
        ("BOM".to_string(), bom),
        ("BOM and CRLF".to_string(), bom_crlf),
        ("tabs for leading spaces".to_string(), tabs.into_bytes()),
        ("no final newline".to_string(), text.trim_end().as_bytes().to_vec()),
    ]
}

/// What the mutants of some corpus inputs came to.
#[derive(Default)]
struct Tally {
    checked: usize,
    parsed: usize,
    changed: usize,
    failures: Vec<String>,
}

impl std::iter::Sum for Tally {
    fn sum<I: Iterator<Item = Tally>>(iter: I) -> Tally {
        iter.fold(Tally::default(), |mut all, one| {
            all.checked += one.checked;
            all.parsed += one.parsed;
            all.changed += one.changed;
            all.failures.extend(one.failures);
            all
        })
    }
}

/// Mutate one corpus input (its own seeded draw, so the split across threads changes nothing)
/// and check every property on each mutant.
fn mutants_of(root: &Path, file: &Path, seed: u64, rounds: usize) -> Tally {
    let mut tally = Tally::default();
    let name = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let source = SourceFile::read(file).expect("corpus inputs are UTF-8");
    let mut rng = Rng(seed ^ fnv(&name));
    let mut mutants = whole_file(&source.text);
    let mut text = source.text.clone();
    for round in 0..rounds {
        // Every third mutant builds on the previous one, so mutations combine.
        if round % 3 == 0 {
            text = source.text.clone();
        }
        if let Some((what, mutant)) = mutate(&text, &mut rng) {
            mutants.push((what, mutant.clone().into_bytes()));
            text = mutant;
        }
    }
    for (what, bytes) in mutants {
        tally.checked += 1;
        match std::panic::catch_unwind(|| properties::check_bytes(&bytes)) {
            Ok(outcome) => {
                tally.parsed += usize::from(outcome.parsed);
                tally.changed += usize::from(outcome.changed);
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                tally.failures.push(format!(
                    "{name} ({what}; seed {seed}): {message}\n--- mutant\n{}",
                    String::from_utf8_lossy(&bytes)
                ));
            }
        }
    }
    tally
}

#[test]
fn mutants_of_the_corpus_keep_every_property() {
    let started = Instant::now();
    let seed = env_or("XLA2TPU_MUTATION_SEED", SEED);
    let rounds = env_or("XLA2TPU_MUTATION_ROUNDS", ROUNDS as u64) as usize;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = corpus_inputs();
    assert!(files.len() >= 50, "only {} corpus inputs", files.len());

    // The files are independent: check them on every core, each thread its own share.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let shares: Vec<Tally> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let share: Vec<&PathBuf> = files.iter().skip(k).step_by(threads).collect();
                scope.spawn(move || share.into_iter().map(|file| mutants_of(root, file, seed, rounds)).sum::<Tally>())
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a mutation worker")).collect()
    });
    let Tally { checked, parsed, changed, failures } = shares.into_iter().sum();
    println!(
        "{checked} mutants of {} corpus inputs checked in {:.1?}: {parsed} parsed, {changed} migrated",
        files.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{} mutants break a property:\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(parsed * 2 >= checked, "only {parsed} of {checked} mutants parse: the mutations check too little");
    assert!(changed * 3 >= checked, "only {changed} of {checked} mutants were migrated");
}
