//! Fixes are byte-range edits on the original text (ruff's model).
//!
//! Statement deletions are kept symbolic until a pass's fixes are chosen, so
//! that deleting every statement of a block yields `pass` (or drops the `if`
//! / `try` that only existed for them) instead of an empty body.

use rustc_hash::FxHashSet;
use std::collections::BTreeSet;

use ruff_text_size::{TextRange, TextSize};

use crate::source::{line_end_inclusive, line_start};

/// Passes of fixes before a file is given up on converging, in every file kind's engine (ruff's
/// test harness uses 10).
pub const MAX_PASSES: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Safety {
    /// Same behaviour on TorchTPU.
    Safe,
    /// Behaviour may change; applied only with `--unsafe-fixes`.
    Unsafe,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

impl Edit {
    pub fn replace(range: TextRange, content: impl Into<String>) -> Edit {
        Edit { range, content: content.into() }
    }
    pub fn insert(at: TextSize, content: impl Into<String>) -> Edit {
        Edit { range: TextRange::empty(at), content: content.into() }
    }
    pub fn delete(range: TextRange) -> Edit {
        Edit { range, content: String::new() }
    }
}

/// A statement, by its block and position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StmtRef {
    pub block: usize,
    pub index: usize,
}

/// A body of statements, as the fix planner needs to know it.
#[derive(Debug, Clone)]
pub struct Block {
    pub stmts: Vec<TextRange>,
    /// The compound statement owning this body, and whether it may be dropped
    /// as a whole when its bodies so marked all empty (every arm of an `if` with
    /// side-effect-free tests, a `try` whose handlers only set the removed names).
    pub owner: Option<(StmtRef, bool)>,
}

/// A module import a fix needs: `import {module} as {alias}` (or `import {module}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImportRequest {
    pub module: String,
    pub alias: Option<String>,
}

impl ImportRequest {
    pub fn statement(&self) -> String {
        match &self.alias {
            Some(alias) => format!("import {} as {alias}", self.module),
            None => format!("import {}", self.module),
        }
    }
}

/// A module-level definition a fix's code calls (`class RateTracker: ...`), by the name it defines.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Helper {
    pub name: String,
    pub text: String,
    /// Where it lives instead of the file (a project's helper module, `_torchtpu`): the file
    /// imports it from there, and `text` with `imports` is its definition in that module.
    pub module: Option<HelperModule>,
}

/// A helper defined in the project's helper module, as the file needing it sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HelperModule {
    /// How the file imports it: `_torchtpu`, `._torchtpu` in a package.
    pub import: String,
    /// The imports its definition needs in the module.
    pub imports: Vec<ImportRequest>,
    /// The fix's code calls it (so the file imports it); otherwise another helper does.
    pub called: bool,
}

impl Helper {
    pub fn inline(name: impl Into<String>, text: impl Into<String>) -> Helper {
        Helper { name: name.into(), text: text.into(), module: None }
    }
}

#[derive(Debug, Clone)]
pub struct Fix {
    pub safety: Safety,
    pub edits: Vec<Edit>,
    pub deletes: Vec<StmtRef>,
    pub imports: Vec<ImportRequest>,
    pub helpers: Vec<Helper>,
}

impl Fix {
    /// The byte ranges this fix touches, for overlap checks.
    fn footprint(&self, text: &str, blocks: &[Block]) -> Vec<TextRange> {
        let mut ranges: Vec<TextRange> = self.edits.iter().map(|e| e.range).collect();
        ranges.extend(self.deletes.iter().map(|d| {
            let r = blocks[d.block].stmts[d.index];
            whole_lines(text, r).unwrap_or(r)
        }));
        ranges
    }
}

fn overlaps(a: TextRange, b: TextRange) -> bool {
    // Touching ranges do not overlap; an insertion strictly inside a range does.
    a.start() < b.end() && b.start() < a.end()
        || (a.is_empty() && b.start() < a.start() && a.start() < b.end())
        || (b.is_empty() && a.start() < b.start() && b.start() < a.end())
}

/// Pick non-overlapping fixes in order, returning the indices chosen.
pub fn choose(fixes: &[&Fix], text: &str, blocks: &[Block]) -> Vec<usize> {
    let mut taken: Vec<TextRange> = Vec::new();
    let mut chosen = Vec::new();
    for (i, fix) in fixes.iter().enumerate() {
        let footprint = fix.footprint(text, blocks);
        if footprint.iter().any(|r| taken.iter().any(|t| overlaps(*r, *t))) {
            continue; // picked up by the next pass
        }
        taken.extend(footprint);
        chosen.push(i);
    }
    chosen
}

/// Turn the chosen fixes' deletions into edits, keeping every block non-empty.
pub fn plan_deletions(text: &str, blocks: &[Block], deletes: &BTreeSet<StmtRef>) -> Vec<Edit> {
    let mut deleted: BTreeSet<StmtRef> = deletes.clone();
    let mut emptied: FxHashSet<usize> = FxHashSet::default();
    // Emptying a body deletes its owner when that is harmless (and every other body of it
    // that must empty first, the arms of an `if`, is empty too); repeat upwards.
    loop {
        let mut grew = false;
        for (b, block) in blocks.iter().enumerate() {
            if emptied.contains(&b)
                || !(0..block.stmts.len()).all(|index| deleted.contains(&StmtRef { block: b, index }))
            {
                continue;
            }
            emptied.insert(b);
        }
        // An arm an earlier pass left as `pass` counts as empty beside one emptied now.
        let only_pass =
            |b: &Block| b.stmts.iter().all(|r| text.get(usize::from(r.start())..usize::from(r.end())) == Some("pass"));
        for (b, block) in blocks.iter().enumerate() {
            if let Some((owner, true)) = block.owner
                && emptied.contains(&b)
                && !deleted.contains(&owner)
                && blocks
                    .iter()
                    .enumerate()
                    .all(|(i, other)| other.owner != Some((owner, true)) || emptied.contains(&i) || only_pass(other))
            {
                grew |= deleted.insert(owner);
            }
        }
        if !grew {
            break;
        }
    }
    let owner_deleted = |mut b: usize| loop {
        match blocks[b].owner {
            Some((owner, _)) if deleted.contains(&owner) => return true,
            Some((owner, _)) => b = owner.block,
            None => return false,
        }
    };
    let mut edits = Vec::new();
    let mut removed: Vec<TextRange> = Vec::new();
    for d in &deleted {
        if owner_deleted(d.block) {
            continue;
        }
        let block = &blocks[d.block];
        let range = block.stmts[d.index];
        if emptied.contains(&d.block) && d.index == 0 {
            edits.push(Edit::replace(range, "pass"));
        } else {
            match delete_statement(text, block, d.index) {
                Ok(r) => removed.push(r),
                Err(pass) => edits.push(pass),
            }
        }
    }
    // Deletions may touch or overlap once blank lines are included: merge them.
    removed.sort_by_key(|r| r.start());
    let mut merged: Vec<TextRange> = Vec::new();
    for r in removed {
        match merged.last_mut() {
            Some(last) if r.start() <= last.end() => *last = last.cover(r),
            _ => merged.push(r),
        }
    }
    edits.extend(merged.into_iter().map(|r| Edit::delete(after_header(text, between_blank_runs(text, r)))));
    edits
}

/// A run of deleted lines with blank lines on both sides (the last imports of a block, between
/// the block and what follows it) also takes the blank lines before it: those after separate
/// what follows, and the two runs together would be one blank line too many.
fn between_blank_runs(text: &str, r: TextRange) -> TextRange {
    let (start, end) = (usize::from(r.start()), usize::from(r.end()));
    let whole_lines = line_start(text, start) == start && (end == text.len() || line_start(text, end) == end);
    let blank_after = end < text.len() && text[end..line_end_inclusive(text, end)].trim().is_empty();
    if !whole_lines || !blank_after {
        return r;
    }
    let mut s = start;
    while s > 0 {
        let ls = line_start(text, s - 1);
        if !text[ls..s].trim().is_empty() {
            break;
        }
        s = ls;
    }
    // Only between code: a deletion after the file's leading blank lines keeps them.
    if s == start || s == 0 {
        return r;
    }
    TextRange::new(TextSize::try_from(s).unwrap_or(r.start()), r.end())
}

/// A deletion that starts a block (right after `try:`, `if …:`) also takes
/// the blank lines after it, so the body does not open with a blank line.
fn after_header(text: &str, r: TextRange) -> TextRange {
    let start = usize::from(r.start());
    let prev_line = &text[line_start(text, start.saturating_sub(1))..start];
    let opens_block = start > 0 && prev_line.split('#').next().unwrap_or_default().trim_end().ends_with(':');
    if !opens_block {
        return r;
    }
    let mut end = usize::from(r.end());
    while end < text.len() {
        let le = line_end_inclusive(text, end);
        if !text[end..le].trim().is_empty() {
            break;
        }
        end = le;
    }
    if end >= text.len() {
        return r; // nothing follows: keep the file's ending as it was
    }
    TextRange::new(r.start(), TextSize::try_from(end).unwrap_or(r.end()))
}

/// The full lines a statement occupies, if nothing else shares them (a trailing comment may).
pub(crate) fn whole_lines(text: &str, range: TextRange) -> Option<TextRange> {
    let (start, end) = (usize::from(range.start()), usize::from(range.end()));
    let ls = line_start(text, start);
    if !text[ls..start].trim().is_empty() {
        return None;
    }
    let le = line_end_inclusive(text, end);
    let rest = text[end..le].trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    Some(TextRange::new(TextSize::try_from(ls).ok()?, TextSize::try_from(le).ok()?))
}

/// The range to delete for one statement, or (for a statement sharing its
/// line with code we cannot split) a `pass` replacement.
fn delete_statement(text: &str, block: &Block, index: usize) -> Result<TextRange, Edit> {
    let range = block.stmts[index];
    if let Some(lines) = whole_lines(text, range) {
        return Ok(with_blank_lines(text, block, index, lines));
    }
    // `a; b; c` on one line: take the statement with one separator.
    if let Some(next) = block.stmts.get(index + 1)
        && text[usize::from(range.end())..usize::from(next.start())].trim() == ";"
    {
        return Ok(TextRange::new(range.start(), next.start()));
    }
    if index > 0 {
        let prev = block.stmts[index - 1];
        if text[usize::from(prev.end())..usize::from(range.start())].trim() == ";" {
            return Ok(TextRange::new(prev.end(), range.end()));
        }
    }
    Err(Edit::replace(range, "pass"))
}

/// Blank lines that would be left dangling by deleting `lines`: after the
/// first statement of a block (before the next one), and before the last one.
fn with_blank_lines(text: &str, block: &Block, index: usize, lines: TextRange) -> TextRange {
    let (start, end) = (usize::from(lines.start()), usize::from(lines.end()));
    let blank_run_after = {
        let mut e = end;
        while e < text.len() {
            let le = line_end_inclusive(text, e);
            if !text[e..le].trim().is_empty() {
                break;
            }
            e = le;
        }
        e
    };
    let blank_run_before = {
        let mut s = start;
        while s > 0 {
            let ls = line_start(text, s - 1);
            if !text[ls..s].trim().is_empty() {
                break;
            }
            s = ls;
        }
        s
    };
    let is_last = index + 1 == block.stmts.len();
    let (new_start, new_end) = if index == 0 && !is_last {
        (start, blank_run_after)
    } else if is_last && index > 0 {
        (blank_run_before, end)
    } else if blank_run_before < start && blank_run_after > end {
        // Blank lines on both sides: keep the ones after, which separate what
        // follows (two before a top-level `def`, as PEP 8 wants).
        (blank_run_before, end)
    } else {
        (start, end)
    };
    TextRange::new(
        TextSize::try_from(new_start).unwrap_or(lines.start()),
        TextSize::try_from(new_end).unwrap_or(lines.end()),
    )
}

/// Apply edits together; `None` if any two overlap (the engine then applies
/// fewer at a time: a collision never produces a mangled file).
pub fn apply(text: &str, edits: &mut [Edit]) -> Option<String> {
    edits.sort_by_key(|e| (e.range.start(), e.range.end()));
    let mut out = String::with_capacity(text.len());
    let mut last = 0usize;
    for e in edits.iter() {
        let (s, end) = (usize::from(e.range.start()), usize::from(e.range.end()));
        if s < last {
            return None;
        }
        out.push_str(&text[last..s]);
        out.push_str(&e.content);
        last = end;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Map an offset in the text `edits` produced back to the text they were
/// applied to; inside replaced text, to the start of what it replaced.
pub fn map_back(edits: &[Edit], offset: TextSize) -> TextSize {
    let mut shift: i64 = 0; // new offset minus old offset so far
    for e in edits {
        let new_start = i64::from(u32::from(e.range.start())) + shift;
        let new_end = new_start + e.content.len() as i64;
        let at = i64::from(u32::from(offset));
        if at < new_start {
            break;
        }
        if at < new_end {
            return e.range.start();
        }
        shift += e.content.len() as i64 - i64::from(u32::from(e.range.len()));
    }
    TextSize::try_from((i64::from(u32::from(offset)) - shift).max(0) as usize).unwrap_or(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: u32, b: u32) -> TextRange {
        TextRange::new(a.into(), b.into())
    }

    #[test]
    fn overlap_rules() {
        assert!(overlaps(r(0, 5), r(4, 8)));
        assert!(!overlaps(r(0, 5), r(5, 8)));
        assert!(!overlaps(r(5, 5), r(0, 5)));
        assert!(overlaps(r(3, 3), r(0, 5)));
    }

    #[test]
    fn deleting_a_whole_block_leaves_pass() {
        let text = "if x:\n    a()\n    b()\nc()\n";
        let blocks = vec![
            Block { stmts: vec![r(0, 22), r(22, 25)], owner: None },
            Block { stmts: vec![r(10, 13), r(18, 21)], owner: Some((StmtRef { block: 0, index: 0 }, false)) },
        ];
        let deletes = [StmtRef { block: 1, index: 0 }, StmtRef { block: 1, index: 1 }].into_iter().collect();
        let mut edits = plan_deletions(text, &blocks, &deletes);
        assert_eq!(apply(text, &mut edits).as_deref(), Some("if x:\n    pass\nc()\n"));
    }

    #[test]
    fn droppable_owner_goes_with_its_body() {
        let text = "if x:\n    a()\nc()\n";
        let blocks = vec![
            Block { stmts: vec![r(0, 13), r(14, 17)], owner: None },
            Block { stmts: vec![r(10, 13)], owner: Some((StmtRef { block: 0, index: 0 }, true)) },
        ];
        let deletes = [StmtRef { block: 1, index: 0 }].into_iter().collect();
        let mut edits = plan_deletions(text, &blocks, &deletes);
        assert_eq!(apply(text, &mut edits).as_deref(), Some("c()\n"));
    }

    #[test]
    fn semicolon_statements() {
        let text = "a(); b(); c()\n";
        let blocks = vec![Block { stmts: vec![r(0, 3), r(5, 8), r(10, 13)], owner: None }];
        let deletes = [StmtRef { block: 0, index: 1 }].into_iter().collect();
        let mut edits = plan_deletions(text, &blocks, &deletes);
        assert_eq!(apply(text, &mut edits).as_deref(), Some("a(); c()\n"));
    }

    #[test]
    fn a_deleted_statement_keeps_the_blank_lines_before_a_def() {
        let text = "import a\n\nsetup()\n\n\ndef f():\n    pass\n";
        let blocks = vec![Block { stmts: vec![r(0, 8), r(10, 17), r(20, 37)], owner: None }];
        let deletes = [StmtRef { block: 0, index: 1 }].into_iter().collect();
        let mut edits = plan_deletions(text, &blocks, &deletes);
        assert_eq!(apply(text, &mut edits).as_deref(), Some("import a\n\n\ndef f():\n    pass\n"));
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let mut edits = vec![Edit::replace(r(0, 5), "x"), Edit::replace(r(3, 8), "y")];
        assert_eq!(apply("0123456789", &mut edits), None);
    }

    #[test]
    fn offsets_map_back_through_edits() {
        // "aaXbb" ← replace [2,3) "X" by "YYY" → "aaYYYbb"
        let edits = vec![Edit::replace(r(2, 3), "YYY")];
        assert_eq!(map_back(&edits, 1.into()), TextSize::from(1));
        assert_eq!(map_back(&edits, 3.into()), TextSize::from(2)); // inside the replacement
        assert_eq!(map_back(&edits, 5.into()), TextSize::from(3)); // after it
        let deletion = vec![Edit::delete(r(0, 4))];
        assert_eq!(map_back(&deletion, 0.into()), TextSize::from(4));
    }
}
