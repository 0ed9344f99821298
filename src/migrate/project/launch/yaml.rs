//! YAML job specs and configs. yaml_serde has no positions, so the text is read as block
//! lines (indentation, `- `, `key:`), and yaml_serde confirms what each candidate means before
//! anything is reported: an `env:` list item is parsed on its own, a config as its document.
//!
//! - `env:` / `environment:` entries: Kubernetes' `- name: VAR` items, compose's `- VAR=value`
//!   items and `VAR: value` maps.
//! - accelerate configs with `distributed_type: XLA` (TPU922), Lightning CLI configs with a TPU
//!   trainer (TPU924).
//! - shell scripts inside a job: a literal block (`|`) under `command:`, `args:`, `script:` or
//!   `run:`, and the string after `-c` in such a list, read as shell.

use serde::Deserialize;
use yaml_serde::Value;

use super::findings::{EnvSite, Findings, range};
use super::shell::{self, Region};
use crate::migrate::fix::Edit;
use crate::migrate::rules::Builtin;
use crate::source::line_end_inclusive;

/// Keys whose value sets environment variables.
const ENV_KEYS: &[&str] = &["env", "environment"];

/// Keys whose value (or list of values) is a command line or a script: Kubernetes' `command` and
/// `args`, CI systems' `script` and `run`.
const SHELL_KEYS: &[&str] = &["command", "args", "script", "run"];

/// Keys `accelerate config` writes besides `distributed_type`.
const ACCELERATE_KEYS: &[&str] = &[
    "compute_environment",
    "mixed_precision",
    "num_processes",
    "num_machines",
    "machine_rank",
    "main_training_function",
    "downcast_bf16",
    "use_cpu",
    "tpu_name",
    "tpu_zone",
    "tpu_use_cluster",
    "tpu_use_sudo",
    "tpu_env",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A line holding a node: `key: value`, `- item`, `- key: value`.
    Node,
    /// Blank or comment only.
    Blank,
    /// Inside a block scalar (`|`, `>`).
    Scalar,
    /// `---` or `...`.
    Document,
}

#[derive(Debug)]
struct Line<'t> {
    kind: Kind,
    /// Start of the line and end after its newline.
    start: usize,
    end: usize,
    indent: usize,
    /// The line starts a sequence item.
    dash: bool,
    /// Column of the key or scalar, after any `- `.
    col: usize,
    key: Option<&'t str>,
    /// After `key:`, without a comment.
    value: &'t str,
}

pub(super) fn check(found: &mut Findings) {
    let text = found.text;
    // After an error the document iterator may keep yielding it: stop at the first.
    let documents: Vec<Value> =
        yaml_serde::Deserializer::from_str(text).map_while(|d| Value::deserialize(d).ok()).collect();
    if documents.is_empty() {
        return;
    }
    let lines = lines(text);
    env_entries(found, &lines);
    shell_scripts(found, &lines);
    if documents.iter().any(is_accelerate_xla) {
        accelerate_config(found, &lines);
    }
    if documents.iter().any(is_lightning_tpu) {
        let tpu = |l: &Line| unquoted(l.value).eq_ignore_ascii_case("tpu");
        report_keys(found, &lines, &["trainer"], "accelerator", tpu, Builtin::LightningConfig);
        let xla = |l: &Line| unquoted(l.value).starts_with("xla");
        report_keys(found, &lines, &["trainer"], "strategy", xla, Builtin::LightningConfig);
    }
}

/// The text as block lines.
fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut scalar_above: Option<usize> = None;
    let mut start = 0;
    while start < text.len() {
        let end = line_end_inclusive(text, start);
        let content = text[start..end].trim_end_matches(['\n', '\r']);
        let indent = content.len() - content.trim_start_matches(' ').len();
        let body = content[indent..].trim_end();
        let mut line = Line { kind: Kind::Node, start, end, indent, dash: false, col: indent, key: None, value: "" };
        start = end;
        if scalar_above.is_some_and(|col| body.is_empty() || indent > col) {
            line.kind = Kind::Scalar;
            out.push(line);
            continue;
        }
        scalar_above = None;
        if body.is_empty() || body.starts_with('#') {
            line.kind = Kind::Blank;
        } else if body.starts_with("---") || body == "..." {
            line.kind = Kind::Document;
        } else {
            let mut rest = body;
            while rest == "-" || rest.starts_with("- ") {
                let after = rest[1..].trim_start_matches(' ');
                line.dash = true;
                line.col += rest.len() - after.len();
                rest = after;
            }
            if let Some((key, value)) = split_key(rest) {
                line.key = Some(key);
                line.value = value.split(" #").next().unwrap_or_default().trim();
            }
            if line.value.starts_with(['|', '>']) || line.key.is_none() && rest.starts_with(['|', '>']) {
                scalar_above = Some(if line.key.is_some() { line.col } else { line.indent });
            }
        }
        out.push(line);
    }
    out
}

/// `key` and what follows `key:` in a block mapping line (plain or quoted key).
fn split_key(rest: &str) -> Option<(&str, &str)> {
    let (key, after) = match rest.as_bytes().first() {
        Some(&q @ (b'"' | b'\'')) => {
            let close = rest[1..].find(char::from(q))? + 1;
            (&rest[1..close], &rest[close + 1..])
        }
        Some(b'{' | b'[' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>') | None => return None,
        Some(_) => {
            let colon =
                rest.match_indices(':').find(|(i, _)| rest[i + 1..].is_empty() || rest[i + 1..].starts_with(' '))?.0;
            (rest[..colon].trim_end(), &rest[colon..])
        }
    };
    let value = after.strip_prefix(':')?;
    (value.is_empty() || value.starts_with(' ')).then_some((key, value))
}

/// The key line a node belongs to: for an item, the nearest line above not indented past its
/// dash; for an entry, the nearest with a smaller key column. `None` at the top of a document
/// or when the entry belongs to a sequence item's mapping.
fn parent(lines: &[Line], i: usize) -> Option<usize> {
    let line = &lines[i];
    let limit = if line.dash { line.indent + 1 } else { line.col };
    for j in (0..i).rev() {
        let above = &lines[j];
        match above.kind {
            Kind::Document => return None,
            Kind::Blank | Kind::Scalar => continue,
            Kind::Node if !line.dash && above.dash && above.col == line.col => return None,
            Kind::Node if above.col < limit => return (above.key.is_some() && above.value.is_empty()).then_some(j),
            Kind::Node => {}
        }
    }
    None
}

/// The lines of the node starting at line `i`: the ones below it that are more indented
/// (trailing blank and comment lines excluded).
fn node_end(lines: &[Line], i: usize) -> usize {
    let mut last = i;
    for (j, line) in lines.iter().enumerate().skip(i + 1) {
        match line.kind {
            Kind::Document => break,
            Kind::Node if line.indent <= lines[i].indent => break,
            Kind::Blank => {}
            Kind::Node | Kind::Scalar => last = j,
        }
    }
    last
}

/// Every entry of an `env:` / `environment:` key that sets a variable a rule names.
fn env_entries(found: &mut Findings, lines: &[Line]) {
    for i in 0..lines.len() {
        if lines[i].kind != Kind::Node {
            continue;
        }
        let Some(p) = parent(lines, i).filter(|&p| lines[p].key.is_some_and(|k| ENV_KEYS.contains(&k))) else {
            continue;
        };
        let last = node_end(lines, i);
        let (start, end) = (lines[i].start, lines[last].end);
        let Some((var, after)) = variable(&found.text[start..end], lines[i].dash) else { continue };
        let Some(at) = find_word(&found.text[start..end], &var, after) else { continue };
        let siblings = (p + 1..lines.len()).take_while(|&j| lines[j].kind != Kind::Node || lines[j].col > lines[p].col);
        let only = siblings.filter(|&j| lines[j].kind == Kind::Node && parent(lines, j) == Some(p)).count() == 1;
        // The last entry goes with its key when the key line holds nothing else.
        let from = if only && !lines[p].dash { lines[p].start } else { start };
        found.env(EnvSite {
            name: range(start + at, start + at + var.len()),
            removal: Ok(Edit::delete(range(from, end))),
        });
    }
}

/// Scripts inside the job: literal blocks and `-c` strings under [`SHELL_KEYS`].
fn shell_scripts(found: &mut Findings, lines: &[Line]) {
    let text = found.text;
    let under_shell_key = |i: usize| {
        let key = if lines[i].dash { parent(lines, i).and_then(|p| lines[p].key) } else { lines[i].key };
        key.is_some_and(|k| SHELL_KEYS.contains(&k))
    };
    for i in 0..lines.len() {
        let line = &lines[i];
        if line.kind != Kind::Node || !under_shell_key(i) {
            continue;
        }
        // What follows the key or the dash: `|`, `"…"`, a plain scalar.
        let node = text[line.start + line.col..line.end].trim_end();
        let scalar = if line.key.is_some() { line.value } else { node };
        if scalar.starts_with('|') {
            let last = node_end(lines, i);
            if last > i {
                shell::scan(found, Region::embedded(range(lines[i + 1].start, lines[last].end), true));
            }
        } else if line.dash && line.key.is_none() && follows_dash_c(text, lines, i) {
            let start = line.start + line.col;
            let (from, to) = match scalar.as_bytes().first() {
                // Escapes would shift what the shell sees from what is written: left alone.
                Some(b'"') if !scalar.contains('\\') && scalar.len() > 1 && scalar.ends_with('"') => {
                    (1, scalar.len() - 1)
                }
                Some(b'\'')
                    if scalar.len() > 1 && scalar.ends_with('\'') && !scalar[1..scalar.len() - 1].contains('\'') =>
                {
                    (1, scalar.len() - 1)
                }
                Some(b'"' | b'\'' | b'[' | b'{' | b'>' | b'&' | b'*' | b'!') | None => continue,
                Some(_) => (0, scalar.split(" #").next().unwrap_or(scalar).trim_end().len()),
            };
            shell::scan(found, Region::embedded(range(start + from, start + to), false));
        }
    }
}

/// Whether the sequence item at line `i` comes right after an item `-c` (`bash -c <script>`).
fn follows_dash_c(text: &str, lines: &[Line], i: usize) -> bool {
    let previous = (0..i).rev().find(|&j| lines[j].kind == Kind::Node);
    previous.is_some_and(|j| {
        let l = &lines[j];
        l.dash && l.col == lines[i].col && unquoted(text[l.start + l.col..l.end].trim()) == "-c"
    })
}

/// The variable an `env:` entry's text sets, as yaml_serde reads it, and the word after which
/// its name is written (`name` in `- name: VAR`).
fn variable(entry: &str, item: bool) -> Option<(String, &'static str)> {
    let value: Value = yaml_serde::from_str(entry).ok()?;
    if !item {
        let (key, _) = value.as_mapping().filter(|m| m.len() == 1)?.iter().next()?;
        return Some((key.as_str()?.to_string(), ""));
    }
    match value.as_sequence().filter(|s| s.len() == 1)?.first()? {
        Value::Mapping(m) => Some((m.get("name")?.as_str()?.to_string(), "name")),
        Value::String(s) => Some((s.split_once('=').map_or(s.as_str(), |(n, _)| n).to_string(), "")),
        _ => None,
    }
}

/// Where `word` is written in `text` as a whole word, after the first whole `after`.
fn find_word(text: &str, word: &str, after: &str) -> Option<usize> {
    let ident = |at: Option<usize>| {
        at.and_then(|i| text.as_bytes().get(i)).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let whole = |at: usize, len: usize| !ident(at.checked_sub(1)) && !ident(Some(at + len));
    let from = if after.is_empty() { 0 } else { text.match_indices(after).find(|&(at, _)| whole(at, after.len()))?.0 };
    text[from..].match_indices(word).map(|(at, _)| from + at).find(|&at| whole(at, word.len()))
}

/// `distributed_type: XLA` (`TPU` before accelerate 0.16) at the top of an accelerate config:
/// the value becomes the rule's replacement, accelerate's torchrun launcher (`MULTI_GPU`), which
/// starts the processes TorchTPU runs one per chip. The `tpu_*` keys and `downcast_bf16` stay:
/// accelerate reads them only for XLA.
fn accelerate_config(found: &mut Findings, lines: &[Line]) {
    for (i, line) in lines.iter().enumerate() {
        let value = unquoted(line.value);
        let xla = value.eq_ignore_ascii_case("xla") || value.eq_ignore_ascii_case("tpu");
        if line.kind != Kind::Node || line.key != Some("distributed_type") || !xla || line.dash {
            continue;
        }
        if parent(lines, i).is_some() {
            continue;
        }
        // `distributed_type: 'XLA'  # …`: the value follows the key's colon.
        let key_end = line.start + line.col + found.text[line.start + line.col..].find(':').expect("a key line") + 1;
        let value_start = key_end + found.text[key_end..].find(line.value).expect("the value follows its key");
        let at = range(line.start + line.col, value_start + line.value.len());
        let value = range(value_start, value_start + line.value.len());
        let fix = found
            .rules
            .literal_fix(Builtin::AccelerateConfig)
            .map(|(spec, to)| super::findings::fix(spec.safety, vec![Edit::replace(value, to)]));
        found.launcher(Builtin::AccelerateConfig, at, Some(fix));
    }
}

/// Report the lines `key: value` whose value passes `matches`, under the key path `path` from
/// the top of a document.
fn report_keys(
    found: &mut Findings,
    lines: &[Line],
    path: &[&str],
    key: &str,
    matches: impl Fn(&Line) -> bool,
    builtin: Builtin,
) {
    for (i, line) in lines.iter().enumerate() {
        if line.kind != Kind::Node || line.key != Some(key) || !matches(line) {
            continue;
        }
        let mut keys = Vec::new();
        let mut at = i;
        while let Some(p) = parent(lines, at) {
            keys.push(lines[p].key.unwrap_or_default());
            at = p;
        }
        keys.reverse();
        if keys == path && !lines[at].dash {
            let content = found.text[line.start..line.end].trim_end();
            found.launcher(builtin, range(line.start + line.col, line.start + content.len()), None);
        }
    }
}

fn unquoted(value: &str) -> &str {
    value.trim_matches(['"', '\''])
}

/// Whether `text` (YAML or JSON) is an accelerate config that launches torch_xla processes.
pub fn launches_torch_xla(text: &str) -> bool {
    yaml_serde::Deserializer::from_str(text).map_while(|d| Value::deserialize(d).ok()).any(|d| is_accelerate_xla(&d))
}

/// An accelerate config that launches torch_xla processes.
fn is_accelerate_xla(document: &Value) -> bool {
    let Some(map) = document.as_mapping() else { return false };
    let xla = map.get("distributed_type").and_then(Value::as_str).is_some_and(|t| matches!(t, "XLA" | "TPU"));
    xla && ACCELERATE_KEYS.iter().any(|k| map.contains_key(*k))
}

/// A Lightning CLI config whose trainer runs on torch_xla.
fn is_lightning_tpu(document: &Value) -> bool {
    let Some(trainer) = document.get("trainer").and_then(Value::as_mapping) else { return false };
    let accelerator = trainer.get("accelerator").and_then(Value::as_str).is_some_and(|a| a.eq_ignore_ascii_case("tpu"));
    let strategy = trainer.get("strategy").and_then(Value::as_str).is_some_and(|s| s.starts_with("xla"));
    accelerator || strategy
}
