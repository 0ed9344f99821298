//! Baselines: today's findings, recorded so that a gate fails only on new ones
//! (`check --write-baseline FILE`, then `check --baseline FILE`).
//!
//! A finding is known by its rule, its file and its [`Anchor`]: the normalized text of its line
//! and of the lines around it, never its line number. Edits elsewhere in the file and moved lines
//! keep it matched; a second identical finding on an identical line is new.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use ruff_text_size::{TextRange, TextSize};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::source::line_start;

/// Where a finding is, in terms that survive edits: its line's code and the code around it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Anchor {
    /// The finding's first line without indentation, runs of blanks or a trailing comment.
    pub code: String,
    /// A hash of the nearest non-blank lines above and below; only used to tell identical
    /// lines apart, so an edit next to a finding does not make it new.
    pub context: String,
}

impl Anchor {
    const MAX_CODE: usize = 500;

    /// The anchor of the finding starting at `offset`; `comments` are the file's comment ranges
    /// (empty when it does not parse), so `# ...` inside a string is kept.
    pub fn new(text: &str, comments: &[TextRange], offset: TextSize) -> Anchor {
        let start = line_start(text, offset.into());
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let comment = comments
            .iter()
            .find(|c| (start..=end).contains(&usize::from(c.start())))
            .map_or(end, |c| usize::from(c.start()));
        // A baseline is committed: credentials in an index URL never go into it.
        let mut code = crate::redact::credentials(&normalize(&text[start..comment]));
        if code.len() > Self::MAX_CODE {
            // Generated code: a baseline keeps a digest of the line, not 100 KB of it.
            code = format!("sha256:{}", &hex(&digest(&[&code]))[..24]);
        }
        let above = text[..start].lines().rev().map(normalize).find(|l| !l.is_empty()).unwrap_or_default();
        let below = text[end..].lines().map(normalize).find(|l| !l.is_empty()).unwrap_or_default();
        Anchor { code, context: hex(&digest(&[&above, &below]))[..12].to_string() }
    }
}

fn normalize(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A stable, unique fingerprint for each of `findings` (rule, path, anchor), for reports that
/// track findings across commits (GitLab Code Quality): identical ones are numbered.
pub fn fingerprints<'a>(findings: impl IntoIterator<Item = (&'a str, &'a str, &'a Anchor)>) -> Vec<String> {
    let mut seen: HashMap<(&str, &str, &Anchor), usize> = HashMap::new();
    findings
        .into_iter()
        .map(|key| {
            let n = seen.entry(key).or_default();
            *n += 1;
            let (rule, path, anchor) = key;
            hex(&digest(&[rule, path, &anchor.code, &anchor.context, &n.to_string()]))[..32].to_string()
        })
        .collect()
}

/// One recorded finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub rule: String,
    /// Relative to the baseline file's directory, with `/` separators.
    pub path: String,
    #[serde(flatten)]
    pub anchor: Anchor,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    /// The format's version; bumped if entries stop meaning the same thing.
    version: u32,
    findings: Vec<Entry>,
}

const VERSION: u32 = 1;

/// A baseline file, read or about to be written.
#[derive(Debug)]
pub struct Baseline {
    /// The directory entry paths are relative to.
    dir: PathBuf,
    entries: Vec<Entry>,
}

/// What a run's findings are, against a baseline.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Indexes of the findings the baseline does not have.
    pub new: Vec<usize>,
    /// Findings the baseline has.
    pub known: usize,
    /// Entries for files this run checked (or that no longer exist) that matched nothing: fixed,
    /// so the baseline can shrink.
    pub gone: usize,
}

impl Baseline {
    /// An empty baseline to be written at `file`.
    pub fn empty(file: &Path) -> Baseline {
        Baseline { dir: parent_dir(file), entries: Vec::new() }
    }

    /// Whether a file's first bytes are those of a baseline (which `--write-baseline` may replace).
    pub fn is_baseline(head: &str) -> bool {
        head.strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"version\": "))
            && head.contains("\"findings\"")
    }

    pub fn read(file: &Path) -> anyhow::Result<Baseline> {
        let text =
            crate::source::read_text(file).with_context(|| format!("cannot read baseline {}", file.display()))?;
        let parsed: BaselineFile = serde_json::from_str(&text).with_context(|| {
            format!("{} is not an xla2tpu baseline (write one with --write-baseline)", file.display())
        })?;
        if parsed.version != VERSION {
            bail!("{}: baseline version {} is not supported (expected {VERSION})", file.display(), parsed.version);
        }
        Ok(Baseline { dir: parent_dir(file), entries: parsed.findings })
    }

    /// `path` (as the user gave it) as the baseline records it.
    pub fn path_of(&self, path: &Path) -> String {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let relative = absolute.strip_prefix(&self.dir).unwrap_or(&absolute);
        relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    }

    pub fn extend(&mut self, entries: impl IntoIterator<Item = Entry>) {
        self.entries.extend(entries);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file's text: entries sorted, so that rewriting an unchanged baseline changes nothing.
    pub fn to_json(&self) -> String {
        let mut findings = self.entries.clone();
        findings.sort();
        serde_json::to_string_pretty(&BaselineFile { version: VERSION, findings }).expect("entries serialize") + "\n"
    }

    /// Which of `findings` are new. `checked` are the paths (as recorded) this run looked at:
    /// entries of other files are neither matched nor gone, so a run over some files (pre-commit)
    /// works with a baseline of the whole repository.
    pub fn compare(&self, findings: &[Entry], checked: &BTreeSet<String>) -> Comparison {
        // Left to match: (rule, path, code) → contexts, one per entry.
        let mut left: HashMap<(&str, &str, &str), Vec<&str>> = HashMap::new();
        for e in &self.entries {
            left.entry((&e.rule, &e.path, &e.anchor.code)).or_default().push(&e.anchor.context);
        }
        fn key(f: &Entry) -> (&str, &str, &str) {
            (&f.rule, &f.path, &f.anchor.code)
        }
        // Exact matches first, so a line whose neighbours changed takes what is left over.
        let mut unmatched = Vec::new();
        for (i, f) in findings.iter().enumerate() {
            let contexts = left.get_mut(&key(f));
            match contexts.and_then(|c| c.iter().position(|&x| x == f.anchor.context).map(|p| c.swap_remove(p))) {
                Some(_) => {}
                None => unmatched.push(i),
            }
        }
        let mut comparison = Comparison::default();
        for i in unmatched {
            match left.get_mut(&key(&findings[i])).and_then(Vec::pop) {
                Some(_) => {}
                None => comparison.new.push(i),
            }
        }
        comparison.known = findings.len() - comparison.new.len();
        comparison.gone = left
            .iter()
            .filter(|((_, path, _), _)| checked.contains(*path) || !self.dir.join(path).exists())
            .map(|(_, contexts)| contexts.len())
            .sum();
        comparison
    }
}

fn parent_dir(file: &Path) -> PathBuf {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    absolute.parent().map(Path::to_path_buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rule: &str, code: &str, context: &str) -> Entry {
        Entry { rule: rule.into(), path: "a.py".into(), anchor: Anchor { code: code.into(), context: context.into() } }
    }

    #[test]
    fn anchors_ignore_indentation_blanks_and_trailing_comments() {
        let text = "def f():\n    x =  xm.xla_device()  # the device\n";
        let hash = TextSize::try_from(text.find('#').unwrap()).unwrap();
        let comment = TextRange::at(hash, TextSize::from(12));
        let a = Anchor::new(text, &[comment], TextSize::from(18));
        assert_eq!(a.code, "x = xm.xla_device()");
        let moved = Anchor::new("\n\n\ndef f():\n  x = xm.xla_device()\n", &[], TextSize::from(15));
        assert_eq!(moved, a, "indentation, blank lines and the comment do not matter");
    }

    #[test]
    fn identical_lines_are_counted_and_told_apart_by_context() {
        let baseline = Baseline {
            dir: PathBuf::from("/nowhere"),
            entries: vec![entry("TPU110", "xm.mark_step()", "ctx1"), entry("TPU110", "xm.mark_step()", "ctx2")],
        };
        let checked = BTreeSet::from(["a.py".to_string()]);
        // The same two, one with new neighbours: both known.
        let now = [entry("TPU110", "xm.mark_step()", "ctx9"), entry("TPU110", "xm.mark_step()", "ctx1")];
        assert_eq!(baseline.compare(&now, &checked), Comparison { new: vec![], known: 2, gone: 0 });
        // A third is new; the one with unknown context is the new one.
        let now = [now[0].clone(), now[1].clone(), entry("TPU110", "xm.mark_step()", "ctx2")];
        assert_eq!(baseline.compare(&now, &checked), Comparison { new: vec![0], known: 2, gone: 0 });
        // One fixed: one entry is gone; none for files not checked and still there.
        let now = [entry("TPU110", "xm.mark_step()", "ctx2")];
        assert_eq!(baseline.compare(&now, &checked), Comparison { new: vec![], known: 1, gone: 1 });
    }

    #[test]
    fn fingerprints_are_stable_and_unique() {
        let a = Anchor { code: "xm.mark_step()".into(), context: "c".into() };
        let prints = fingerprints([("TPU110", "a.py", &a), ("TPU110", "a.py", &a), ("TPU110", "b.py", &a)]);
        assert_eq!(prints.iter().collect::<BTreeSet<_>>().len(), 3);
        assert_eq!(prints, fingerprints([("TPU110", "a.py", &a), ("TPU110", "a.py", &a), ("TPU110", "b.py", &a)]));
    }
}
