//! Building fixes: expanding a rule's templates at a match site into edits,
//! and deciding when a fix cannot be offered (and saying why).

use rustc_hash::{FxHashMap, FxHashSet};

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::shown;
use super::{Checker, Diagnostic, Site};
use crate::migrate::fix::{Edit, Fix, ImportRequest, StmtRef};
use crate::migrate::rules::template::{Bound, ExpandContext, ProcessFact, Signature, Template};
use crate::migrate::rules::{FixAction, Rule, RuleId};
use crate::migrate::style::{FileStyle, reindent, requote_plain_strings};
use crate::source::{indentation_at, newline_of};

/// Why a collective is not converted in code where no process group can exist.
const NO_PROCESS_GROUP: &str = "no process group exists on this path: the file creates none, does not run as a \
     program, and no other file of this run creates one; convert it where the job's group is created \
     (`dist.init_process_group(\"tpu_dist\")`): behind a guard that skipped it, the job would train unsynchronised";

/// How a variant whose argument conditions fail says so (a weaker reason than another's).
const UNMET_PREFIX: &str = "only converted when ";

/// Why an unguarded collective is not converted in a file that does not create the group.
const NO_GROUP_IN_FILE: &str = "this file does not create the process group (`init_process_group`, or an \
     `xmp.spawn`/`torch_xla.launch` of a worker defined in it): without one `dist` collectives raise, where \
     torch_xla reduced over every device; convert it where the job's group is created";

impl<'a> Checker<'a> {
    /// Report a match and build its fix from the first applicable variant.
    pub(super) fn report(&mut self, site: Site<'a>) {
        let rule = self.rule(site.rule);
        let message = self.message(site.rule, &site.spelled);
        let bound = match (&rule.signature, site.call) {
            (Some(sig), Some(call)) => Some(sig.bind(call)),
            _ => None,
        };
        let mut first_reason: Option<String> = None;
        let mut result = None;
        // A variant for other names of the rule (`xs.Mesh` of TPU226's) does not exist here.
        let for_site = |spec: &&crate::migrate::rules::FixSpec| {
            spec.names.is_empty() || site.callee.as_ref().is_some_and(|c| spec.names.contains(c))
        };
        for spec in rule.fixes.iter().filter(for_site) {
            // A variant for one of the rule's names may bind that name's own signature.
            let own = spec.signature.as_ref().zip(site.call).map(|(sig, call)| sig.bind(call));
            let attempt = self.try_fix(&site, rule, spec, own.as_ref().or(bound.as_ref()));
            match attempt {
                Ok(fix) => {
                    result = Some((fix, spec.note.clone()));
                    break;
                }
                Err(reason) => {
                    // That no group exists says more than another variant's unmet condition.
                    // So does what stopped a variant whose argument conditions held (the worker
                    // is a method) over a variant the arguments do not fit.
                    // Between two unmet argument conditions, the variant nearest to applying
                    // (fewest conditions unmet) says best what is missing.
                    let unfit = |r: &str| r.starts_with(UNMET_PREFIX);
                    let unmet = |r: &str| r.matches(" and ").count();
                    let stronger = reason == NO_PROCESS_GROUP
                        || reason == NO_GROUP_IN_FILE
                        || first_reason.as_deref().is_some_and(unfit) && !unfit(&reason)
                        || first_reason
                            .as_deref()
                            .is_some_and(|f| unfit(f) && unfit(&reason) && unmet(&reason) < unmet(f));
                    if stronger {
                        first_reason = Some(reason);
                    } else {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
        }
        let (fix, note) = match result {
            Some((fix, note)) => (Some(fix), note),
            None => (None, first_reason.map(|r| format!("not converted: {r}"))),
        };
        self.diagnostics.push(Diagnostic { rule: site.rule, range: site.expr.range(), message, note, fix });
    }

    pub(super) fn message(&self, rule: RuleId, spelled: &str) -> String {
        self.rule(rule).message.replace("{name}", &shown(spelled))
    }

    pub(super) fn try_fix(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        spec: &crate::migrate::rules::FixSpec,
        bound: Option<&Result<Bound<'a>, String>>,
    ) -> Result<Fix, String> {
        let empty = Bound::default();
        let bound = match bound {
            Some(Ok(b)) => b,
            Some(Err(e)) => return Err(e.clone()),
            None => &empty,
        };
        if !spec.when.is_empty() && !self.when_holds(&spec.when, bound) {
            return Err(self.describe_unmet(&spec.when, bound));
        }
        if !spec.requires_call_in_function.is_empty() && !self.function_calls_any(&spec.requires_call_in_function) {
            return Err(format!(
                "this function does not call {}",
                spec.requires_call_in_function.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
            ));
        }
        if spec.requires_process_group && !self.process_group_on_path() {
            return Err(NO_PROCESS_GROUP.into());
        }
        if spec.requires_group_in_file && !self.inventory.creates_group(self.sem) {
            return Err(NO_GROUP_IN_FILE.into());
        }
        if spec.requires_global_reads
            && let Some(read) = self.slice_reads().iter().find(|r| r.wraps.is_none())
        {
            let line = self.text[..usize::from(read.at.start())].matches('\n').count() + 1;
            return Err(format!(
                "a value computed from a split batch is read before it can be made global (line {line}, TPU234): \
                 split, each process would read its slice's where SPMD read the global batch's"
            ));
        }
        if spec.requires_group_joined && !self.group_joined() {
            return Err(format!(
                "{UNMET_PREFIX}this process has certainly joined the process group here (after `init_process_group` \
                 on this path, or in a worker a converted launcher starts)"
            ));
        }
        if spec.requires_result && self.expression_statement(site.expr).is_some() {
            return Err(
                "its value is discarded: the conversion computes a new value and changes nothing in place".into()
            );
        }
        if !spec.rank_branch.is_empty() && !spec.rank_branch.contains(&self.rank_branch()) {
            use crate::migrate::rules::RankBranch;
            let place = |b: &RankBranch| match b {
                RankBranch::Outside => "outside any branch only some ranks take",
                RankBranch::LocalMaster => "directly under `if xm.is_master_ordinal():`",
                RankBranch::GlobalMaster => "directly under `if xm.is_master_ordinal(local=False):`",
                RankBranch::Inside => "in a branch only some ranks take",
            };
            let places: Vec<&str> = spec.rank_branch.iter().map(place).collect();
            return Err(format!("{UNMET_PREFIX}the statement is {}", places.join(" or ")));
        }
        if !spec.requires_call_in_file.is_empty()
            && !spec.requires_call_in_file.iter().any(|n| match n.contains('.') {
                true => self.inventory.file_calls(self.sem, n),
                false => self.sem.is_bound_anywhere(n), // a helper an earlier fix pass defined
            })
        {
            return Err(format!(
                "the file does not call {}",
                spec.requires_call_in_file.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
            ));
        }
        if let Some(name) = spec.unless_call_in_file.iter().find(|n| self.inventory.file_calls_under(self.sem, n)) {
            return Err(format!("the file calls `{}`", name.trim_end_matches(".*")));
        }
        if !spec.requires_argument_of.is_empty() {
            let callee = self.argument_of.get(&site.expr.start());
            let inside = |m: &String| callee.is_some_and(|c| c.starts_with(&format!("{m}.")));
            if !spec.requires_argument_of.iter().any(inside) {
                return Err(format!(
                    "only converted where passed straight to {}: elsewhere the value may reach code that wants torch_xla's string",
                    spec.requires_argument_of.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(" or ")
                ));
            }
        }
        if spec.only_shown && !self.is_shown(site.expr) {
            return Err("only converted where the value is only shown (printed or logged): elsewhere the program \
                        may compute with it"
                .into());
        }
        if spec.before_clock_read && !self.before_clock_read(site.rule) {
            return Err("only converted where a clock is read right after it (timing code)".into());
        }
        let mut fix = self.try_action(site, rule, spec, bound)?;
        if let Some(prelude) = &spec.worker_prelude
            && let Some((edit, imports)) = self.worker_prelude(site, rule, prelude, bound)?
        {
            fix.edits.push(edit);
            fix.imports.extend(imports);
        }
        if !spec.define.is_empty() {
            self.define_helpers(site, rule, spec, bound, &mut fix)?;
        }
        Ok(fix)
    }

    /// The helpers of `spec.define` that the fix's code calls, directly or through another
    /// helper, expanded (their `{@module}` imports join the fix's). A name the file already
    /// binds makes the fix unavailable: the helper would shadow it, or it would shadow ours.
    pub(super) fn define_helpers(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        spec: &crate::migrate::rules::FixSpec,
        bound: &Bound<'a>,
        fix: &mut Fix,
    ) -> Result<(), String> {
        use crate::migrate::fix::{Helper, HelperModule};
        // `name(` as a whole word: what a replacement or another helper calls.
        let calls = crate::migrate::rules::calls;
        let mut cx = ExpandCx::new(self, site, spec.signature.as_ref().or(rule.signature.as_ref()), bound);
        // Helpers are defined at module level: a module the site reaches through a function's
        // own import (`import torch.distributed as dist` inside `main`) is unbound there.
        cx.scope = 0;
        // With a helper module, the fix's own code (`called`) names what the file imports;
        // the helpers those call live beside them in the module.
        let mut pending: Vec<(String, bool)> = fix.edits.iter().map(|e| (e.content.clone(), true)).collect();
        let mut helpers: Vec<Helper> = Vec::new();
        while let Some((text, called)) = pending.pop() {
            for (name, template) in &spec.define {
                // A reference replaced by the helper's name (`@mp_test`) uses it without a call.
                if helpers.iter().any(|h| &h.name == name) || !(calls(&text, name) || text == *name) {
                    continue;
                }
                if let Some(import) = &self.helper_module {
                    let mut module_cx = ModuleCx { imports: Vec::new() };
                    let body = self.in_file_quotes(self.helper_layout(&template.expand(&mut module_cx)?));
                    let imported = self.sem.binds_only_module(name, &format!("{import}.{name}"));
                    if called
                        && !imported
                        && (self.all_names().contains(name.as_str()) || self.sem.is_bound_anywhere(name))
                    {
                        // A copy an earlier run defined in the file serves as before.
                        let inline = self.in_file_quotes(self.helper_layout(&template.expand(&mut cx)?));
                        if self.defines_verbatim(&inline) {
                            continue;
                        }
                        return Err(format!(
                            "cannot import `{name}`: the name already means something else in this file"
                        ));
                    }
                    pending.push((body.clone(), false));
                    let module = HelperModule { import: import.clone(), imports: module_cx.imports, called };
                    helpers.push(Helper { name: name.clone(), text: body, module: Some(module) });
                    continue;
                }
                let body = self.in_file_quotes(self.helper_layout(&template.expand(&mut cx)?));
                if self.all_names().contains(name.as_str()) || self.sem.is_bound_anywhere(name) {
                    // Defined by an earlier pass of this run (another fix's edits overlapped).
                    if self.defines_verbatim(&body) {
                        continue;
                    }
                    // `from torch_xla.test.test_utils import now`: the name is only the import of
                    // what the helper replaces, which goes once its uses call the helper.
                    let replaced = site.callee.as_deref().filter(|c| c.rsplit('.').next() == Some(name.as_str()));
                    if replaced.is_some_and(|q| self.sem.binds_only_module(name, q)) {
                        pending.push((body.clone(), false));
                        helpers.push(Helper::inline(name.clone(), body));
                        continue;
                    }
                    return Err(format!("cannot define `{name}`: the name already means something else in this file"));
                }
                pending.push((body.clone(), false));
                helpers.push(Helper::inline(name.clone(), body));
            }
        }
        fix.imports.extend(cx.imports);
        fix.helpers.extend(helpers);
        Ok(())
    }

    /// Whether a module-level statement of the file is exactly this helper's text.
    fn defines_verbatim(&self, body: &str) -> bool {
        self.parsed_tokens.syntax().body.iter().any(|stmt| self.src(stmt.range()).trim_end() == body.trim_end())
    }

    /// Whether a process group can exist where this file's collectives run: the file
    /// creates one, or runs as a program (one process unless it creates one, so a
    /// collective guarded by `dist.is_initialized()` is exact), or another file of the run
    /// creates one (a project's `train.py` that spawns the workers calling `engine.py`).
    fn process_group_on_path(&self) -> bool {
        self.inventory.creates_group(self.sem)
            || self.inventory.is_program
            || self.run.is_some_and(|r| r.creates_process_group())
    }

    /// Why a fix variant's `when` does not hold: only the conditions that fail.
    fn describe_unmet(&self, when: &crate::migrate::rules::When, bound: &Bound<'a>) -> String {
        let parts: Vec<String> = when
            .iter()
            .filter(|(p, accepted)| {
                !crate::migrate::rules::template::arg_matches(
                    bound.values.get(*p).map(|e| self.src(e.range())),
                    accepted,
                )
            })
            .map(|(p, accepted)| {
                let values: Vec<String> = accepted
                    .iter()
                    .map(|a| match a.as_deref() {
                        None => "omitted".to_string(),
                        Some("*") => "passed".to_string(),
                        Some("$value") => "a plain value (a literal other than None, a name or attribute)".to_string(),
                        Some("$int") => "an integer literal".to_string(),
                        Some("$name") => "a name or attribute".to_string(),
                        Some("$identifier") => "a bare name".to_string(),
                        Some("$dim0_only") => {
                            "a tuple naming mesh axes for dim 0 only (`(\"data\", None)`)".to_string()
                        }
                        Some("$pure") => "free of calls".to_string(),
                        Some("$list") => "a list display or comprehension".to_string(),
                        Some("$list_name") => "a name its function only binds to lists".to_string(),
                        Some("$str") => "a string literal".to_string(),
                        Some(v) => format!("`{v}`"),
                    })
                    .collect();
                let mut actual = match bound.values.get(p) {
                    Some(e) => format!(" (here `{}`)", shown(self.src(e.range()))),
                    None => " (here omitted)".to_string(),
                };
                // A spec that splits other dims maps to DTensor placements: write them out.
                let placements = accepted
                    .iter()
                    .any(|a| a.as_deref() == Some("$dim0_only"))
                    .then(|| bound.values.get(p))
                    .flatten()
                    .and_then(|e| crate::migrate::rules::template::dtensor_placements(self.src(e.range())));
                if let Some(placements) = placements {
                    actual.push_str(&format!(
                        "; as DTensor: `distribute_tensor(t, mesh, {placements})`, or `parallelize_module` with \
                         `ColwiseParallel()` for an `nn.Linear` whose weight is split on dim 0 and `RowwiseParallel()` \
                         on dim 1 (TPU228 explains why TorchTPU 0.2.0 cannot train these yet)"
                    ));
                }
                format!("`{p}` is {}{actual}", values.join(" or "))
            })
            .collect();
        format!("{UNMET_PREFIX}{}", parts.join(" and "))
    }

    /// The statements a launcher fix puts at the top of the worker function it starts, unless
    /// the worker's own top-level statements create the process group (then nothing). A
    /// worker that cannot be found and edited makes the whole launcher fix unavailable: its
    /// workers would never join a process group.
    pub(super) fn worker_prelude(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        prelude: &crate::migrate::rules::WorkerPrelude,
        bound: &Bound<'a>,
    ) -> Result<Option<(Edit, Vec<ImportRequest>)>, String> {
        let worker = bound.values.get(&prelude.param).ok_or("no worker function is passed")?;
        let unreachable =
            || format!("the worker `{}` is not a function defined in this file", shown(self.src(worker.range())));
        let Expr::Name(name) = worker else { return Err(unreachable()) };
        let def = self.local_def(name).ok_or_else(unreachable)?;
        // The worker's first parameter receives the index; `def main(*args)` has it in `args[0]`.
        let params = &def.parameters;
        if params.posonlyargs.is_empty() && params.args.is_empty() && params.vararg.is_none() {
            return Err(format!("the worker `{}` takes no index parameter", name.id));
        }
        if self.worker_creates_process_group(def) {
            return Ok(None);
        }
        // After the docstring and the worker's own imports (its `import torch.distributed as
        // dist` is then the name the prelude uses).
        let mut body = def.body.iter().peekable();
        body.next_if(|s| matches!(s, Stmt::Expr(doc) if doc.value.is_string_literal_expr()));
        while body.next_if(|s| matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_))).is_some() {}
        let Some(first) = body.next() else { return Err(unreachable()) };
        let at = crate::source::line_start(self.text, first.start().into());
        if !self.text[at..usize::from(first.start())].trim().is_empty() {
            return Err(format!("the worker `{}` is written on one line", name.id));
        }
        let mut cx = ExpandCx::new(self, site, rule.signature.as_ref(), bound);
        // The prelude runs at the top of the worker: the names it reaches there, not the launcher's.
        cx.scope = self.sem.scope_of_node(def.range.start()).unwrap_or(0);
        cx.offset = first.start();
        let text = prelude.statement.expand(&mut cx)?;
        let indent = indentation_at(self.text, first.start().into());
        let edit = Edit::insert(
            TextSize::try_from(at).map_err(|e| e.to_string())?,
            format!("{}{}", self.indent_block(&text, indent), newline_of(self.text)),
        );
        Ok(Some((edit, cx.imports)))
    }

    /// Lay a template's lines out at `indent`: templates indent nested lines
    /// with four spaces; follow the file's own unit (tabs, two spaces).
    fn indent_block(&self, text: &str, indent: &str) -> String {
        let unit = if indent.starts_with('\t') { "\t" } else { self.style().unit };
        reindent(text.trim_end_matches('\n'), indent, unit, newline_of(self.text))
    }

    /// The file's indentation step and quote preference (see [`FileStyle`]).
    fn style(&self) -> &FileStyle {
        self.style.get_or_init(|| FileStyle::read(self.parsed_tokens.tokens(), self.text))
    }

    /// A helper in the file's quotes: templates write `"..."`, and a file that writes `'...'`
    /// gets the helper's plain strings (no quote or backslash inside, no prefix) that way.
    /// Statements keep the user's own literals as written, so only helpers, all ours, change.
    fn in_file_quotes(&self, text: String) -> String {
        if !self.style().single_quotes {
            return text;
        }
        requote_plain_strings(&text)
    }

    /// A helper's template, laid out at the top level with the file's indentation step
    /// (templates indent with four spaces); lines end in `\n`, as helpers are stored.
    fn helper_layout(&self, text: &str) -> String {
        match self.style().unit {
            "    " => text.to_string(),
            unit => reindent(text, "", unit, "\n"),
        }
    }

    pub(super) fn try_action(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        spec: &crate::migrate::rules::FixSpec,
        bound: &Bound<'a>,
    ) -> Result<Fix, String> {
        let mut cx = ExpandCx::new(self, site, spec.signature.as_ref().or(rule.signature.as_ref()), bound);
        cx.mapped = self.mapped_arguments(spec, &mut cx)?;
        let fix = |edits, deletes, imports| Fix { safety: spec.safety, edits, deletes, imports, helpers: vec![] };
        match &spec.action {
            FixAction::Replace(t) => {
                let mut text = t.expand(&mut cx)?;
                cx.check_consumed(spec, t)?;
                let bare = match self.operand.last() {
                    Some(super::Operand::Tight) => is_atomic(&text),
                    Some(super::Operand::Boolean) => is_atomic(&text) || binds_tighter_than_not(&text),
                    _ => true,
                };
                if !bare {
                    text = format!("({text})");
                }
                if let Some(Some(quote)) = self.fstring_quotes.last() {
                    text = requote_for_fstring(&text, *quote)?;
                }
                let literals = self.compared_literals(site.expr, &spec.compare)?;
                let (text, lossless) = self.carry_comments(site.expr.range(), text);
                let mut edits = vec![Edit::replace(site.expr.range(), text)];
                edits.extend(literals);
                let mut fix = fix(edits, vec![], cx.imports);
                if !lossless {
                    fix.safety = crate::migrate::rules::Safety::Unsafe;
                }
                Ok(fix)
            }
            FixAction::Statement(t) => {
                let (stmt, assign) = match self.expression_statement(site.expr) {
                    Some((_, stmt)) => (stmt, String::new()),
                    None if t.uses_assign() => match (self.assigned_by(site.expr), self.returned_by(site.expr)) {
                        (Some((stmt, target)), _) => (stmt, format!("{target} = ")),
                        // `return xm.mesh_reduce(...)`: the statement's last line returns the value.
                        (None, Some(stmt)) => (stmt, "return ".to_string()),
                        (None, None) => return Err("its result is used as a value".into()),
                    },
                    None => return Err("its result is used as a value".into()),
                };
                let line_start = crate::source::line_start(self.text, stmt.start().into());
                if !self.text[line_start..usize::from(stmt.start())].trim().is_empty() {
                    return Err("the statement shares its line with other code".into());
                }
                cx.assign = Some(assign);
                let text = without_discarded_values(&t.expand(&mut cx)?);
                cx.check_consumed(spec, t)?;
                let indent = indentation_at(self.text, stmt.start().into());
                // The statement's own indentation is already in the file.
                let text = self.indent_block(&text, indent)[indent.len()..].to_string();
                let (text, lossless) = self.carry_comments(stmt.range(), text);
                let mut fix = fix(vec![Edit::replace(stmt.range(), text)], vec![], cx.imports);
                if !lossless {
                    fix.safety = crate::migrate::rules::Safety::Unsafe;
                }
                Ok(fix)
            }
            FixAction::Delete => {
                let (sref, _) = self
                    .expression_statement(site.expr)
                    .or_else(|| self.assignment_to(site.expr))
                    .ok_or("its result is used as a value")?;
                let consumed: FxHashSet<&str> = spec.drop.iter().chain(spec.when.keys()).map(String::as_str).collect();
                if let Some(p) = bound.passed_names().find(|p| !consumed.contains(p)) {
                    return Err(format!("argument `{p}` would be lost"));
                }
                Ok(fix(vec![], vec![sref], vec![]))
            }
            FixAction::Unwrap => Err("only applies to `with` statements".into()),
            FixAction::IterateLoader { loader, device } => {
                let call = site.call.ok_or("not a call")?;
                let consumed: FxHashSet<&str> = spec
                    .drop
                    .iter()
                    .chain(spec.when.keys())
                    .map(String::as_str)
                    .chain([loader.as_str(), device.as_str()])
                    .collect();
                if let Some(p) = bound.passed_names().find(|p| !consumed.contains(p)) {
                    return Err(format!("argument `{p}` has no equivalent in the fix"));
                }
                let loader = bound.values.get(loader).map(|e| self.src(e.range())).ok_or("no loader is passed")?;
                // `ParallelLoader(loader, [device])` lists its devices; one process has one.
                let device = bound.values.get(device).and_then(|e| match e {
                    Expr::List(l) if l.elts.len() == 1 => Some(self.src(l.elts[0].range())),
                    Expr::List(_) => None,
                    e => Some(self.src(e.range())),
                });
                let torch = cx.module("torch")?;
                let edits = self.device_loader_edits(call, loader, device, &torch)?;
                Ok(fix(edits, vec![], cx.imports))
            }
            FixAction::Args { callee, set, remove, rename, splat } => {
                let call = site.call.ok_or("not a call")?;
                let removed: Vec<TextRange> = remove
                    .iter()
                    .filter_map(|param| {
                        let arg = bound.values.get(param)?;
                        Some(bound.keyword_ranges.get(param).copied().unwrap_or(arg.range()))
                    })
                    .collect();
                let mut added = Vec::new();
                let mut edits = Vec::new();
                for (param, template) in set {
                    let value = template.expand(&mut cx)?;
                    match bound.values.get(param) {
                        Some(arg) => edits.push(Edit::replace(arg.range(), same_quotes(self.src(arg.range()), value))),
                        None => added.push(format!("{param}={value}")),
                    }
                }
                if let Some(template) = splat {
                    added.push(format!("**{}", template.expand(&mut cx)?));
                }
                for (old, new) in rename {
                    // The keyword's name only: its value and comments stay as written.
                    if let Some(range) =
                        bound.keyword_ranges.get(old).filter(|r| self.src(**r).starts_with(old.as_str()))
                    {
                        let name =
                            TextRange::at(range.start(), TextSize::try_from(old.len()).map_err(|e| e.to_string())?);
                        edits.push(Edit::replace(name, new.clone()));
                    }
                }
                if !added.is_empty() {
                    edits.push(self.append_arguments(call, &added.join(", "), &removed));
                }
                edits.extend(self.remove_arguments(call, &removed));
                if let Some(callee) = callee {
                    // Up to the opening parenthesis: the edit names the call (`helper(`), as a
                    // replacement would, for the helpers it brings.
                    let name = TextRange::new(call.func.start(), call.arguments.start() + TextSize::from(1));
                    edits.push(Edit::replace(name, format!("{}(", callee.expand(&mut cx)?)));
                }
                Ok(fix(edits, vec![], cx.imports))
            }
        }
    }

    /// The text each string literal passed to a parameter of `spec.map` becomes; a string the
    /// map does not list makes the fix unavailable (any other argument is carried as written).
    fn mapped_arguments(
        &self,
        spec: &crate::migrate::rules::FixSpec,
        cx: &mut ExpandCx<'_, 'a>,
    ) -> Result<FxHashMap<String, String>, String> {
        let mut mapped = FxHashMap::default();
        for (param, values) in &spec.map {
            let Some(Expr::StringLiteral(lit)) = cx.bound.values.get(param) else { continue };
            let literal = lit.value.to_str();
            let to = values.get(literal).ok_or_else(|| {
                let known = values.keys().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
                format!("`{param}` is \"{literal}\", which is none of {known}")
            })?;
            mapped.insert(param.clone(), to.expand(cx)?);
        }
        Ok(mapped)
    }

    /// The tokens lying entirely inside `range` (binary search: tokens are sorted).
    pub(super) fn tokens_within(&self, range: TextRange) -> &'a [ruff_python_ast::token::Token] {
        let tokens: &[ruff_python_ast::token::Token] = self.parsed_tokens.tokens();
        let from = tokens.partition_point(|t| t.start() < range.start());
        let to = tokens.partition_point(|t| t.end() <= range.end()).max(from);
        &tokens[from..to]
    }

    /// Comments inside a replaced span would be lost: move them after the
    /// replacement when it ends its line. Returns false if they cannot be kept.
    pub(super) fn carry_comments(&self, range: TextRange, replacement: String) -> (String, bool) {
        let comments: Vec<&str> = self
            .tokens_within(range)
            .iter()
            .filter(|t| t.kind() == TokenKind::Comment)
            .map(|t| self.src(t.range()))
            .collect();
        if comments.is_empty() {
            return (replacement, true);
        }
        let end = usize::from(range.end());
        let rest = &self.text[end..crate::source::line_end_inclusive(self.text, end)];
        if rest.trim().is_empty() {
            (format!("{replacement}  {}", comments.join("  ")), true)
        } else {
            (replacement, false)
        }
    }

    /// The statement whose whole value is `expr` (`xm.mark_step()` on its own line).
    pub(super) fn expression_statement(&self, expr: &Expr) -> Option<(StmtRef, &'a Stmt)> {
        let (sref, stmt) = *self.stmt.last()?;
        match stmt {
            Stmt::Expr(e) if e.value.range() == expr.range() => Some((sref, stmt)),
            _ => None,
        }
    }

    /// The assignment (or `del`) whose single target is `expr` (`os.environ["X"] = …`).
    pub(super) fn assignment_to(&self, expr: &Expr) -> Option<(StmtRef, &'a Stmt)> {
        let (sref, stmt) = *self.stmt.last()?;
        let targets: &[Expr] = match stmt {
            Stmt::Assign(a) => &a.targets,
            Stmt::Delete(d) => &d.targets,
            _ => return None,
        };
        (targets.len() == 1 && targets[0].range() == expr.range()).then_some((sref, stmt))
    }

    /// The `return` statement whose value is `expr`.
    pub(super) fn returned_by(&self, expr: &Expr) -> Option<&'a Stmt> {
        let (_, stmt) = *self.stmt.last()?;
        matches!(stmt, Stmt::Return(r) if r.value.as_ref().is_some_and(|v| v.range() == expr.range())).then_some(stmt)
    }

    /// The assignment statement whose value is `expr` (`x = xm.mesh_reduce(…)`), and its target's text.
    pub(super) fn assigned_by(&self, expr: &Expr) -> Option<(&'a Stmt, &'a str)> {
        let (_, stmt) = *self.stmt.last()?;
        match stmt {
            Stmt::Assign(a) if a.targets.len() == 1 && a.value.range() == expr.range() => {
                Some((stmt, self.src(a.targets[0].range())))
            }
            _ => None,
        }
    }

    /// Appends `arguments` (`name=value`, `**mapping`) after the call's last argument that is
    /// not `removed`.
    pub(super) fn append_arguments(&self, call: &ExprCall, arguments: &str, removed: &[TextRange]) -> Edit {
        let last = call
            .arguments
            .args
            .iter()
            .map(Ranged::range)
            .chain(call.arguments.keywords.iter().map(Ranged::range))
            .filter(|r| !removed.contains(r))
            .max_by_key(|r| r.end());
        // One argument per line (black's exploded call): the new one gets its own line.
        let own_line = |r: TextRange| {
            let start = usize::from(r.start());
            let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
            let indent = &self.text[line_start..start];
            (line_start > usize::from(call.start()) && indent.trim().is_empty()).then_some(indent)
        };
        match (last, removed.iter().max_by_key(|r| r.end())) {
            (Some(r), _) => match own_line(r) {
                Some(indent) => Edit::insert(r.end(), format!(",\n{indent}{arguments}")),
                None => Edit::insert(r.end(), format!(", {arguments}")),
            },
            // Every argument goes: the new ones take the place of the last (its deletion keeps
            // the blanks and the comma around it).
            (None, Some(&r)) => Edit::insert(r.end(), arguments.to_string()),
            (None, None) => Edit::insert(call.arguments.range.start() + TextSize::from(1), arguments.to_string()),
        }
    }

    /// Deletes these arguments with their separators. Adjacent arguments are deleted as one
    /// span: separate deletions would overlap on the comma between them.
    pub(super) fn remove_arguments(&self, call: &ExprCall, removed: &[TextRange]) -> Vec<Edit> {
        let mut all: Vec<TextRange> = call
            .arguments
            .args
            .iter()
            .map(Ranged::range)
            .chain(call.arguments.keywords.iter().map(Ranged::range))
            .collect();
        all.sort_by_key(|r| r.start());
        let mut edits = Vec::new();
        let mut i = 0;
        while i < all.len() {
            if !removed.contains(&all[i]) {
                i += 1;
                continue;
            }
            let first = i;
            while i + 1 < all.len() && removed.contains(&all[i + 1]) {
                i += 1;
            }
            let span = match (all.get(i + 1), first.checked_sub(1)) {
                (Some(next), _) => TextRange::new(all[first].start(), next.start()),
                (None, Some(before)) => TextRange::new(all[before].end(), all[i].end()),
                (None, None) => TextRange::new(all[first].start(), all[i].end()),
            };
            edits.push(Edit::delete(span));
            i += 1;
        }
        edits
    }

    pub(super) fn unwrap_fix(
        &self,
        rule: RuleId,
        with: &ast::StmtWith,
        call: &ExprCall,
    ) -> (Option<Fix>, Option<String>) {
        let Some(spec) = self.rule(rule).fixes.iter().find(|f| matches!(f.action, FixAction::Unwrap)) else {
            return (None, None);
        };
        if !call.arguments.is_empty() {
            return (None, Some("not converted: the call has arguments".into()));
        }
        match self.dedented_body(with) {
            Ok(body) => {
                let fix = Fix {
                    safety: spec.safety,
                    edits: vec![Edit::replace(with.range, body)],
                    deletes: vec![],
                    imports: vec![],
                    helpers: vec![],
                };
                (Some(fix), spec.note.clone())
            }
            Err(reason) => (None, Some(format!("not converted: {reason}"))),
        }
    }

    /// The body of a `with` block, dedented to the `with`'s own column.
    pub(super) fn dedented_body(&self, with: &ast::StmtWith) -> Result<String, String> {
        let (first, last) = (with.body.first().ok_or("empty body")?, with.body.last().ok_or("empty body")?);
        let with_indent = indentation_at(self.text, with.start().into());
        let body_indent = indentation_at(self.text, first.start().into());
        let body_line_start = usize::from(first.start()) - body_indent.len();
        if body_line_start < usize::from(with.start()) {
            // `with x: stmt` on one line.
            return Ok(self.text[TextRange::new(first.start(), last.end())].to_string());
        }
        if !body_indent.starts_with(with_indent) {
            // `    with` over `\t    body`: valid Python, but no prefix to cut. Taken for a
            // one-line `with`, its later lines kept their deeper indentation (a broken file).
            return Err("the body is indented with other tabs and spaces than the `with`".into());
        }
        let span = TextRange::new(TextSize::try_from(body_line_start).map_err(|e| e.to_string())?, with.end());
        // Python also ends a line at a lone `\r` (classic Mac files); the body is re-indented
        // line by line at `\n`, so such a line would keep its indentation (found by the fuzzer).
        let body = self.text[span].as_bytes();
        if body.iter().enumerate().any(|(i, &b)| b == b'\r' && body.get(i + 1) != Some(&b'\n')) {
            return Err("the body breaks lines with a bare carriage return".into());
        }
        let multiline_string = self.tokens_within(span).iter().any(|t| {
            matches!(t.kind(), TokenKind::String | TokenKind::FStringMiddle | TokenKind::TStringMiddle)
                && self.text[t.range()].contains('\n')
        });
        if multiline_string {
            return Err("the body has a multi-line string whose content would change".into());
        }
        let extra = body_indent.len() - with_indent.len();
        let mut out = String::new();
        for line in self.text[span].split_inclusive('\n') {
            if line.trim().is_empty() {
                out.push_str(line.trim_start_matches([' ', '\t']));
            } else if let Some(rest) = line.strip_prefix(body_indent) {
                // The body's indentation becomes the `with`'s: cutting the line's first `extra`
                // bytes instead would eat a leading tab of an indentation like `\t    `.
                out.push_str(with_indent);
                out.push_str(rest);
            } else if line.as_bytes().iter().take(extra).all(|&b| b == b' ' || b == b'\t') && line.len() >= extra {
                // A continuation line inside brackets (bytes, not chars: no slicing inside a character).
                out.push_str(&line[extra..]);
            } else {
                return Err("a line in the body is indented less than the body".into());
            }
        }
        // The `with` keyword already sits after its indentation.
        Ok(out[with_indent.len().min(out.len())..].trim_end_matches(['\n', '\r']).to_string())
    }

    /// A literal's replacement, with the first variant for literals passed to `callee` (a
    /// variant's `names`), or else the first for any.
    pub(super) fn literal_fix(
        &self,
        rule: RuleId,
        range: TextRange,
        literal: &str,
        callee: Option<&str>,
    ) -> (Option<Fix>, Option<String>) {
        let fixes = &self.rule(rule).fixes;
        let for_callee = fixes.iter().find(|f| callee.is_some_and(|c| f.names.iter().any(|n| n == c)));
        let Some(spec) = for_callee.or_else(|| fixes.iter().find(|f| f.names.is_empty())) else { return (None, None) };
        let fix = Fix {
            safety: spec.safety,
            edits: vec![Edit::replace(range, literal)],
            deletes: vec![],
            imports: vec![],
            helpers: vec![],
        };
        (Some(fix), spec.note.clone())
    }
}

/// Expands a helper's template for the project's helper module, a file of helpers only: each
/// `{@module}` is imported there under its usual name.
struct ModuleCx {
    imports: Vec<ImportRequest>,
}

impl ExpandContext for ModuleCx {
    fn arg(&mut self, _: &str) -> Option<String> {
        None
    }
    fn default(&self, _: &str) -> Option<Template> {
        None
    }
    fn varargs(&mut self, _: &str) -> Vec<String> {
        Vec::new()
    }
    fn kwargs(&mut self, _: &str) -> Vec<(String, String)> {
        Vec::new()
    }
    fn module(&mut self, module: &str) -> Result<String, String> {
        let alias = match module {
            "torch.distributed" => Some("dist"),
            "torch.multiprocessing" => Some("mp"),
            _ => None,
        };
        let request = ImportRequest { module: module.to_string(), alias: alias.map(str::to_string) };
        if !self.imports.contains(&request) {
            self.imports.push(request);
        }
        Ok(alias.unwrap_or(module).to_string())
    }
    fn target(&self) -> Option<&str> {
        None
    }
    fn all_args(&self) -> String {
        String::new()
    }
    fn fresh(&mut self, hint: &str) -> String {
        hint.to_string()
    }
}

/// Template expansion at one match site.
struct ExpandCx<'c, 'a> {
    checker: &'c Checker<'a>,
    site: &'c Site<'a>,
    signature: Option<&'c Signature>,
    bound: &'c Bound<'a>,
    used_params: FxHashSet<String>,
    imports: Vec<ImportRequest>,
    assign: Option<String>,
    fresh: FxHashMap<String, String>,
    /// Where `{@module}` names are looked up: the site, the module for helpers, the top of
    /// the worker for a launcher's worker prelude.
    scope: crate::migrate::semantic::ScopeId,
    offset: TextSize,
    /// Arguments a fix's `map` rewrites (`"sum"` → `dist.ReduceOp.SUM`), by parameter.
    mapped: FxHashMap<String, String>,
}

impl<'c, 'a> ExpandCx<'c, 'a> {
    pub(super) fn new(
        checker: &'c Checker<'a>,
        site: &'c Site<'a>,
        signature: Option<&'c Signature>,
        bound: &'c Bound<'a>,
    ) -> Self {
        ExpandCx {
            checker,
            site,
            signature,
            bound,
            used_params: FxHashSet::default(),
            imports: Vec::new(),
            assign: None,
            fresh: FxHashMap::default(),
            scope: checker.scope,
            offset: site.expr.start(),
            mapped: FxHashMap::default(),
        }
    }

    /// Every argument the call passes must be carried over, conditioned on, or explicitly droppable.
    pub(super) fn check_consumed(
        &self,
        spec: &crate::migrate::rules::FixSpec,
        template: &Template,
    ) -> Result<(), String> {
        let carried: FxHashSet<&str> = template.params().collect();
        for p in self.bound.passed_names() {
            if !carried.contains(p) && !spec.drop.iter().any(|d| d == p) && !spec.when.contains_key(p) {
                return Err(format!("argument `{p}` has no equivalent in the fix"));
            }
        }
        Ok(())
    }
}

impl ExpandCx<'_, '_> {
    /// An argument's source, fit to stand anywhere a template puts it. A positional
    /// `x := v`, `yield v` or bare generator is only valid where it was written (an expression's
    /// range leaves its parentheses out): as `args=x := v` it would not parse.
    fn argument_text(&self, e: &Expr) -> String {
        let text = self.checker.src(e.range());
        match e {
            Expr::Named(_) | Expr::Yield(_) | Expr::YieldFrom(_) => format!("({text})"),
            Expr::Generator(g) if !g.parenthesized => format!("({text})"),
            _ => text.to_string(),
        }
    }
}

impl ExpandContext for ExpandCx<'_, '_> {
    fn arg(&mut self, name: &str) -> Option<String> {
        self.used_params.insert(name.to_string());
        if let Some(text) = self.mapped.get(name) {
            return Some(text.clone());
        }
        self.bound.values.get(name).map(|e| self.argument_text(e))
    }

    fn default(&self, name: &str) -> Option<Template> {
        self.signature.and_then(|s| s.default_of(name)).cloned()
    }

    fn varargs(&mut self, name: &str) -> Vec<String> {
        self.used_params.insert(name.to_string());
        self.bound.varargs.get(name).map(|v| v.iter().map(|e| self.argument_text(e)).collect()).unwrap_or_default()
    }

    fn kwargs(&mut self, name: &str) -> Vec<(String, String)> {
        self.used_params.insert(name.to_string());
        self.bound
            .kwargs
            .get(name)
            .map(|v| v.iter().map(|(k, e)| (k.clone(), self.argument_text(e))).collect())
            .unwrap_or_default()
    }

    fn module(&mut self, module: &str) -> Result<String, String> {
        let sem = self.checker.sem;
        let since = crate::migrate::target::restart_barrier(self.checker.text).filter(|&b| self.offset >= b);
        if let Some(name) = sem.name_for_module(module, self.scope, self.offset, since) {
            return Ok(name);
        }
        let alias = match module {
            "torch.distributed" => Some("dist"),
            "torch.multiprocessing" => Some("mp"),
            _ => None,
        };
        if let Some((root, _)) = module.split_once('.')
            && alias.is_none()
        {
            // `import lightning.pytorch.strategies` binds `lightning`: usable when that name means
            // nothing else here (`import lightning as L` leaves it free).
            let free = !self.checker.all_names().contains(root) || sem.binds_only_module(root, root);
            if !free {
                return Err(format!("no import of `{module}` to refer to (`{root}` means something else here)"));
            }
            self.imports.push(ImportRequest { module: module.to_string(), alias: None });
            return Ok(module.to_string());
        }
        // A name that is used but never bound (`torch.x` relying on a star import) may be imported.
        // A name bound only by imports of this very module (written below the insertion, or
        // in a later notebook cell) may be imported again up top.
        // A function that binds the name itself (its own `import torch.distributed as dist`,
        // further down) makes it local there: a module-level import would not reach the code.
        let local =
            |name: &str| self.scope != 0 && sem.bindings.iter().any(|b| b.scope == self.scope && b.name == name);
        let free = |name: &str| {
            let bound_somewhere = sem.is_bound_anywhere(name);
            let only_this_module = bound_somewhere && sem.binds_only_module(name, module);
            (only_this_module || !self.checker.all_names().contains(name) || (!bound_somewhere && name == module))
                && !local(name)
        };
        let name = match alias {
            None if free(module) => module.to_string(),
            None => {
                return Err(format!(
                    "cannot add `import {module}`: the name `{module}` already means something else in this file"
                ));
            }
            // `mp` taken by the standard library's multiprocessing: `torch_mp`, `torch_mp_2`…
            // (the same choice in every fix of the file, so they share one import).
            Some(alias) => std::iter::once(alias.to_string())
                .chain(std::iter::once(format!("torch_{alias}")))
                .chain((2..).map(|i| format!("torch_{alias}_{i}")))
                .find(|n| free(n))
                .expect("an unused name exists"),
        };
        let alias = alias.map(|_| name.clone());
        self.imports.push(ImportRequest { module: module.to_string(), alias });
        Ok(name)
    }

    fn target(&self) -> Option<&str> {
        self.site.target
    }

    fn name(&self) -> Option<String> {
        self.site.call.is_none().then(|| self.checker.src(self.site.expr.range()).to_string())
    }

    fn receiver(&self) -> Option<String> {
        let Expr::Attribute(method) = &*self.site.call?.func else { return None };
        matches!(&*method.value, Expr::Name(_)).then(|| self.checker.src(method.value.range()).to_string())
    }

    fn assign(&self) -> Option<String> {
        self.assign.clone()
    }

    fn process(&self, fact: ProcessFact) -> Option<String> {
        // Only at the match itself: helpers and preludes are expanded elsewhere.
        if self.offset != self.site.expr.start() {
            return None;
        }
        let process = self.checker.framework_process(self.offset)?;
        Some(match fact {
            ProcessFact::Rank => process.rank,
            ProcessFact::WorldSize => process.world_size,
        })
    }

    fn fresh(&mut self, hint: &str) -> String {
        if let Some(name) = self.fresh.get(hint) {
            return name.clone();
        }
        let names = self.checker.all_names();
        let name = std::iter::once(hint.to_string())
            .chain((2..).map(|i| format!("{hint}_{i}")))
            .find(|n| !names.contains(n.as_str()) && !self.fresh.values().any(|v| v == n))
            .expect("an unused name exists");
        self.fresh.insert(hint.to_string(), name.clone());
        name
    }

    fn all_args(&self) -> String {
        match self.site.call {
            Some(call) => {
                let r = call.arguments.range;
                let inner = TextRange::new(r.start() + TextSize::from(1), r.end() - TextSize::from(1));
                self.checker.src(inner).to_string()
            }
            None => String::new(),
        }
    }
}

/// A statement template's text without its top-level expression statements that call nothing:
/// `{$assign}value` where the call's value is discarded (`xm.all_reduce(op, tensors)` on its
/// own line) would leave a bare `value` behind.
fn without_discarded_values(text: &str) -> String {
    let Ok(parsed) = ruff_python_parser::parse_module(text) else { return text.to_string() };
    let discarded: Vec<TextRange> = parsed
        .syntax()
        .body
        .iter()
        .filter(|stmt| matches!(stmt, Stmt::Expr(e) if crate::migrate::rules::template::calls_nothing(&e.value)))
        .map(Ranged::range)
        .collect();
    let mut out = String::new();
    let mut from = 0;
    for range in discarded {
        let start = crate::source::line_start(text, range.start().into());
        out.push_str(&text[from..start]);
        from = crate::source::line_end_inclusive(text, range.end().into());
    }
    out.push_str(&text[from..]);
    out.trim_end_matches('\n').to_string()
}

/// Inside an f-string delimited by `quote`, a replacement must use the other
/// quote for its own string literals (Python < 3.12 rejects the same one).
/// The user's code that fills the template was valid there, so only the
/// template's own literals can hold `quote`.
fn requote_for_fstring(text: &str, quote: char) -> Result<String, String> {
    if !text.contains(quote) {
        return Ok(text.to_string());
    }
    let other = if quote == '"' { '\'' } else { '"' };
    if text.contains(other) {
        return Err("its replacement needs both quote characters inside an f-string".into());
    }
    Ok(text.replace(quote, &other.to_string()))
}

/// Keep the file's quote style when a string argument is replaced by another.
fn same_quotes(original: &str, new: String) -> String {
    let simple = |s: &str, q: char| {
        s.len() >= 2 && s.starts_with(q) && s.ends_with(q) && !s[1..s.len() - 1].contains(['\'', '"', '\\'])
    };
    if simple(original, '\'') && simple(&new, '"') { format!("'{}'", &new[1..new.len() - 1]) } else { new }
}

/// A comparison or arithmetic: an operand of `and`/`or` as it is.
fn binds_tighter_than_not(text: &str) -> bool {
    ruff_python_parser::parse_expression(text)
        .is_ok_and(|p| matches!(p.expr(), Expr::Compare(_) | Expr::BinOp(_) | Expr::UnaryOp(_) | Expr::Await(_)))
}

fn is_atomic(text: &str) -> bool {
    match ruff_python_parser::parse_expression(text) {
        Ok(parsed) => matches!(
            parsed.expr(),
            Expr::Call(_)
                | Expr::Attribute(_)
                | Expr::Name(_)
                | Expr::Subscript(_)
                | Expr::StringLiteral(_)
                | Expr::NumberLiteral(_)
                | Expr::BooleanLiteral(_)
                | Expr::NoneLiteral(_)
                | Expr::List(_)
                | Expr::Dict(_)
                | Expr::Set(_)
        ),
        Err(_) => false,
    }
}
