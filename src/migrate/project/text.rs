//! A text handler's fixes applied to a fixpoint, as the Python engine applies its own: the
//! non-overlapping fixes of a pass together, every result checked to still load, a fix that
//! breaks the file dropped and reported. Below the handlers that use it (every file kind's
//! dispatch in [`super`], the notebook's IPython lines).

use std::collections::BTreeMap;

use ruff_text_size::{TextRange, TextSize};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::fix::{self, Edit, MAX_PASSES};
use crate::migrate::rules::RuleSet;
use crate::migrate::selection::Selection;

/// The findings of the selected rules, in the order of the text.
pub(super) fn selected(mut diagnostics: Vec<Diagnostic>, rules: &RuleSet, selection: &Selection) -> Vec<Diagnostic> {
    diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
    diagnostics.sort_by_key(|d| (d.range.start(), d.rule));
    diagnostics
}

/// The outcome of migrating a non-Python file's text.
#[derive(Debug, Default)]
pub struct TextMigration {
    pub output: String,
    pub applied: BTreeMap<String, usize>,
    /// Findings left in the output (no applicable fix), located in the output.
    pub remaining: Vec<Diagnostic>,
    /// The input does not load as its kind; nothing was changed.
    pub invalid: Option<String>,
    /// Fixes dropped because the file would no longer load: (rule code, offset in the input, why).
    pub reverted: Vec<(String, TextSize, String)>,
    passes: Vec<Vec<Edit>>,
}

impl TextMigration {
    /// Where `offset` in the output came from in the input.
    pub fn original_offset(&self, offset: TextSize) -> TextSize {
        self.passes.iter().rev().fold(offset, |at, edits| fix::map_back(edits, at))
    }
}

/// [`super::migrate`] with the findings and the check that the text still loads given as functions
/// (a notebook's IPython lines are checked this way, on its joined cells).
pub fn migrate_with(
    original: &str,
    check: impl Fn(&str) -> Vec<Diagnostic>,
    validate: impl Fn(&str) -> Result<(), String>,
    rules: &RuleSet,
    selection: &Selection,
) -> TextMigration {
    let mut m = TextMigration { output: original.to_string(), ..TextMigration::default() };
    if let Err(e) = validate(original) {
        m.invalid = Some(e);
        return m;
    }
    // The input was validated above and every pass's result below: no need to parse it again here.
    let lint = |text: &str| selected(check(text), rules, selection);
    let applies = |d: &Diagnostic| d.fix.as_ref().is_some_and(|f| selection.applies(f));
    for _ in 0..MAX_PASSES {
        let diagnostics = lint(&m.output);
        let dropped = |d: &Diagnostic| {
            let at = m.original_offset(d.range.start());
            m.reverted.iter().any(|(code, offset, _)| *code == rules.rules[d.rule].code && *offset == at)
        };
        let fixable: Vec<&Diagnostic> = diagnostics.iter().filter(|d| applies(d) && !dropped(d)).collect();
        if fixable.is_empty() {
            m.remaining = diagnostics;
            return m;
        }
        // Non-overlapping fixes, first come first served; the others wait for the next pass.
        let mut chosen: Vec<&Diagnostic> = Vec::new();
        let mut taken: Vec<TextRange> = Vec::new();
        for d in fixable {
            let edits = &d.fix.as_ref().expect("fixable").edits;
            let free = |e: &Edit| taken.iter().all(|t| t.end() <= e.range.start() || e.range.end() <= t.start());
            if edits.iter().all(free) {
                taken.extend(edits.iter().map(|e| e.range));
                chosen.push(d);
            }
        }
        let attempt = |ds: &[&Diagnostic]| -> Result<(String, Vec<Edit>), String> {
            let mut edits: Vec<Edit> = ds.iter().flat_map(|d| d.fix.as_ref().expect("fixable").edits.clone()).collect();
            let out = fix::apply(&m.output, &mut edits).ok_or_else(|| "its edits overlap".to_string())?;
            validate(&out)?;
            Ok((out, edits))
        };
        let (output, edits, applied) = match attempt(&chosen) {
            Ok((out, edits)) => (out, edits, chosen),
            Err(_) => {
                // Drop the fixes that break the file on their own; apply the rest.
                let mut good = Vec::new();
                for d in chosen {
                    match attempt(&[d]) {
                        Ok(_) => good.push(d),
                        Err(why) => {
                            let at = m.original_offset(d.range.start());
                            m.reverted.push((rules.rules[d.rule].code.clone(), at, why));
                        }
                    }
                }
                match attempt(&good) {
                    Ok((out, edits)) => (out, edits, good),
                    Err(_) => continue, // together they still fail: the next pass retries without the dropped ones
                }
            }
        };
        for d in &applied {
            *m.applied.entry(rules.rules[d.rule].code.clone()).or_default() += 1;
        }
        m.output = output;
        m.passes.push(edits);
    }
    m.remaining = lint(&m.output);
    m
}
