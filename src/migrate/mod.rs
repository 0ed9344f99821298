//! The migrate/check engine. Per file: parse → resolve ([`semantic`]) →
//! match ([`checker`]) → fix ([`fix`]), to a fixpoint; [`render`] and
//! [`commands`] turn results into diffs, diagnostics and files. Its layers, bottom up (see the
//! crate's documentation): [`target`], [`style`], [`fix`], [`diagnostic`], [`notes`] → [`rules`] →
//! [`facts`], [`selection`], [`semantic`] → [`checker`] beside [`project`] → this module's
//! pipeline, [`reader`], [`render`], [`report`] → [`commands`].
//!
//! Ruff's guarantees: all non-overlapping edits of a pass are applied
//! together, the result is re-parsed, and passes repeat until nothing is left
//! to fix (bounded). A pass that breaks the syntax reverts the whole file.

pub mod checker;
pub mod commands;
pub mod diagnostic;
pub mod facts;
pub mod fix;
pub mod notes;
pub mod project;
pub mod reader;
pub mod render;
pub mod report;
pub mod rules;
pub mod selection;
pub mod semantic;
pub mod style;
pub mod target;

use std::collections::{BTreeMap, BTreeSet};

use ruff_python_ast::{self as ast, Stmt};
use ruff_python_parser::{ParseError, Parsed, parse_module};
use ruff_text_size::{Ranged, TextSize};

use crate::migrate::target::restart_barrier;
use crate::source::{has_word, line_end_inclusive, newline_of};
use crate::timings::{Phase, time};
use checker::{CheckResult, Contingent, check};
use diagnostic::Diagnostic;
pub use fix::MAX_PASSES;
use fix::{Edit, Fix, ImportRequest};
use rules::RuleSet;
pub use selection::Selection;

/// The outcome of migrating one file's text.
#[derive(Debug)]
pub struct Migration {
    pub output: String,
    /// Fixes applied, by rule code.
    pub applied: BTreeMap<String, usize>,
    /// What is left in the output: findings without an applicable fix.
    pub remaining: Vec<Diagnostic>,
    pub problem: Option<Problem>,
    /// Fixes that were not applied because they would have broken the file
    /// (a bug in a rule): reverted, the rest of the file is still migrated.
    pub reverted: Vec<Reverted>,
    /// Each pass's edits, to map output offsets back to the original text.
    passes: Vec<Vec<Edit>>,
    /// The helpers the applied fixes take from the project's helper module, by name: the
    /// module must define them ([`Selection::helper_module`]).
    pub helpers: BTreeMap<String, fix::Helper>,
}

impl Migration {
    /// Where `offset` in the output came from in the original text: manual
    /// items must point at the user's own lines, not the rewritten ones.
    pub fn original_offset(&self, offset: TextSize) -> TextSize {
        self.passes.iter().rev().fold(offset, |at, edits| fix::map_back(edits, at))
    }
}

#[derive(Debug)]
pub enum Problem {
    /// The input does not parse; nothing was changed.
    Syntax(ParseError),
    /// Still changing after `MAX_PASSES` passes; the last output is kept.
    NoConvergence { rules: Vec<String> },
    /// The engine panicked on this file (a bug); the file is left unchanged.
    Internal(crate::isolate::Panic),
}

/// A fix that was not applied, and why.
#[derive(Debug, Clone)]
pub struct Reverted {
    pub rule: String,
    /// Offset of the finding in the original text.
    pub offset: TextSize,
    pub reason: String,
}

/// What [`lint`] found in a file some rule could match.
pub struct Linted {
    pub diagnostics: Vec<Diagnostic>,
    pub parsed: Parsed<ast::ModModule>,
    /// Its `# noqa` directives.
    pub noqa: crate::noqa::Noqa,
}

/// Lint only: the findings for `text`, or `None` when no rule can match it
/// ([`RuleSet::may_match`]). Such a file cannot hold a torch_xla reference, so it is parsed
/// only when the selection asks for every file's syntax errors ([`Selection::parse_every_file`]).
pub fn lint(text: &str, rules: &RuleSet, selection: &Selection) -> Result<Option<Linted>, ParseError> {
    if !may_match(text, rules, selection) {
        if selection.parse_every_file {
            time(Phase::Parse, || parse_module(text))?;
        }
        return Ok(None);
    }
    let parsed = time(Phase::Parse, || parse_module(text))?;
    let CheckResult { mut diagnostics, noqa, .. } = time(Phase::Semantic, || check(&parsed, text, rules, selection));
    diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
    Ok(Some(Linted { diagnostics, parsed, noqa }))
}

/// Whether a selected rule could match in `text`: the prefilter of the rules on by default, or
/// an opt-in performance rule's words (they hold in most PyTorch files, so they are looked
/// for only when such a rule is selected).
pub(crate) fn may_match(text: &str, rules: &RuleSet, selection: &Selection) -> bool {
    rules.may_match(text)
        || (!selection.opt_in.is_empty() && checker::performance_may_match(text))
        || selection.run.as_ref().is_some_and(|run| run.imports_torch_xla_names(text))
}

/// [`migrate`], with a panic turned into [`Problem::Internal`] and the file left unchanged.
pub fn migrate_isolated(original: &str, rules: &RuleSet, selection: &Selection) -> Migration {
    crate::isolate::catch(|| {
        fault_injection_point(original);
        migrate(original, rules, selection)
    })
    .unwrap_or_else(|panic| Migration { problem: Some(Problem::Internal(panic)), ..Migration::unchanged(original) })
}

/// Debug builds panic on a file holding this marker, so the integration tests
/// can prove that one file's failure never takes down a run.
pub const PANIC_MARKER: &str = "# xla2tpu-fault-injection: panic";

/// Debug builds panic on a file holding this marker as soon as it is read, before any pass of
/// its kind, so the integration tests can prove the per-file guard covers every pass.
pub const PANIC_ON_READ_MARKER: &str = "xla2tpu-fault-injection: panic-on-read";

/// Debug builds panic on a file holding this marker when its migration is finished (diffed or
/// written), which for files sharing a helper module happens after every worker is done.
pub const PANIC_ON_FINISH_MARKER: &str = "xla2tpu-fault-injection: panic-on-finish";

/// Debug builds append to a file holding this marker just before `--write` replaces it, so the
/// integration tests can prove an edit made during a run is never overwritten.
pub const CHANGE_MARKER: &str = "# xla2tpu-fault-injection: change-before-write";

/// Debug builds append to a file holding this marker once its new content is written and
/// synced, just before the rename: the slow step, where edits were once lost.
pub const CHANGE_DURING_SYNC_MARKER: &str = "# xla2tpu-fault-injection: change-during-sync";

/// Debug builds delete a file holding this marker at the same point.
pub const DELETE_DURING_SYNC_MARKER: &str = "# xla2tpu-fault-injection: delete-during-sync";

/// Debug builds kill themselves (SIGKILL) at the same point, while a file holding this marker
/// is being rewritten: nothing may be left behind.
pub const KILL_DURING_WRITE_MARKER: &str = "# xla2tpu-fault-injection: kill-during-write";

/// Where `--write` is when a fault is injected.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    BeforeWrite,
    AfterSync,
}

pub(crate) fn fault_injection_change(path: &std::path::Path, stage: Stage) {
    if !cfg!(debug_assertions) {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else { return };
    let append = match stage {
        Stage::BeforeWrite => text.contains(CHANGE_MARKER),
        Stage::AfterSync => text.contains(CHANGE_DURING_SYNC_MARKER),
    };
    if append {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().append(true).open(path).expect("the test's own file");
        writeln!(f, "edited = True  # by the user, meanwhile").expect("append");
    }
    if stage == Stage::AfterSync && text.contains(DELETE_DURING_SYNC_MARKER) {
        std::fs::remove_file(path).expect("the test's own file");
    }
    if stage == Stage::AfterSync && text.contains(KILL_DURING_WRITE_MARKER) {
        // SAFETY: raising a signal in our own process.
        unsafe { libc::raise(libc::SIGKILL) };
    }
}

pub(crate) fn fault_injection_point(text: &str) {
    if cfg!(debug_assertions) && text.contains(PANIC_MARKER) {
        panic!("fault injected for testing");
    }
}

/// Apply fixes to a fixpoint.
pub fn migrate(original: &str, rules: &RuleSet, selection: &Selection) -> Migration {
    let mut m = Migration::unchanged(original);
    // Nothing any rule could match: parsed for its syntax errors only if asked (see `lint`).
    let relevant = may_match(original, rules, selection);
    if !relevant && !selection.parse_every_file {
        return m;
    }
    // A pass's result is parsed once, to prove it still parses, and that tree is the next pass's.
    let mut reparsed: Option<Parsed<ast::ModModule>> = None;
    let mut broke_calls = false;
    for pass in 0..=MAX_PASSES {
        let parsed = match reparsed.take().map_or_else(|| time(Phase::Parse, || parse_module(&m.output)), Ok) {
            Ok(parsed) => parsed,
            Err(error) => {
                // Every pass's result was parsed before it was kept, so only the input can fail here.
                debug_assert_eq!(pass, 0);
                m.problem = Some(Problem::Syntax(error));
                return m;
            }
        };
        if !relevant {
            return m;
        }
        let CheckResult { mut diagnostics, blocks, contingent, .. } =
            time(Phase::Semantic, || check(&parsed, &m.output, rules, selection));
        diagnostics.retain(|d| selection.enabled(&rules.rules[d.rule].code));
        // An import removal waiting on this pass's fixes goes where its finding would be fixed.
        let import_rule = rules.builtin(rules::Builtin::Import);
        let contingent: Vec<&Contingent> = contingent
            .iter()
            .filter(|c| {
                let kept = diagnostics.iter().any(|d| Some(d.rule) == import_rule && d.range == c.range);
                if c.unreported {
                    return selection.applies(&c.fix);
                }
                kept && selection.applies(&c.fix)
                    && import_rule.is_some_and(|r| !m.was_reverted(&rules.rules[r].code, c.range.start()))
            })
            .collect();
        let fixable: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| d.fix.as_ref().is_some_and(|f| selection.applies(f)))
            .filter(|d| !m.was_reverted(&rules.rules[d.rule].code, d.range.start()))
            .collect();
        if fixable.is_empty() {
            // The fixes are done: break the calls they made too long, and check that text again.
            if pass < MAX_PASSES
                && !broke_calls
                && m.output != original
                && let Some((next, edits, tree)) = break_long_calls(original, &m.output, &parsed)
            {
                broke_calls = true;
                m.output = next;
                m.passes.push(edits);
                reparsed = Some(tree);
                continue;
            }
            m.remaining = diagnostics;
            return m;
        }
        if pass == MAX_PASSES {
            let rules_left = fixable.iter().map(|d| rules.rules[d.rule].code.clone()).collect::<BTreeSet<_>>();
            m.problem = Some(Problem::NoConvergence { rules: rules_left.into_iter().collect() });
            m.remaining = diagnostics.clone();
            return m;
        }
        let fixes: Vec<&Fix> = fixable.iter().filter_map(|d| d.fix.as_ref()).collect();
        let pass_input = Pass { text: &m.output, module: parsed.syntax(), blocks: &blocks, fixes: &fixes };
        let mut chosen = fix::choose(&fixes, &m.output, &blocks);
        let mut refused = Vec::new();
        let (next, edits, applied, tree) = time(Phase::Fix, || {
            if let Some(done) = pass_input.with_contingent(&chosen, &contingent) {
                return done;
            }
            loop {
                match pass_input.apply(&chosen) {
                    Ok(done) => break done,
                    Err(bad) => {
                        // Drop the fixes that fail on their own and retry the rest; never keep a broken file.
                        for (i, reason) in bad {
                            chosen.retain(|&c| c != i);
                            refused.push((i, reason));
                        }
                    }
                }
            }
        });
        for (i, reason) in refused {
            let d = fixable[i];
            let offset = m.original_offset(d.range.start());
            m.reverted.push(Reverted { rule: rules.rules[d.rule].code.clone(), offset, reason });
        }
        for i in applied {
            // Past the fixable findings' fixes come the contingent import removals: a torch_xla
            // import's counts as its finding's; a user import the fixes left unused has none.
            let rule = match fixable.get(i) {
                Some(d) => {
                    for h in fixes[i].helpers.iter().filter(|h| h.module.is_some()) {
                        m.helpers.entry(h.name.clone()).or_insert_with(|| h.clone());
                    }
                    d.rule
                }
                None if contingent[i - fixable.len()].unreported => continue,
                None => import_rule.expect("a contingent fix is the import rule's"),
            };
            *m.applied.entry(rules.rules[rule].code.clone()).or_default() += 1;
        }
        if next == m.output {
            m.remaining = diagnostics;
            return m;
        }
        m.output = next;
        m.passes.push(edits);
        reparsed = Some(tree);
    }
    unreachable!("the loop returns by its last pass")
}

impl Migration {
    fn unchanged(original: &str) -> Migration {
        Migration {
            output: original.to_string(),
            applied: BTreeMap::new(),
            remaining: Vec::new(),
            problem: None,
            reverted: Vec::new(),
            passes: Vec::new(),
            helpers: BTreeMap::new(),
        }
    }

    fn was_reverted(&self, rule: &str, offset: TextSize) -> bool {
        !self.reverted.is_empty() && {
            let original = self.original_offset(offset);
            self.reverted.iter().any(|r| r.rule == rule && r.offset == original)
        }
    }
}

/// A pass's result: the new text, the edits that made it, the fixes applied, and the text's tree.
type Applied = (String, Vec<Edit>, Vec<usize>, Parsed<ast::ModModule>);
/// Fixes that cannot be applied, with why.
type Refused = Vec<(usize, String)>;

/// One pass's fixes over one text.
struct Pass<'a> {
    text: &'a str,
    module: &'a ast::ModModule,
    blocks: &'a [fix::Block],
    fixes: &'a [&'a Fix],
}

impl Pass<'_> {
    /// The text with the `chosen` fixes applied, the edits that made it and the
    /// fixes they came from; or the fixes that cannot be applied, with why.
    fn apply(&self, chosen: &[usize]) -> Result<Applied, Refused> {
        if let Some((next, edits)) = self.assemble(chosen)
            && let Ok(tree) = parse_module(&next)
        {
            return Ok((next, edits, chosen.to_vec(), tree));
        }
        // Something in this set breaks the file or collides: find the fixes that do so alone.
        let mut bad = Vec::new();
        for &i in chosen {
            match self.assemble(&[i]) {
                None => bad.push((i, "its edits overlap each other".to_string())),
                Some((next, _)) => {
                    if let Err(e) = parse_module(&next) {
                        bad.push((i, format!("it produced invalid syntax ({})", e.error)));
                    }
                }
            }
        }
        if bad.is_empty() {
            // Each fix is fine alone but some collide together (a deletion planned
            // around another fix's edit): keep what fits, the rest wait a pass.
            let mut kept: Vec<usize> = Vec::new();
            let mut last = None;
            for &i in chosen {
                kept.push(i);
                match self.assemble(&kept).and_then(|(next, edits)| Some((parse_module(&next).ok()?, next, edits))) {
                    Some((tree, next, edits)) => last = Some((next, edits, tree)),
                    None => {
                        kept.pop();
                    }
                }
            }
            let (next, edits, tree) = last.expect("the first fix applies alone");
            return Ok((next, edits, kept, tree));
        }
        Err(bad)
    }

    /// The `chosen` fixes with those `contingent` import removals whose names the result no
    /// longer holds as words anywhere (so no use of them is left, nor a string annotation or
    /// `del` naming them); the others wait for the next pass, which finds their imports unused.
    /// `None` when no removal can go now, or the result does not parse: then [`Pass::apply`]
    /// sorts out the chosen fixes alone. The removals' indices continue after `self.fixes`.
    fn with_contingent(&self, chosen: &[usize], contingent: &[&Contingent]) -> Option<Applied> {
        if contingent.is_empty() || chosen.is_empty() {
            return None;
        }
        let fixes: Vec<&Fix> = self.fixes.iter().copied().chain(contingent.iter().map(|c| &c.fix)).collect();
        let all = Pass { fixes: &fixes, ..*self };
        let mut extra: Vec<usize> = (self.fixes.len()..fixes.len()).collect();
        while !extra.is_empty() {
            let with: Vec<usize> = chosen.iter().chain(&extra).copied().collect();
            let (next, edits) = all.assemble(&with)?;
            let before = extra.len();
            extra.retain(|&i| !contingent[i - self.fixes.len()].names.iter().any(|n| has_word(&next, n)));
            if extra.len() == before {
                let tree = parse_module(&next).ok()?;
                return Some((next, edits, with, tree));
            }
        }
        None
    }

    /// Apply the `chosen` fixes together, with their deletions planned and their
    /// imports added; `None` if the resulting edits overlap.
    fn assemble(&self, chosen: &[usize]) -> Option<(String, Vec<Edit>)> {
        let mut edits: Vec<Edit> = Vec::new();
        let mut deletes = BTreeSet::new();
        // What fixes before the last kernel restart need goes at the top; after it, after it.
        let barrier = restart_barrier(self.text);
        let mut imports: [BTreeSet<ImportRequest>; 2] = Default::default();
        let mut helpers: [BTreeSet<&fix::Helper>; 2] = Default::default();
        for &i in chosen {
            let f = self.fixes[i];
            let start = f.edits.iter().map(|e| e.range.start()).min();
            let side = usize::from(barrier.zip(start).is_some_and(|(b, s)| s >= b));
            edits.extend(f.edits.iter().cloned());
            deletes.extend(f.deletes.iter().copied());
            imports[side].extend(f.imports.iter().cloned());
            helpers[side].extend(f.helpers.iter());
        }
        edits.extend(fix::plan_deletions(self.text, self.blocks, &deletes));
        for (side, since) in [(0, None), (1, barrier)] {
            if !imports[side].is_empty() || !helpers[side].is_empty() {
                edits.extend(import_edits(self.module, self.text, &imports[side], &helpers[side], since));
            }
        }
        // Two fixes may need the same edit (two launchers of one worker insert its prelude):
        // it is made once.
        edits.sort_by(|a, b| {
            (a.range.start(), a.range.end(), &a.content).cmp(&(b.range.start(), b.range.end(), &b.content))
        });
        edits.dedup_by(|a, b| a.range == b.range && a.content == b.content);
        let next = fix::apply(self.text, &mut edits)?;
        Some((next, edits))
    }
}

/// [`style::break_long_calls`] made: the text, its edits and its tree; `None` when there is
/// nothing to break (or, which cannot happen, the result would not parse).
fn break_long_calls(
    original: &str,
    text: &str,
    parsed: &Parsed<ast::ModModule>,
) -> Option<(String, Vec<Edit>, Parsed<ast::ModModule>)> {
    let unit = style::FileStyle::read(parsed.tokens(), text).unit;
    let mut edits: Vec<Edit> = style::break_long_calls(original, text, parsed.syntax(), unit)
        .into_iter()
        .map(|(range, content)| Edit::replace(range, content))
        .collect();
    if edits.is_empty() {
        return None;
    }
    let next = fix::apply(text, &mut edits)?;
    let tree = parse_module(&next).ok()?;
    Some((next, edits, tree))
}

/// The standard-library modules fixes import; isort puts them above third-party ones.
const STDLIB: &[&str] = &["datetime", "multiprocessing", "os", "sys", "time", "unittest"];

/// The insertions for every import a pass needs, placed in the file's import
/// block (after the docstring and `__future__` imports): standard-library
/// modules before the first import, the others after the leading run of
/// top-level imports, as isort would order them. Helper definitions follow the
/// imports, two blank lines around each (PEP 8). With `since` (a notebook's last kernel
/// restart), the file is what follows it.
fn import_edits(
    module: &ast::ModModule,
    text: &str,
    imports: &BTreeSet<ImportRequest>,
    helpers: &BTreeSet<&fix::Helper>,
    since: Option<TextSize>,
) -> Vec<Edit> {
    let newline = newline_of(text);
    let at_line_end = |end: TextSize| TextSize::try_from(line_end_inclusive(text, end.into())).unwrap_or_default();
    let mut header_end: Option<TextSize> = None; // after the docstring and `__future__` imports
    let mut first_import: Option<TextSize> = None;
    let mut imports_end: Option<TextSize> = None;
    let body: &[Stmt] = match since {
        Some(at) => &module.body[module.body.partition_point(|s| s.start() < at)..],
        None => &module.body,
    };
    for (i, stmt) in body.iter().enumerate() {
        let is_docstring =
            i == 0 && since.is_none() && matches!(stmt, Stmt::Expr(e) if e.value.is_string_literal_expr());
        let is_future =
            matches!(stmt, Stmt::ImportFrom(f) if f.module.as_ref().is_some_and(|m| m.id.as_str() == "__future__"));
        if is_docstring || is_future {
            header_end = Some(stmt.end());
        } else if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
            first_import.get_or_insert(
                TextSize::try_from(crate::source::line_start(text, stmt.start().into())).unwrap_or_default(),
            );
        } else {
            break;
        }
        imports_end = Some(stmt.end());
    }
    let lines = |requests: &[&ImportRequest]| -> String {
        requests.iter().map(|r| format!("{}{newline}", r.statement())).collect()
    };
    // `import a.b.c` binds `a`, so name lookup cannot tell that an earlier pass already added it
    // to the leading imports (one further down runs too late for the helpers above it).
    let leading_count = body.iter().take_while(|stmt| imports_end.is_some_and(|end| stmt.end() <= end)).count();
    let leading: Vec<&ast::StmtImport> = body[..leading_count].iter().filter_map(Stmt::as_import_stmt).collect();
    let is_request = |a: &ast::Alias, r: &ImportRequest| {
        a.name.id.as_str() == r.module && a.asname.as_ref().map(|n| n.id.as_str()) == r.alias.as_deref()
    };
    let missing: Vec<&ImportRequest> =
        imports.iter().filter(|r| !leading.iter().any(|i| i.names.iter().any(|a| is_request(a, r)))).collect();
    let (stdlib, others): (Vec<&ImportRequest>, Vec<&ImportRequest>) =
        missing.iter().copied().partition(|r| STDLIB.contains(&r.module.as_str()));
    let mut edits = Vec::new();
    // Helpers of the project's helper module: one `from _torchtpu import a, b` per file, an
    // earlier pass's extended in place.
    let mut from_module: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for h in helpers {
        if let Some(m) = h.module.as_ref().filter(|m| m.called) {
            from_module.entry(m.import.as_str()).or_default().insert(h.name.as_str());
        }
    }
    let helpers: BTreeSet<&fix::Helper> = helpers.iter().copied().filter(|h| h.module.is_none()).collect();
    let mut from_lines = String::new();
    for (module_name, names) in &mut from_module {
        let existing = body.iter().find_map(|stmt| match stmt {
            Stmt::ImportFrom(f)
                if f.level == u32::from(module_name.starts_with('.'))
                    && f.module.as_ref().map(|m| m.id.as_str()) == Some(module_name.trim_start_matches('.'))
                    && f.names.iter().all(|a| a.asname.is_none() && a.name.id.as_str() != "*") =>
            {
                Some(f)
            }
            _ => None,
        });
        if let Some(f) = existing {
            let had: BTreeSet<&str> = f.names.iter().map(|a| a.name.id.as_str()).collect();
            if names.iter().all(|n| had.contains(n)) {
                continue;
            }
            names.extend(had);
            edits.push(Edit::replace(f.range, from_import(module_name, names, newline)));
            continue;
        }
        from_lines.push_str(&format!("{}{newline}", from_import(module_name, names, newline)));
    }
    let helpers = &helpers;
    if let (Some(first), false) = (first_import, stdlib.is_empty()) {
        edits.push(Edit::insert(first, lines(&stdlib)));
    }
    let mut rest: Vec<&ImportRequest> = match first_import {
        Some(_) => others,
        None => missing.clone(),
    };
    // Beside its own package in the block, in the block's order: after the last of its imports
    // that sorts before it (`import torch.distributed as dist` under `import torch`), else above
    // the first (`import torch` above `import torch.distributed`). Only what has no such
    // neighbour, or would go after the block's last line anyway, goes with the rest, ahead of
    // the helpers (one insertion there: nothing orders two at one place).
    let block_end = imports_end.map(at_line_end);
    rest.retain(|r| {
        let package = r.module.split('.').next().unwrap_or_default();
        let of_package = |i: &ast::StmtImport, sorts_before: bool| {
            i.names.iter().all(|a| {
                let name = a.name.id.as_str();
                name.split('.').next() == Some(package) && (!sorts_before || name <= r.module.as_str())
            })
        };
        let at = match leading.iter().rev().find(|i| of_package(i, true)) {
            Some(before) => at_line_end(before.end()),
            None => match leading.iter().find(|i| of_package(i, false)) {
                Some(after) => {
                    TextSize::try_from(crate::source::line_start(text, after.start().into())).unwrap_or_default()
                }
                None => return true,
            },
        };
        if Some(at) == block_end {
            return true;
        }
        edits.push(Edit::insert(at, lines(&[r])));
        false
    });
    // The same import further down (a later notebook cell's) would now rebind the name for
    // nothing (F811): the one at the top serves both. Only a line of its own goes (a trailing
    // comment such as `# noqa: E402` with it).
    for r in &missing {
        let later = body[leading_count..]
            .iter()
            .find(|stmt| matches!(stmt, Stmt::Import(i) if i.names.len() == 1 && is_request(&i.names[0], r)));
        if let Some(lines) = later.and_then(|stmt| fix::whole_lines(text, stmt.range())) {
            edits.push(Edit::delete(lines));
        }
    }
    if rest.is_empty() && helpers.is_empty() && from_lines.is_empty() {
        return edits;
    }
    let mut text_of = lines(&rest) + &from_lines;
    for helper in helpers {
        let body: String = helper.text.trim_end().split('\n').map(|l| format!("{l}{newline}")).collect();
        text_of = format!("{text_of}{newline}{newline}{body}");
    }

    match imports_end.or(header_end) {
        Some(end) => {
            let at = at_line_end(end);
            if !helpers.is_empty() {
                // Two blank lines between the last helper and the code that follows.
                let after = &text[usize::from(at)..];
                let blank = after.lines().take_while(|l| l.trim().is_empty()).count();
                if blank < after.lines().count() {
                    text_of.push_str(&newline.repeat(2usize.saturating_sub(blank)));
                }
            }
            if usize::from(at) == text.len() && !text.ends_with('\n') {
                // The anchor is the last line and has no newline of its own.
                edits.push(Edit::insert(at, format!("{newline}{}", text_of.trim_end())));
            } else {
                edits.push(Edit::insert(at, text_of));
            }
        }
        // No docstring or imports: before the first statement, so a shebang, an
        // encoding declaration or a licence header stays at the top.
        None => {
            let at = body.first().map_or(since.unwrap_or(TextSize::try_from(text.len()).unwrap_or_default()), |s| {
                TextSize::try_from(crate::source::line_start(text, s.start().into())).unwrap_or_default()
            });
            if !helpers.is_empty() {
                text_of = format!("{}{newline}{newline}{newline}", text_of.trim_start_matches(newline).trim_end());
            }
            edits.push(Edit::insert(at, text_of));
        }
    }
    edits
}

/// `from module import a, b`, one name a line in parentheses where it would pass 88 columns
/// (as `ruff format` writes it).
fn from_import(module: &str, names: &BTreeSet<&str>, newline: &str) -> String {
    let names: Vec<&str> = names.iter().copied().collect();
    let line = format!("from {module} import {}", names.join(", "));
    if line.len() <= style::LINE_LENGTH {
        return line;
    }
    let listed: String = names.iter().map(|n| format!("    {n},{newline}")).collect();
    format!("from {module} import ({newline}{listed})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> String {
        let rules = RuleSet::load(&[]).expect("rules");
        migrate(src, &rules, &Selection { unsafe_fixes: true, ..Selection::default() }).output
    }

    fn migrated(src: &str, selection: &Selection) -> Migration {
        let rules = RuleSet::load(&[]).expect("rules");
        let m = migrate(src, &rules, selection);
        assert_eq!(migrate(&m.output, &rules, selection).output, m.output, "a second run changes nothing");
        m
    }

    #[test]
    fn an_import_goes_in_the_pass_that_removes_its_last_use() {
        let m = migrated(
            "import torch_xla.core.xla_model as xm\nimport torch\n\nxm.mark_step()\nprint(1)\n",
            &Selection::default(),
        );
        assert_eq!(m.output, "import torch\n\nprint(1)\n");
        assert_eq!(m.passes.len(), 1, "one pass with edits, then the one that finds nothing");
        assert_eq!(m.applied.get("TPU001"), Some(&1));
        assert_eq!(m.applied.get("TPU110"), Some(&1));
    }

    #[test]
    fn an_import_whose_name_is_left_in_the_text_goes_a_pass_later() {
        // The comment still says `xm`: no proof in this pass that no use is left.
        let src = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()  # sync\nprint(1)  # was xm\n";
        let m = migrated(src, &Selection::default());
        assert_eq!(m.output, "print(1)  # was xm\n");
        assert_eq!(m.passes.len(), 2);
        assert_eq!(m.applied.get("TPU001"), Some(&1));
    }

    #[test]
    fn a_device_loader_a_subclass_in_another_file_iterates_goes_along_as_a_device_loader() {
        let lib = "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n\n\n\
                   class BaseTrainer:\n    def __init__(self, loader):\n        self.device = xm.xla_device()\n\
                   \x20       self.loader = pl.MpDeviceLoader(loader, self.device)\n\n\
                   \x20   def train_epoch(self):\n        for batch in self.loader:\n            print(batch)\n";
        let train = "from lib import BaseTrainer\n\n\nclass Mine(BaseTrainer):\n    def train_epoch(self):\n\
                     \x20       for x in self.loader:\n            print(x.sum())\n";
        let dir = tempfile::tempdir().unwrap();
        let paths = vec![dir.path().join("lib.py"), dir.path().join("train.py")];
        std::fs::write(&paths[0], lib).unwrap();
        std::fs::write(&paths[1], train).unwrap();
        let run = |paths: Vec<std::path::PathBuf>| {
            std::sync::Arc::new(facts::RunFacts::new(crate::migrate::reader::Reader, move || paths.clone()))
        };
        let alone = Selection { unsafe_fixes: true, run: Some(run(paths[..1].to_vec())), ..Selection::default() };
        assert!(
            migrated(lib, &alone).output.contains("self.loader = loader\n"),
            "converted where nothing else iterates it"
        );
        // The subclass's loop, in a file this one cannot rewrite, gets the chip's batches from
        // an iterable that moves them, rather than CPU batches from a plain loader.
        let both = Selection { unsafe_fixes: true, run: Some(run(paths)), ..Selection::default() };
        let m = migrated(lib, &both);
        assert!(m.output.contains("self.loader = torchtpu_device_loader(loader, self.device)\n"), "{}", m.output);
        assert!(m.output.contains("        for batch in self.loader:\n            print(batch)\n"), "{}", m.output);
        assert!(!m.remaining.iter().any(|d| d.message.contains("MpDeviceLoader")), "{:?}", m.remaining);
    }

    #[test]
    fn inserted_code_follows_the_files_indentation_step() {
        // Two spaces throughout: helpers and statements alike, and a second run changes nothing.
        let two = "import torch_xla.core.xla_model as xm\n\n\ndef f(flag):\n  if flag:\n    xm.master_print(xm.get_ordinal())\n";
        let all = Selection { unsafe_fixes: true, ..Selection::default() };
        let m = migrated(two, &all);
        assert!(m.output.contains("def torchtpu_rank():\n  \"\"\""), "{}", m.output);
        assert!(m.output.contains("\n  if dist.is_initialized():\n    return dist.get_rank()\n"), "{}", m.output);
        assert_eq!(migrated(&m.output, &all).output, m.output, "idempotent");
        // A file that writes its strings with single quotes gets helpers written that way.
        let single = format!("{two}print('a', 'b')\n");
        let m = migrated(&single, &all);
        assert!(m.output.contains("return int(os.environ.get('RANK', '0'))"), "{}", m.output);
        assert!(migrated(two, &all).output.contains("os.environ.get(\"RANK\", \"0\")"), "double by default");
        assert_eq!(migrated(&m.output, &all).output, m.output, "idempotent");
        // Four spaces with one odd block indented by three: the common step decides.
        let odd = "import torch_xla.core.xla_model as xm\n\ndef g():\n   return 1\n\ndef f(flag):\n    if flag:\n        xm.master_print(1)\n    for i in range(2):\n        if i:\n            print(i)\n";
        let m = migrated(odd, &all);
        assert!(m.output.contains("\n    if torchtpu_rank() == 0:\n        print(*args, **kwargs)\n"), "{}", m.output);
    }

    #[test]
    fn an_import_the_fixes_leave_unused_goes_with_its_last_use() {
        let src = "import os\nimport sys\nimport torch_xla.core.xla_model as xm\n\nos.environ[\"PJRT_DEVICE\"] = \"TPU\"\nxm.mark_step()\nprint(1)\n";
        let m = migrated(src, &Selection::default());
        assert_eq!(m.output, "import sys\n\nprint(1)\n", "os goes with its only use; sys, unused before, stays");
        assert_eq!(m.applied.get("TPU001"), Some(&1), "the user's import is not counted as a torch_xla one");
        let kept = "import os\nimport torch_xla.core.xla_model as xm\n\nos.environ[\"PJRT_DEVICE\"] = \"TPU\"\nprint(os.getcwd())\nxm.mark_step()\n";
        assert!(migrated(kept, &Selection::default()).output.starts_with("import os\n"), "still used");
    }

    #[test]
    fn an_import_still_used_after_the_pass_stays() {
        let src = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\nxm.not_an_api_we_know()\n";
        let m = migrated(src, &Selection::default());
        assert_eq!(m.output, "import torch_xla.core.xla_model as xm\n\nxm.not_an_api_we_know()\n");
        assert_eq!(m.applied.get("TPU001"), None);
    }

    #[test]
    fn an_import_whose_finding_is_off_or_suppressed_stays() {
        let src = "import torch_xla.core.xla_model as xm\n\nxm.mark_step()\nprint(1)\n";
        let ignored = Selection { ignore: vec!["TPU001".into()], ..Selection::default() };
        assert_eq!(migrated(src, &ignored).output, "import torch_xla.core.xla_model as xm\n\nprint(1)\n");
        let noqa = "import torch_xla.core.xla_model as xm  # noqa: TPU001\n\nxm.mark_step()\nprint(1)\n";
        assert_eq!(
            migrated(noqa, &Selection::default()).output,
            "import torch_xla.core.xla_model as xm  # noqa: TPU001\n\nprint(1)\n"
        );
    }

    #[test]
    fn new_imports_go_after_docstring_and_future_imports() {
        let src = "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport torch_xla.core.xla_model as xm\n\nprint(xm.get_ordinal())\n";
        assert_eq!(
            run(src),
            "\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport os\nimport torch.distributed as dist\n\n\ndef torchtpu_rank():\n    \"\"\"This process's rank: the process group's, else torchrun's `RANK` (0 in a single process).\"\"\"\n    if dist.is_initialized():\n        return dist.get_rank()\n    return int(os.environ.get(\"RANK\", \"0\"))\n\n\nprint(torchtpu_rank())\n"
        );
    }

    #[test]
    fn new_imports_join_their_package_in_the_block_and_replace_a_later_copy() {
        let src = "import os\nimport torch\nimport torch.nn as nn\nimport torch_xla.core.xla_model as xm\nfrom torch.utils.data import DataLoader\n\nxm.rendezvous(\"x\")\nprint(DataLoader, nn)\n\nimport torch.distributed as dist  # noqa: E402\n\nprint(dist.is_available())\n";
        let out = run(src);
        assert!(
            out.starts_with("import os\nimport torch\nimport torch.distributed as dist\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"),
            "{out}"
        );
        assert_eq!(out.matches("import torch.distributed as dist").count(), 1, "{out}");
        assert!(out.ends_with("print(DataLoader, nn)\n\n\nprint(dist.is_available())\n"), "{out}");
    }

    #[test]
    fn deleting_the_blocks_last_imports_leaves_no_third_blank_line() {
        let src = "import torch\n\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n\ndef f():\n    xm.mark_step()\n";
        assert_eq!(run(src), "import torch\n\n\ndef f():\n    pass\n");
    }

    #[test]
    fn new_imports_stay_below_a_shebang_and_encoding_line() {
        let src = "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nx = 1\nimport torch_xla.core.xla_model as xm\nprint(xm.get_ordinal())\n";
        let out = run(src);
        assert!(out.starts_with("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nimport "), "{out}");
    }

    #[test]
    fn existing_aliases_are_reused() {
        let src =
            "import os as o, torch.distributed as d\nimport torch_xla.core.xla_model as xm\nn = xm.xrt_world_size()\n";
        assert_eq!(
            run(src),
            "import os as o, torch.distributed as d\n\n\ndef torchtpu_world_size():\n    \"\"\"The job's process count: the process group's, else torchrun's `WORLD_SIZE` (1 in a single process).\"\"\"\n    if d.is_initialized():\n        return d.get_world_size()\n    return int(o.environ.get(\"WORLD_SIZE\", \"1\"))\n\n\nn = torchtpu_world_size()\n"
        );
    }

    #[test]
    fn replacements_are_parenthesised_in_operator_context() {
        let src = "import torch_xla.core.xla_model as xm\nx = 2 * xm.is_master_ordinal(local=False)\n";
        assert_eq!(
            run(src),
            "import os\nimport torch.distributed as dist\n\n\ndef torchtpu_rank():\n    \"\"\"This process's rank: the process group's, else torchrun's `RANK` (0 in a single process).\"\"\"\n    if dist.is_initialized():\n        return dist.get_rank()\n    return int(os.environ.get(\"RANK\", \"0\"))\n\n\nx = 2 * (torchtpu_rank() == 0)\n"
        );
    }

    /// The migrated line that mentions `marker` (a comment on the input line).
    fn line_of(out: &str, marker: &str) -> String {
        out.lines().find(|l| l.contains(marker)).unwrap_or_else(|| panic!("no `{marker}` in:\n{out}")).trim().into()
    }

    #[test]
    fn ranks_are_the_process_groups_only_where_the_process_has_joined_it() {
        let src = "import torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n\
                   import torch_xla.distributed.xla_multiprocessing as xmp\n\n\
                   def setup(cond):\n    r = xm.get_ordinal()  # before\n    if cond:\n        dist.init_process_group(\"gloo\")\n\
                   \x20   r = xm.get_ordinal()  # maybe\n    if not dist.is_initialized():\n        dist.init_process_group(\"gloo\")\n\
                   \x20   r = xm.get_ordinal()  # guarded\n    f = lambda: xm.get_ordinal()  # lambda\n\
                   \x20   dist.destroy_process_group()\n    r = xm.get_ordinal()  # destroyed\n\n\
                   def only_from_worker():\n    return xm.xrt_world_size()  # callee\n\n\
                   def also_from_parent():\n    return xm.xrt_world_size()  # shared\n\n\
                   def _mp_fn(index):\n    print(xm.get_ordinal(), only_from_worker(), also_from_parent())  # worker\n\n\
                   if __name__ == \"__main__\":\n    xmp.spawn(_mp_fn, nprocs=2)\n    print(also_from_parent())\n";
        let out = run(src);
        assert_eq!(line_of(&out, "# before"), "r = torchtpu_rank()  # before");
        assert_eq!(line_of(&out, "# maybe"), "r = torchtpu_rank()  # maybe");
        assert_eq!(line_of(&out, "# guarded"), "r = dist.get_rank()  # guarded");
        assert_eq!(line_of(&out, "# lambda"), "f = lambda: torchtpu_rank()  # lambda");
        assert_eq!(line_of(&out, "# destroyed"), "r = torchtpu_rank()  # destroyed");
        assert_eq!(line_of(&out, "# callee"), "return dist.get_world_size()  # callee");
        assert_eq!(line_of(&out, "# shared"), "return torchtpu_world_size()  # shared");
        assert_eq!(
            line_of(&out, "# worker"),
            "print(dist.get_rank(), only_from_worker(), also_from_parent())  # worker"
        );
        assert_eq!(out.matches("def torchtpu_rank():").count(), 1, "one helper per file:\n{out}");

        // A worker also called directly runs without a group there; one that creates its own
        // group has joined it only after that statement.
        let src = "import torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n\
                   import torch_xla.distributed.xla_multiprocessing as xmp\n\n\
                   def _mp_fn(index):\n    print(xm.get_ordinal())  # direct\n\n\
                   def own(index):\n    print(xm.get_ordinal())  # early\n    dist.init_process_group(\"gloo\")\n\
                   \x20   print(xm.get_ordinal())  # late\n\n\
                   if __name__ == \"__main__\":\n    xmp.spawn(_mp_fn)\n    xmp.spawn(own)\n    _mp_fn(0)\n";
        let out = run(src);
        assert_eq!(line_of(&out, "# direct"), "print(torchtpu_rank())  # direct");
        assert_eq!(line_of(&out, "# early"), "print(torchtpu_rank())  # early");
        assert_eq!(line_of(&out, "# late"), "print(dist.get_rank())  # late");
    }

    #[test]
    fn helpers_of_a_helper_module_are_imported_once_per_file() {
        let src = "import sys\nimport torch_xla.core.xla_model as xm\n\ndef step(opt, loss):\n\
                   \x20   xm.optimizer_step(opt)\n    xm.master_print(loss, fd=sys.stderr)\n    print(xm.get_ordinal())\n\n\
                   if __name__ == \"__main__\":\n    pass\n";
        let with_module =
            Selection { helper_module: Some("_torchtpu".into()), unsafe_fixes: true, ..Selection::default() };
        let m = migrated(src, &with_module);
        assert!(!m.output.contains("def torchtpu_"), "{}", m.output);
        assert!(
            m.output.starts_with(
                "import sys\nfrom _torchtpu import torchtpu_optimizer_step, torchtpu_rank, torchtpu_rank0_print\n\ndef step"
            ),
            "{}",
            m.output
        );
        // What the module must define: the ones called, and the one `torchtpu_rank0_print` calls.
        let names: Vec<&str> = m.helpers.keys().map(String::as_str).collect();
        assert_eq!(names, ["torchtpu_optimizer_step", "torchtpu_rank", "torchtpu_rank0_print"]);
        let rank = m.helpers["torchtpu_rank"].module.as_ref().expect("in the module");
        assert_eq!(
            rank.imports.iter().map(ImportRequest::statement).collect::<Vec<_>>(),
            ["import torch.distributed as dist", "import os"]
        );
        // A second run changes nothing.
        assert_eq!(migrated(&m.output, &with_module).output, m.output);
    }

    #[test]
    fn ranks_are_the_frameworks_where_a_framework_set_the_process_up() {
        // Lightning, the HF Trainer and accelerate create no process group on one process:
        // there the rank is the framework's own (`self.global_rank`), never `dist.get_rank()`.
        let src = "import lightning as L\nimport torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\
                   from accelerate import Accelerator\nfrom transformers import Trainer, TrainerCallback\n\
                   from ray.train.torch import TorchTrainer\n\n\
                   class Base(L.LightningModule):\n    def __init__(self):\n        super().__init__()\n\
                   \x20       self.r = xm.get_ordinal()  # init\n\n\
                   \x20   def training_step(self, batch, batch_idx):\n        return xr.world_size()  # step\n\n\
                   class Model(Base):\n    def on_train_epoch_end(self):\n        print(xm.is_master_ordinal(local=False))  # hook\n\n\
                   \x20   def helper(self):\n        return xr.global_ordinal()  # not a hook\n\n\
                   class Data(L.LightningDataModule):\n    def setup(self, stage):\n        self.n = xr.world_size()  # setup\n\n\
                   \x20   def train_dataloader(self):\n        return xr.world_size()  # called by hand\n\n\
                   class LightningModule:\n    def training_step(self, batch):\n        return xm.get_ordinal()  # own class\n\n\
                   class MyTrainer(Trainer):\n    def compute_loss(self, model, inputs, **kw):\n        return xr.world_size()  # trainer\n\n\
                   class Log(TrainerCallback):\n    def on_log(self, args, state, control, **kwargs):\n\
                   \x20       print(xm.get_ordinal())  # callback\n\n\
                   def loop(config):\n    print(xr.world_size())  # ray\n\n\
                   def main():\n    print(xm.get_ordinal())  # before accelerator\n    accelerator = Accelerator()\n\
                   \x20   print(xm.get_ordinal())  # after accelerator\n    Data().train_dataloader()\n    TorchTrainer(loop).fit()\n\n\
                   main()\nprint(xm.get_ordinal())  # module\n";
        let out = run(src);
        assert_eq!(line_of(&out, "# init"), "self.r = torchtpu_rank()  # init");
        assert_eq!(line_of(&out, "# step"), "return self.trainer.world_size  # step");
        assert_eq!(line_of(&out, "# hook"), "print(self.global_rank == 0)  # hook");
        assert_eq!(line_of(&out, "# not a hook"), "return torchtpu_rank()  # not a hook");
        assert_eq!(line_of(&out, "# setup"), "self.n = self.trainer.world_size  # setup");
        assert_eq!(line_of(&out, "# called by hand"), "return torchtpu_world_size()  # called by hand");
        assert_eq!(line_of(&out, "# own class"), "return torchtpu_rank()  # own class");
        assert_eq!(line_of(&out, "# trainer"), "return self.args.world_size  # trainer");
        assert_eq!(line_of(&out, "# callback"), "print(args.process_index)  # callback");
        // Ray Train joins every worker to the group, on any number of workers.
        assert_eq!(line_of(&out, "# ray"), "print(dist.get_world_size())  # ray");
        assert_eq!(line_of(&out, "# before accelerator"), "print(torchtpu_rank())  # before accelerator");
        assert_eq!(line_of(&out, "# after accelerator"), "print(accelerator.process_index)  # after accelerator");
        assert_eq!(line_of(&out, "# module"), "print(torchtpu_rank())  # module");

        // Under Fabric no Trainer calls the hooks.
        let src = "import lightning as L\nimport torch_xla.runtime as xr\n\n\
                   class Model(L.LightningModule):\n    def training_step(self, batch, i):\n\
                   \x20       return xr.world_size()  # fabric\n\nfabric = L.Fabric()\n";
        assert_eq!(line_of(&run(src), "# fabric"), "return torchtpu_world_size()  # fabric");
    }

    #[test]
    fn a_comparison_replacing_an_operand_of_and_gets_no_parentheses() {
        let src = "import torch_xla.core.xla_model as xm\n\n\
                   def f(ready):\n    a = ready and xm.is_master_ordinal(local=False)  # and\n\
                   \x20   b = not xm.is_master_ordinal(local=False)  # not\n\
                   \x20   c = xm.is_master_ordinal(local=False) == ready  # compare\n    return a, b, c\n";
        let out = run(src);
        assert_eq!(line_of(&out, "# and"), "a = ready and torchtpu_rank() == 0  # and");
        assert_eq!(line_of(&out, "# not"), "b = not (torchtpu_rank() == 0)  # not");
        assert_eq!(line_of(&out, "# compare"), "c = (torchtpu_rank() == 0) == ready  # compare");
    }

    #[test]
    fn step_level_idioms_stay_one_line() {
        let src = "import sys\nimport torch_xla.core.xla_model as xm\n\ndef step(opt, meter, loss):\n\
                   \x20   loss.backward()\n    xm.optimizer_step(opt)\n    xm.master_print(meter.update(loss), fd=sys.stderr)\n\n\
                   if __name__ == \"__main__\":\n    pass\n";
        let out = run(src);
        let body: Vec<&str> =
            out.split("def step(opt, meter, loss):\n").nth(1).expect("step stays").lines().take(3).collect();
        assert_eq!(
            body,
            [
                "    loss.backward()",
                "    torchtpu_optimizer_step(opt)",
                "    torchtpu_rank0_print(meter.update(loss), file=sys.stderr)"
            ]
        );
        for helper in ["def torchtpu_optimizer_step(optimizer):", "def torchtpu_rank0_print(", "def torchtpu_rank():"] {
            assert_eq!(out.matches(helper).count(), 1, "{helper}:\n{out}");
        }
    }

    #[test]
    fn a_fix_that_collides_with_a_deletion_waits_instead_of_panicking() {
        // The device-string fix edits the `if` test; deleting `mark_step()` drops the whole `if`.
        let src =
            "import torch_xla.core.xla_model as xm\ndef f(d):\n    if d.type == \"xla\":\n        xm.mark_step()\n";
        assert_eq!(run(src), "def f(d):\n    pass\n");
    }

    #[test]
    fn manual_items_point_at_original_lines() {
        let rules = RuleSet::load(&[]).expect("rules");
        let src = "import torch_xla.core.xla_model as xm\nxm.mark_step()\nxm.mark_step()\nxm.all_reduce(xm.REDUCE_SUM, [t])\n";
        let m = migrate(src, &rules, &Selection { unsafe_fixes: true, ..Selection::default() });
        let left = m.remaining.iter().find(|d| rules.rules[d.rule].code == "TPU207").expect("all_reduce is manual");
        let original = usize::from(m.original_offset(left.range.start()));
        assert_eq!(&src[original..original + 13], "xm.all_reduce");
    }

    #[test]
    fn a_safe_fix_never_depends_on_an_unsafe_one() {
        // The backend registration import is safe to delete only once the "xla" process group
        // (an unsafe fix) is gone: a safe-only run keeps both, so the program still works.
        let rules = RuleSet::load(&[]).expect("rules");
        let src = "import torch.distributed as dist\nimport torch_xla.distributed.xla_backend\n\ndef main():\n    dist.init_process_group(\"xla\", init_method=\"xla://\")\n";
        let safe = migrate(src, &rules, &Selection::default());
        assert!(safe.output.contains("import torch_xla.distributed.xla_backend"), "{}", safe.output);
        assert!(safe.output.contains("init_process_group(\"xla\""), "{}", safe.output);
        let all = migrate(src, &rules, &Selection { unsafe_fixes: true, ..Selection::default() });
        assert!(!all.output.contains("torch_xla"), "{}", all.output);
        assert!(all.output.contains("init_process_group(\n            \"tpu_dist\","), "{}", all.output);
    }

    #[test]
    fn a_syntax_error_is_reported_and_nothing_changes() {
        let rules = RuleSet::load(&[]).expect("rules");
        let m = migrate("print 'py2'\nimport torch_xla\n", &rules, &Selection::default());
        assert!(matches!(m.problem, Some(Problem::Syntax(_))));
        assert_eq!(m.output, "print 'py2'\nimport torch_xla\n");
    }

    #[test]
    fn only_a_name_always_bound_to_a_list_is_reduced_in_place() {
        let head = "import torch\nimport torch.distributed as dist\nimport torch_xla.core.xla_model as xm\n\ndist.init_process_group(\"gloo\")\n";
        let list = migrated(
            &format!("{head}ts = [torch.ones(1)]\nts.append(torch.ones(1))\nout = xm.all_reduce(xm.REDUCE_SUM, ts)\n"),
            &Selection { unsafe_fixes: true, ..Selection::default() },
        );
        assert!(list.output.contains("for tensor in ts:") && list.output.ends_with("out = ts\n"), "{}", list.output);
        // Rebound to a tensor on some path: not known to be a list, so its reduced copy is returned.
        let rebound = "ts = []\nif cond:\n    ts = torch.ones(1)\nout = xm.all_reduce(xm.REDUCE_SUM, ts)\n";
        let m = migrated(&format!("{head}{rebound}"), &Selection { unsafe_fixes: true, ..Selection::default() });
        assert!(m.output.contains("reduced = ts.clone()") && !m.output.contains("for tensor"), "{}", m.output);
    }

    #[test]
    fn a_save_in_a_branch_some_ranks_skip_has_no_barrier() {
        let head = "import torch_xla.core.xla_model as xm\n\n\ndef f(args, epoch, m):\n";
        for (test, barrier) in [("args.local_rank == 0", false), ("xm.get_ordinal() == 0", false), ("epoch == 0", true)]
        {
            let m = migrated(
                &format!("{head}    if {test}:\n        xm.save(m, \"m.pt\")\n"),
                &Selection { unsafe_fixes: true, ..Selection::default() },
            );
            assert_eq!(m.output.contains("dist.barrier()"), barrier, "{test}:\n{}", m.output);
        }
    }
}
