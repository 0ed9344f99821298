//! Matching: walk one parsed file, resolve every reference, and turn rule
//! matches into diagnostics that carry their fix (if one is safe to offer).

use std::collections::HashSet;

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, ExprContext, Stmt};
use ruff_python_parser::Parsed;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::migrate::fix::{Block, Edit, Fix, ImportRequest, StmtRef};
use crate::migrate::rules::template::{Bound, ExpandContext, Signature, Template, arg_matches};
use crate::migrate::rules::{Builtin, FixAction, MatchKind, Rule, RuleId, RuleSet};
use crate::migrate::semantic::{BindingId, Qualified, ScopeId, Semantic};
use crate::source::{indentation_at, newline_of};

/// One finding in one file.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub rule: RuleId,
    pub range: TextRange,
    pub message: String,
    /// Why no fix is offered (or what to check after an unsafe one).
    pub note: Option<String>,
    pub fix: Option<Fix>,
}

pub struct CheckResult {
    pub diagnostics: Vec<Diagnostic>,
    pub blocks: Vec<Block>,
}

/// `# noqa` (all codes) or `# noqa: TPU110, TPU2` (codes or prefixes) on the
/// first or last line of a finding suppresses it, as in ruff and flake8.
struct Suppressions {
    /// (line start offset, codes; empty = all)
    lines: std::collections::HashMap<usize, Vec<String>>,
}

impl Suppressions {
    fn new(text: &str, parsed: &Parsed<ast::ModModule>) -> Suppressions {
        let mut lines = std::collections::HashMap::new();
        for t in parsed.tokens().iter().filter(|t| t.kind() == TokenKind::Comment) {
            let comment = &text[t.range()];
            let Some(at) = comment.to_ascii_lowercase().find("noqa") else { continue };
            let rest = comment[at + 4..].trim_start();
            let line = crate::source::line_start(text, t.start().into());
            match rest.strip_prefix(':') {
                // `# noqa: TPU110, F401`: only the listed codes (other tools' codes never match ours).
                Some(list) => lines.entry(line).or_insert_with(Vec::new).extend(
                    list.split([',', ' '])
                        .map(str::trim)
                        .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()))
                        .map(str::to_string),
                ),
                // A bare `# noqa` silences everything on the line.
                None => {
                    lines.insert(line, vec![String::new()]);
                }
            }
        }
        Suppressions { lines }
    }

    fn covers(&self, text: &str, range: TextRange, code: &str) -> bool {
        [range.start(), range.end()].iter().any(|offset| {
            let line = crate::source::line_start(text, usize::from(*offset));
            self.lines
                .get(&line)
                .is_some_and(|codes| codes.iter().any(|c| c.is_empty() || code.starts_with(c.as_str())))
        })
    }
}

/// What a removed torch_xla import in a guarded `try:` becomes.
const PROBE: &str = "import torch_tpu  # noqa: F401  (TorchTPU probe; was a torch_xla import)";

/// Environment accessors whose first argument names a variable.
const ENV_CALLS: &[&str] =
    &["os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv", "os.putenv", "os.unsetenv"];

pub fn check(parsed: &Parsed<ast::ModModule>, text: &str, rules: &RuleSet) -> CheckResult {
    let module = parsed.syntax();
    let sem = Semantic::build(module);
    let mut checker = Checker {
        text,
        rules,
        sem: &sem,
        parsed_tokens: parsed,
        scope: 0,
        blocks: Vec::new(),
        stmt: Vec::new(),
        operand: Vec::new(),
        used: HashSet::new(),
        owned: HashSet::new(),
        import_sites: Vec::new(),
        diagnostics: Vec::new(),
        guarded_try_bodies: HashSet::new(),
        functions: module
            .body
            .iter()
            .filter_map(|s| s.as_function_def_stmt())
            .map(|f| (f.name.id.as_str(), f))
            .collect(),
    };
    checker.visit_block(&module.body, None);
    checker.report_imports();
    let mut diagnostics = std::mem::take(&mut checker.diagnostics);
    let suppressed = Suppressions::new(text, parsed);
    diagnostics.retain(|d| !suppressed.covers(text, d.range, &rules.rules[d.rule].code));
    diagnostics.sort_by_key(|d| (d.range.start(), d.rule));
    CheckResult { diagnostics, blocks: checker.blocks }
}

struct Checker<'a> {
    text: &'a str,
    rules: &'a RuleSet,
    sem: &'a Semantic,
    parsed_tokens: &'a Parsed<ast::ModModule>,
    scope: ScopeId,
    blocks: Vec<Block>,
    /// The statements enclosing the current expression, innermost last.
    stmt: Vec<(StmtRef, &'a Stmt)>,
    /// For each expression being walked: is it an operand (needs parentheses
    /// around a non-atomic replacement)?
    operand: Vec<bool>,
    used: HashSet<BindingId>,
    /// Arguments of a call a rule already reported (their constants are the rule's business).
    owned: HashSet<TextSize>,
    import_sites: Vec<(StmtRef, &'a Stmt)>,
    diagnostics: Vec<Diagnostic>,
    /// Bodies of `try:` blocks whose `except ImportError` does real work (sets
    /// a flag…): removing their imports must keep the probe meaningful.
    guarded_try_bodies: HashSet<usize>,
    /// Module-level functions, for launcher fixes that edit the worker.
    functions: std::collections::HashMap<&'a str, &'a ast::StmtFunctionDef>,
}

/// Where a match sits, for building its fix.
struct Site<'a> {
    rule: RuleId,
    target: Option<&'a str>,
    expr: &'a Expr,
    call: Option<&'a ExprCall>,
    /// The spelling used in the source, for messages.
    spelled: String,
}

impl<'a> Checker<'a> {
    fn src(&self, range: TextRange) -> &'a str {
        &self.text[range]
    }

    fn rule(&self, id: RuleId) -> &'a Rule {
        &self.rules.rules[id]
    }

    fn visit_block(&mut self, body: &'a [Stmt], owner: Option<(StmtRef, bool)>) {
        let block = self.blocks.len();
        self.blocks.push(Block { stmts: body.iter().map(Ranged::range).collect(), owner });
        for (index, stmt) in body.iter().enumerate() {
            let sref = StmtRef { block, index };
            self.stmt.push((sref, stmt));
            self.visit_statement(stmt, sref);
            self.stmt.pop();
        }
    }

    fn in_scope_of(&mut self, start: TextSize, f: impl FnOnce(&mut Self)) {
        let saved = self.scope;
        if let Some(scope) = self.sem.scope_of_node(start) {
            self.scope = scope;
        }
        f(self);
        self.scope = saved;
    }

    fn visit_statement(&mut self, stmt: &'a Stmt, sref: StmtRef) {
        let owner = Some((sref, false));
        match stmt {
            Stmt::FunctionDef(def) => {
                crate::migrate::semantic::visit_function_header(self, def);
                self.in_scope_of(def.range.start(), |c| c.visit_block(&def.body, owner));
            }
            Stmt::ClassDef(class) => {
                class.decorator_list.iter().for_each(|d| self.visit_expr(&d.expression));
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                self.in_scope_of(class.range.start(), |c| c.visit_block(&class.body, owner));
            }
            Stmt::If(if_stmt) => {
                self.visit_expr(&if_stmt.test);
                let droppable = if_stmt.elif_else_clauses.is_empty() && is_pure(&if_stmt.test);
                self.visit_block(&if_stmt.body, Some((sref, droppable)));
                for clause in &if_stmt.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.visit_expr(test);
                    }
                    self.visit_block(&clause.body, owner);
                }
            }
            Stmt::Try(try_stmt) => {
                let droppable = try_only_guards_imports(try_stmt);
                if !droppable && catches_import_error(try_stmt) {
                    self.guarded_try_bodies.insert(self.blocks.len());
                }
                self.visit_block(&try_stmt.body, Some((sref, droppable)));
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = handler;
                    if let Some(t) = &h.type_ {
                        self.visit_expr(t);
                    }
                    self.visit_block(&h.body, owner);
                }
                self.visit_block(&try_stmt.orelse, owner);
                self.visit_block(&try_stmt.finalbody, owner);
            }
            Stmt::For(for_stmt) => {
                self.visit_expr(&for_stmt.iter);
                self.visit_expr(&for_stmt.target);
                self.visit_block(&for_stmt.body, owner);
                self.visit_block(&for_stmt.orelse, owner);
            }
            Stmt::While(while_stmt) => {
                self.visit_expr(&while_stmt.test);
                self.visit_block(&while_stmt.body, owner);
                self.visit_block(&while_stmt.orelse, owner);
            }
            Stmt::With(with) => {
                self.check_with(with);
                self.visit_block(&with.body, owner);
            }
            Stmt::Match(m) => {
                self.visit_expr(&m.subject);
                for case in &m.cases {
                    if let Some(guard) = &case.guard {
                        self.visit_expr(guard);
                    }
                    self.visit_block(&case.body, owner);
                }
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.import_sites.push((sref, stmt)),
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn mark_used(&mut self, q: &Qualified) {
        self.used.extend(q.bindings.iter().copied());
    }

    // ---- matching -------------------------------------------------------

    fn visit_call(&mut self, expr: &'a Expr, call: &'a ExprCall) {
        let q = self.sem.qualified_name(&call.func, self.scope);
        if let Some(q) = &q {
            self.mark_used(q);
            if ENV_CALLS.contains(&q.name.as_str())
                && let Some(first) = call.arguments.args.first()
            {
                self.check_env(expr, first);
            }
            if let Some((rule, target)) = self.rules.lookup(MatchKind::Call, &q.name) {
                if self.match_condition_holds(rule, call) {
                    let spelled = self.src(call.func.range()).to_string();
                    self.report(Site { rule, target, expr, call: Some(call), spelled });
                    self.visit_owned_arguments(call);
                } else {
                    // e.g. `torch.compile(backend="inductor")`: not ours, and not a bare reference either.
                    self.check_device_arguments(call, Some(q));
                    self.operand.push(false);
                    self.visit_arguments(&call.arguments);
                    self.operand.pop();
                }
                return;
            }
        }
        self.check_device_arguments(call, q.as_ref());
        self.walk_with_operand(expr);
    }

    fn visit_owned_arguments(&mut self, call: &'a ExprCall) {
        for arg in call.arguments.args.iter() {
            self.owned.insert(arg.start());
        }
        for kw in call.arguments.keywords.iter() {
            self.owned.insert(kw.value.start());
        }
        self.operand.push(false);
        self.visit_arguments(&call.arguments);
        self.operand.pop();
    }

    fn match_condition_holds(&self, rule: RuleId, call: &ExprCall) -> bool {
        let rule = self.rule(rule);
        if rule.when.is_empty() {
            return true;
        }
        let Some(Ok(bound)) = rule.signature.as_ref().map(|s| s.bind(call)) else { return false };
        self.when_holds(&rule.when, &bound)
    }

    fn when_holds(&self, when: &crate::migrate::rules::When, bound: &Bound) -> bool {
        when.iter().all(|(param, accepted)| {
            let actual = bound.values.get(param).map(|e| self.src(e.range()));
            arg_matches(actual, accepted)
        })
    }

    /// A name or attribute chain in load position. Returns true if it resolved
    /// (its inner parts need no separate visit).
    fn visit_reference(&mut self, expr: &'a Expr) -> bool {
        let Some(q) = self.sem.qualified_name(expr, self.scope) else { return false };
        self.mark_used(&q);
        let spelled = self.src(expr.range()).to_string();
        if let Some((rule, target)) = self.rules.lookup(MatchKind::Reference, &q.name) {
            if !self.owned.contains(&expr.start()) {
                self.report(Site { rule, target, expr, call: None, spelled });
            }
        } else if let Some(rule) = self.rules.lookup_any(&q.name) {
            let message = self.message(rule, &spelled);
            self.diagnostics.push(Diagnostic {
                rule,
                range: expr.range(),
                message,
                note: Some(
                    "referenced without being called here (passed or stored as a value): rewrite the use by hand"
                        .into(),
                ),
                fix: None,
            });
        } else if let Some(rule) = self.rules.builtin(Builtin::Unmapped)
            && in_modules(&q.name, &self.rule(rule).modules)
        {
            let message = self.rule(rule).message.replace("{name}", &spelled).replace("{qualified}", &q.name);
            self.diagnostics.push(Diagnostic { rule, range: expr.range(), message, note: None, fix: None });
        }
        true
    }

    fn check_with(&mut self, with: &'a ast::StmtWith) {
        for item in &with.items {
            let Expr::Call(call) = &item.context_expr else {
                self.visit_expr(&item.context_expr);
                continue;
            };
            let q = self.sem.qualified_name(&call.func, self.scope);
            let matched = q.as_ref().and_then(|q| self.rules.lookup(MatchKind::With, &q.name));
            match (q, matched) {
                (Some(q), Some((rule, _))) => {
                    self.mark_used(&q);
                    let spelled = self.src(call.func.range()).to_string();
                    let (fix, note) = if with.items.len() == 1 && item.optional_vars.is_none() {
                        self.unwrap_fix(rule, with, call)
                    } else {
                        (None, Some("the `with` has other items or an `as` target: unwrap it by hand".into()))
                    };
                    let message = self.message(rule, &spelled);
                    self.diagnostics.push(Diagnostic { rule, range: item.context_expr.range(), message, note, fix });
                    self.visit_owned_arguments(call);
                }
                _ => self.visit_expr(&item.context_expr),
            }
            if let Some(vars) = &item.optional_vars {
                self.visit_expr(vars);
            }
        }
    }

    fn check_device_arguments(&mut self, call: &'a ExprCall, q: Option<&Qualified>) {
        let is_device_ctor =
            q.is_some_and(|q| matches!(q.name.as_str(), "torch.device" | "torch.autocast" | "torch.amp.autocast"));
        let is_to = matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "to");
        if (is_device_ctor || is_to)
            && let Some(first) = call.arguments.args.first()
        {
            self.check_device_literal(first);
        }
        for kw in call.arguments.keywords.iter() {
            if kw.arg.as_ref().is_some_and(|a| matches!(a.id.as_str(), "device" | "map_location" | "device_type")) {
                self.check_device_literal(&kw.value);
            }
        }
    }

    fn check_device_literal(&mut self, expr: &'a Expr) {
        let Expr::StringLiteral(lit) = expr else { return };
        if lit.value.is_implicit_concatenated() {
            return;
        }
        let value = lit.value.to_str();
        let found: Vec<(RuleId, String, String)> = self
            .rules
            .device_string_rules()
            .filter_map(|(id, r)| {
                let ds = r.device_string.as_ref()?;
                let index = if value == ds.from { Some("") } else { value.strip_prefix(&format!("{}:", ds.from)) }?;
                Some((id, index.to_string(), ds.to.clone()))
            })
            .collect();
        for (rule, index, to) in found {
            let raw = self.src(lit.range);
            let Some(quote_at) = raw.find(['"', '\'']) else { continue };
            let (prefix, body) = raw.split_at(quote_at);
            let new_value = match index.as_str() {
                "" => Some(to),
                "0" => Some(format!("{to}:0")),
                _ => None, // another chip of this process: TorchTPU gives each process one chip
            };
            let (fix, note) = match new_value {
                Some(v) => {
                    let quote = &body[..if body.starts_with("\"\"\"") || body.starts_with("'''") { 3 } else { 1 }];
                    let literal = format!("{prefix}{quote}{v}{quote}");
                    self.literal_fix(rule, lit.range, &literal)
                }
                None => (
                    None,
                    Some(format!(
                        "`{value}` names a specific chip; on TorchTPU each process sees exactly one chip, `tpu:0`"
                    )),
                ),
            };
            let message = self.message(rule, raw);
            self.diagnostics.push(Diagnostic { rule, range: lit.range, message, note, fix });
        }
    }

    fn literal_fix(&self, rule: RuleId, range: TextRange, literal: &str) -> (Option<Fix>, Option<String>) {
        let Some(spec) = self.rule(rule).fixes.first() else { return (None, None) };
        let fix =
            Fix { safety: spec.safety, edits: vec![Edit::replace(range, literal)], deletes: vec![], imports: vec![] };
        (Some(fix), spec.note.clone())
    }

    fn check_env(&mut self, expr: &'a Expr, name: &'a Expr) {
        let Expr::StringLiteral(lit) = name else { return };
        let var = lit.value.to_str();
        let Some((rule, _)) = self.rules.env_rules().find(|(_, r)| r.env.iter().any(|e| e == var)) else { return };
        self.report(Site { rule, target: None, expr, call: None, spelled: var.to_string() });
    }

    /// Report a match and build its fix from the first applicable variant.
    fn report(&mut self, site: Site<'a>) {
        let rule = self.rule(site.rule);
        let message = self.message(site.rule, &site.spelled);
        let bound = match (&rule.signature, site.call) {
            (Some(sig), Some(call)) => Some(sig.bind(call)),
            _ => None,
        };
        let mut first_reason: Option<String> = None;
        let mut result = None;
        for spec in &rule.fixes {
            let attempt = self.try_fix(&site, rule, spec, bound.as_ref());
            match attempt {
                Ok(fix) => {
                    result = Some((fix, spec.note.clone()));
                    break;
                }
                Err(reason) => {
                    first_reason.get_or_insert(reason);
                }
            }
        }
        let (fix, note) = match result {
            Some((fix, note)) => (Some(fix), note),
            None => (None, first_reason.map(|r| format!("not converted: {r}"))),
        };
        self.diagnostics.push(Diagnostic { rule: site.rule, range: site.expr.range(), message, note, fix });
    }

    fn message(&self, rule: RuleId, spelled: &str) -> String {
        self.rule(rule).message.replace("{name}", spelled)
    }

    fn try_fix(
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
            return Err(describe_when(&spec.when));
        }
        if !spec.requires_use.is_empty() && !spec.requires_use.iter().any(|r| self.sem.imports_name(r)) {
            return Err(format!("the file does not use {}", spec.requires_use.join(" or ")));
        }
        let mut fix = self.try_action(site, rule, spec, bound)?;
        if let Some(prelude) = &spec.worker_prelude
            && let Some((edit, imports)) = self.worker_prelude(site, rule, prelude, bound)
        {
            fix.edits.push(edit);
            fix.imports.extend(imports);
        }
        Ok(fix)
    }

    /// Insert the prelude at the top of the worker function a launcher call names.
    fn worker_prelude(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        prelude: &crate::migrate::rules::WorkerPrelude,
        bound: &Bound<'a>,
    ) -> Option<(Edit, Vec<ImportRequest>)> {
        let Expr::Name(worker) = bound.values.get(&prelude.param)? else { return None };
        let def = self.functions.get(worker.id.as_str())?;
        if self.src(def.range).contains(prelude.unless.as_str()) {
            return None;
        }
        let rank = def.parameters.posonlyargs.iter().chain(def.parameters.args.iter()).next()?.name().id.to_string();
        let first = match def.body.as_slice() {
            [Stmt::Expr(doc), next, ..] if doc.value.is_string_literal_expr() => next,
            [first, ..] => first,
            [] => return None,
        };
        let at = crate::source::line_start(self.text, first.start().into());
        if !self.text[at..usize::from(first.start())].trim().is_empty() {
            return None; // `def f(r): body` on one line
        }
        let mut cx = ExpandCx::new(self, site, rule.signature.as_ref(), bound);
        cx.rank = Some(rank);
        let text = prelude.statement.expand(&mut cx).ok()?;
        let indent = indentation_at(self.text, first.start().into());
        let edit = Edit::insert(TextSize::try_from(at).ok()?, format!("{indent}{text}{}", newline_of(self.text)));
        Some((edit, cx.imports))
    }

    fn try_action(
        &self,
        site: &Site<'a>,
        rule: &Rule,
        spec: &crate::migrate::rules::FixSpec,
        bound: &Bound<'a>,
    ) -> Result<Fix, String> {
        let mut cx = ExpandCx::new(self, site, rule.signature.as_ref(), bound);
        let fix = |edits, deletes, imports| Fix { safety: spec.safety, edits, deletes, imports };
        match &spec.action {
            FixAction::Replace(t) => {
                let mut text = t.expand(&mut cx)?;
                cx.check_consumed(spec, t)?;
                if self.operand.last() == Some(&true) && !is_atomic(&text) {
                    text = format!("({text})");
                }
                let (text, lossless) = self.carry_comments(site.expr.range(), text);
                let mut fix = fix(vec![Edit::replace(site.expr.range(), text)], vec![], cx.imports);
                if !lossless {
                    fix.safety = crate::migrate::rules::Safety::Unsafe;
                }
                Ok(fix)
            }
            FixAction::Statement(t) => {
                let (_, stmt) = self.expression_statement(site.expr).ok_or("its result is used as a value")?;
                let line_start = crate::source::line_start(self.text, stmt.start().into());
                if !self.text[line_start..usize::from(stmt.start())].trim().is_empty() {
                    return Err("the statement shares its line with other code".into());
                }
                let text = t.expand(&mut cx)?;
                cx.check_consumed(spec, t)?;
                let indent = indentation_at(self.text, stmt.start().into());
                let newline = newline_of(self.text);
                // Templates indent with four spaces; follow the file where it uses tabs.
                let unit = if indent.starts_with('\t') { "\t" } else { "    " };
                let text = text
                    .split('\n')
                    .enumerate()
                    .map(|(i, line)| {
                        let depth = (line.len() - line.trim_start_matches(' ').len()) / 4;
                        let body = &line[depth * 4..];
                        if i == 0 { body.to_string() } else { format!("{indent}{}{body}", unit.repeat(depth)) }
                    })
                    .collect::<Vec<_>>()
                    .join(newline);
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
                let consumed: HashSet<&str> = spec.drop.iter().chain(spec.when.keys()).map(String::as_str).collect();
                if let Some(p) = bound.passed_names().find(|p| !consumed.contains(p)) {
                    return Err(format!("argument `{p}` would be lost"));
                }
                Ok(fix(vec![], vec![sref], vec![]))
            }
            FixAction::Unwrap => Err("only applies to `with` statements".into()),
            FixAction::Args { set, remove } => {
                let call = site.call.ok_or("not a call")?;
                let mut edits = Vec::new();
                for (param, template) in set {
                    let value = template.expand(&mut cx)?;
                    match bound.values.get(param) {
                        Some(arg) => edits.push(Edit::replace(arg.range(), same_quotes(self.src(arg.range()), value))),
                        None => edits.push(self.append_keyword(call, param, &value)),
                    }
                }
                for param in remove {
                    if let Some(arg) = bound.values.get(param) {
                        let range = bound.keyword_ranges.get(param).copied().unwrap_or(arg.range());
                        edits.push(self.remove_argument(call, range));
                    }
                }
                Ok(fix(edits, vec![], cx.imports))
            }
        }
    }

    /// The tokens lying entirely inside `range` (binary search: tokens are sorted).
    fn tokens_within(&self, range: TextRange) -> &'a [ruff_python_ast::token::Token] {
        let tokens: &[ruff_python_ast::token::Token] = self.parsed_tokens.tokens();
        let from = tokens.partition_point(|t| t.start() < range.start());
        let to = tokens.partition_point(|t| t.end() <= range.end()).max(from);
        &tokens[from..to]
    }

    /// Comments inside a replaced span would be lost: move them after the
    /// replacement when it ends its line. Returns false if they cannot be kept.
    fn carry_comments(&self, range: TextRange, replacement: String) -> (String, bool) {
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
    fn expression_statement(&self, expr: &Expr) -> Option<(StmtRef, &'a Stmt)> {
        let (sref, stmt) = *self.stmt.last()?;
        match stmt {
            Stmt::Expr(e) if e.value.range() == expr.range() => Some((sref, stmt)),
            _ => None,
        }
    }

    /// The assignment (or `del`) whose single target is `expr` (`os.environ["X"] = …`).
    fn assignment_to(&self, expr: &Expr) -> Option<(StmtRef, &'a Stmt)> {
        let (sref, stmt) = *self.stmt.last()?;
        let targets: &[Expr] = match stmt {
            Stmt::Assign(a) => &a.targets,
            Stmt::Delete(d) => &d.targets,
            _ => return None,
        };
        (targets.len() == 1 && targets[0].range() == expr.range()).then_some((sref, stmt))
    }

    fn append_keyword(&self, call: &ExprCall, param: &str, value: &str) -> Edit {
        let last = call
            .arguments
            .args
            .iter()
            .map(Ranged::range)
            .chain(call.arguments.keywords.iter().map(Ranged::range))
            .max_by_key(|r| r.end());
        match last {
            Some(r) => Edit::insert(r.end(), format!(", {param}={value}")),
            None => Edit::insert(call.arguments.range.start() + TextSize::from(1), format!("{param}={value}")),
        }
    }

    fn remove_argument(&self, call: &ExprCall, range: TextRange) -> Edit {
        let mut all: Vec<TextRange> = call
            .arguments
            .args
            .iter()
            .map(Ranged::range)
            .chain(call.arguments.keywords.iter().map(Ranged::range))
            .collect();
        all.sort_by_key(|r| r.start());
        let i = all.iter().position(|r| *r == range).unwrap_or(0);
        if let Some(next) = all.get(i + 1) {
            Edit::delete(TextRange::new(range.start(), next.start()))
        } else if i > 0 {
            Edit::delete(TextRange::new(all[i - 1].end(), range.end()))
        } else {
            Edit::delete(range)
        }
    }

    fn unwrap_fix(&self, rule: RuleId, with: &ast::StmtWith, call: &ExprCall) -> (Option<Fix>, Option<String>) {
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
                };
                (Some(fix), spec.note.clone())
            }
            Err(reason) => (None, Some(format!("not converted: {reason}"))),
        }
    }

    /// The body of a `with` block, dedented to the `with`'s own column.
    fn dedented_body(&self, with: &ast::StmtWith) -> Result<String, String> {
        let (first, last) = (with.body.first().ok_or("empty body")?, with.body.last().ok_or("empty body")?);
        let with_indent = indentation_at(self.text, with.start().into());
        let body_indent = indentation_at(self.text, first.start().into());
        let body_line_start = usize::from(first.start()) - body_indent.len();
        if body_line_start < usize::from(with.start()) || !body_indent.starts_with(with_indent) {
            // `with x: stmt` on one line.
            return Ok(self.text[TextRange::new(first.start(), last.end())].to_string());
        }
        let span = TextRange::new(TextSize::try_from(body_line_start).map_err(|e| e.to_string())?, with.end());
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
            } else if line.starts_with(body_indent)
                || line[..extra.min(line.len())].chars().all(|c| c == ' ' || c == '\t')
            {
                out.push_str(&line[extra..]);
            } else {
                return Err("a line in the body is indented less than the body".into());
            }
        }
        // The `with` keyword already sits after its indentation.
        Ok(out[with_indent.len().min(out.len())..].trim_end_matches(['\n', '\r']).to_string())
    }

    fn walk_with_operand(&mut self, expr: &'a Expr) {
        self.operand.push(is_operator_context(expr));
        visitor::walk_expr(self, expr);
        self.operand.pop();
    }

    // ---- imports --------------------------------------------------------

    fn report_imports(&mut self) {
        let Some(rule) = self.rules.builtin(Builtin::Import) else { return };
        let modules = self.rule(rule).modules.clone();
        let probes = self.probe_sites(&modules);
        for (sref, stmt) in std::mem::take(&mut self.import_sites) {
            let aliases: Vec<(&ast::Alias, String)> = match stmt {
                Stmt::Import(i) => i.names.iter().map(|a| (a, a.name.id.to_string())).collect(),
                Stmt::ImportFrom(i) if i.level == 0 => {
                    let module = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or_default();
                    i.names.iter().map(|a| (a, format!("{module}.{}", a.name.id))).collect()
                }
                _ => continue,
            };
            let xla: Vec<&(&ast::Alias, String)> = aliases.iter().filter(|(_, m)| in_modules(m, &modules)).collect();
            if xla.is_empty() {
                continue;
            }
            let binding_of = |alias: &ast::Alias| self.sem.binding_at(alias.range.start());
            let star = xla.iter().any(|(a, _)| a.name.id.as_str() == "*");
            let unused: Vec<&ast::Alias> = xla
                .iter()
                .filter(|(a, _)| binding_of(a).is_some_and(|b| !self.used.contains(&b)))
                .map(|(a, _)| *a)
                .collect();
            let names: Vec<&str> = xla.iter().map(|(_, m)| m.as_str()).collect();
            let message = self.rule(rule).message.replace("{name}", &names.join("`, `"));
            let spec = self.rule(rule).fixes.first();
            let still_used = xla.len() - unused.len();
            let note = if star {
                Some("a star import hides which names are used: replace it by hand".to_string())
            } else if still_used > 0 {
                Some(format!("{still_used} of these names are still used: migrate their uses first"))
            } else {
                None
            };
            let fix = match spec {
                Some(spec) if !unused.is_empty() && !star => {
                    let (edits, deletes) = if unused.len() == aliases.len() && probes.contains(&sref) {
                        (vec![Edit::replace(stmt.range(), PROBE)], vec![])
                    } else if unused.len() == aliases.len() {
                        (vec![], vec![sref])
                    } else {
                        (vec![self.keep_aliases(&aliases, &unused)], vec![])
                    };
                    Some(Fix { safety: spec.safety, edits, deletes, imports: vec![] })
                }
                _ => None,
            };
            self.diagnostics.push(Diagnostic { rule, range: stmt.range(), message, note, fix });
        }
    }

    /// In each guarded `try:` body, the first torch_xla import becomes a
    /// TorchTPU probe, so `except ImportError` still fires where TorchTPU is absent.
    fn probe_sites(&self, modules: &[String]) -> HashSet<StmtRef> {
        let mut probes = HashSet::new();
        let mut seen_blocks = HashSet::new();
        for (sref, stmt) in &self.import_sites {
            if !self.guarded_try_bodies.contains(&sref.block) || seen_blocks.contains(&sref.block) {
                continue;
            }
            let names: Vec<String> = match stmt {
                Stmt::Import(i) => i.names.iter().map(|a| a.name.id.to_string()).collect(),
                Stmt::ImportFrom(i) => vec![i.module.as_ref().map(|m| m.id.to_string()).unwrap_or_default()],
                _ => continue,
            };
            if names.iter().any(|n| n == "torch_tpu") {
                seen_blocks.insert(sref.block); // already probes TorchTPU
            } else if names.iter().all(|n| in_modules(n, modules)) {
                seen_blocks.insert(sref.block);
                probes.insert(*sref);
            }
        }
        probes
    }

    /// Rewrite an import's name list without the removed aliases.
    fn keep_aliases(&self, aliases: &[(&ast::Alias, String)], removed: &[&ast::Alias]) -> Edit {
        let span = TextRange::new(aliases[0].0.start(), aliases[aliases.len() - 1].0.end());
        let kept: Vec<&str> = aliases
            .iter()
            .filter(|(a, _)| !removed.iter().any(|r| r.range == a.range))
            .map(|(a, _)| self.src(a.range))
            .collect();
        let separator = if self.src(span).contains('\n') {
            format!(",{}{}", newline_of(self.text), indentation_at(self.text, aliases[0].0.start().into()))
        } else {
            ", ".to_string()
        };
        Edit::replace(span, kept.join(&separator))
    }
}

impl<'a> Visitor<'a> for Checker<'a> {
    fn visit_annotation(&mut self, expr: &'a Expr) {
        // A string annotation (`"pl.MpDeviceLoader"`) still uses its imports.
        if let Expr::StringLiteral(lit) = expr {
            if let Ok(parsed) = ruff_python_parser::parse_expression(lit.value.to_str()) {
                let mut names = NameCollector::default();
                names.visit_expr(parsed.expr());
                for name in names.0 {
                    if let crate::migrate::semantic::Resolution::Import { also, .. } =
                        self.sem.resolve(&name, self.scope, lit.range.start())
                    {
                        self.used.extend(also);
                    }
                }
            }
            return;
        }
        self.visit_expr(expr);
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        // Only reached for statements nested in expressions' walk (none in
        // practice); blocks go through `visit_block`.
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => self.visit_call(expr, call),
            Expr::Name(ast::ExprName { ctx: ExprContext::Load, .. }) => {
                self.visit_reference(expr);
            }
            Expr::Attribute(attr) if attr.ctx == ExprContext::Load => {
                if !self.visit_reference(expr) {
                    self.walk_with_operand(expr);
                }
            }
            Expr::Attribute(attr) if attr.ctx == ExprContext::Store => {
                // `torch.backends.tpu.flag = True`: reference rules apply to targets too.
                match self.sem.qualified_name(expr, self.scope) {
                    Some(q) if self.rules.lookup(MatchKind::Reference, &q.name).is_some() => {
                        self.mark_used(&q);
                        let (rule, target) = self.rules.lookup(MatchKind::Reference, &q.name).unwrap_or_default();
                        let spelled = self.src(expr.range()).to_string();
                        self.report(Site { rule, target, expr, call: None, spelled });
                    }
                    Some(q) => self.mark_used(&q),
                    None => self.walk_with_operand(expr),
                }
            }
            Expr::Subscript(sub) => {
                if self.sem.qualified_name(&sub.value, self.scope).is_some_and(|q| q.name == "os.environ") {
                    self.check_env(expr, &sub.slice);
                }
                self.walk_with_operand(expr);
            }
            Expr::Compare(cmp) => {
                // `t.device.type == "xla"`
                let operands: Vec<&Expr> = std::iter::once(&*cmp.left).chain(cmp.comparators.iter()).collect();
                let is_type = |e: &&Expr| matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == "type");
                if operands.iter().any(is_type) {
                    for e in operands.iter().filter(|e| !is_type(e)) {
                        self.check_device_literal(e);
                    }
                }
                self.walk_with_operand(expr);
            }
            Expr::Lambda(_) | Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                self.in_scope_of(expr.start(), |c| c.walk_with_operand(expr));
            }
            _ => self.walk_with_operand(expr),
        }
    }
}

/// Names used in an expression parsed from a string annotation.
#[derive(Default)]
struct NameCollector(Vec<String>);

impl<'b> Visitor<'b> for NameCollector {
    fn visit_expr(&mut self, expr: &'b Expr) {
        if let Expr::Name(n) = expr {
            self.0.push(n.id.to_string());
        }
        visitor::walk_expr(self, expr);
    }
}

/// Template expansion at one match site.
struct ExpandCx<'c, 'a> {
    checker: &'c Checker<'a>,
    site: &'c Site<'a>,
    signature: Option<&'c Signature>,
    bound: &'c Bound<'a>,
    used_params: HashSet<String>,
    imports: Vec<ImportRequest>,
    rank: Option<String>,
}

impl<'c, 'a> ExpandCx<'c, 'a> {
    fn new(
        checker: &'c Checker<'a>,
        site: &'c Site<'a>,
        signature: Option<&'c Signature>,
        bound: &'c Bound<'a>,
    ) -> Self {
        ExpandCx { checker, site, signature, bound, used_params: HashSet::new(), imports: Vec::new(), rank: None }
    }

    /// Every argument the call passes must be carried over, conditioned on, or explicitly droppable.
    fn check_consumed(&self, spec: &crate::migrate::rules::FixSpec, template: &Template) -> Result<(), String> {
        let carried: HashSet<&str> = template.params().collect();
        for p in self.bound.passed_names() {
            if !carried.contains(p) && !spec.drop.iter().any(|d| d == p) && !spec.when.contains_key(p) {
                return Err(format!("argument `{p}` has no equivalent in the fix"));
            }
        }
        Ok(())
    }
}

impl ExpandContext for ExpandCx<'_, '_> {
    fn arg(&mut self, name: &str) -> Option<String> {
        self.used_params.insert(name.to_string());
        self.bound.values.get(name).map(|e| self.checker.src(e.range()).to_string())
    }

    fn default(&self, name: &str) -> Option<Template> {
        self.signature.and_then(|s| s.default_of(name)).cloned()
    }

    fn varargs(&mut self, name: &str) -> Vec<String> {
        self.used_params.insert(name.to_string());
        self.bound
            .varargs
            .get(name)
            .map(|v| v.iter().map(|e| self.checker.src(e.range()).to_string()).collect())
            .unwrap_or_default()
    }

    fn kwargs(&mut self, name: &str) -> Vec<(String, String)> {
        self.used_params.insert(name.to_string());
        self.bound
            .kwargs
            .get(name)
            .map(|v| v.iter().map(|(k, e)| (k.clone(), self.checker.src(e.range()).to_string())).collect())
            .unwrap_or_default()
    }

    fn module(&mut self, module: &str) -> Result<String, String> {
        let sem = self.checker.sem;
        if let Some(name) = sem.name_for_module(module, self.checker.scope, self.site.expr.start()) {
            return Ok(name);
        }
        let alias = match module {
            "torch.distributed" => Some("dist"),
            "torch.multiprocessing" => Some("mp"),
            _ => None,
        };
        let name = alias.unwrap_or(module);
        if module.contains('.') && alias.is_none() {
            return Err(format!("no import of `{module}` to refer to"));
        }
        // A name that is used but never bound (`torch.x` relying on a star import) may be imported.
        let bound_somewhere = sem.is_bound_anywhere(name);
        if sem.all_names.contains(name) && (bound_somewhere || name != module) {
            return Err(format!(
                "cannot add `import {module}`: the name `{name}` already means something else in this file"
            ));
        }
        self.imports.push(ImportRequest { module: module.to_string(), alias: alias.map(str::to_string) });
        Ok(name.to_string())
    }

    fn target(&self) -> Option<&str> {
        self.site.target
    }

    fn rank(&self) -> Option<String> {
        self.rank.clone()
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

fn describe_when(when: &crate::migrate::rules::When) -> String {
    let parts: Vec<String> = when
        .iter()
        .map(|(p, accepted)| {
            let values: Vec<String> = accepted
                .iter()
                .map(|a| match a.as_deref() {
                    None => "omitted".to_string(),
                    Some("*") => "passed".to_string(),
                    Some(v) => format!("`{v}`"),
                })
                .collect();
            format!("`{p}` is {}", values.join(" or "))
        })
        .collect();
    format!("only converted when {}", parts.join(" and "))
}

/// Keep the file's quote style when a string argument is replaced by another.
fn same_quotes(original: &str, new: String) -> String {
    let simple = |s: &str, q: char| {
        s.len() >= 2 && s.starts_with(q) && s.ends_with(q) && !s[1..s.len() - 1].contains(['\'', '"', '\\'])
    };
    if simple(original, '\'') && simple(&new, '"') { format!("'{}'", &new[1..new.len() - 1]) } else { new }
}

/// `except ImportError` (or broader) handlers: the `try` probes for a module.
fn catches_import_error(t: &ast::StmtTry) -> bool {
    let catches = |e: &Expr| match e {
        Expr::Name(n) => matches!(n.id.as_str(), "ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException"),
        _ => false,
    };
    t.handlers.iter().any(|h| {
        let ast::ExceptHandler::ExceptHandler(h) = h;
        match h.type_.as_deref() {
            None => true,
            Some(Expr::Tuple(t)) => t.elts.iter().any(catches),
            Some(e) => catches(e),
        }
    })
}

fn in_modules(name: &str, modules: &[String]) -> bool {
    modules.iter().any(|m| name == m || name.strip_prefix(m.as_str()).is_some_and(|r| r.starts_with('.')))
}

/// Expressions whose children are operands: a non-atomic replacement there needs parentheses.
fn is_operator_context(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::BinOp(_)
            | Expr::UnaryOp(_)
            | Expr::BoolOp(_)
            | Expr::Compare(_)
            | Expr::Await(_)
            | Expr::Attribute(_)
            | Expr::Subscript(_)
            | Expr::Starred(_)
    )
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

/// A test that can be dropped together with its body: names, attributes,
/// constants and `is_*_available()`-style checks.
fn is_pure(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::NumberLiteral(_) => true,
        Expr::Attribute(a) => is_pure(&a.value),
        Expr::UnaryOp(u) => is_pure(&u.operand),
        Expr::BoolOp(b) => b.values.iter().all(is_pure),
        Expr::Compare(c) => is_pure(&c.left) && c.comparators.iter().all(is_pure),
        Expr::Call(c) => {
            let name = match &*c.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.id.as_str(),
                _ => return false,
            };
            name.starts_with("is_")
                && name.ends_with("available")
                && c.arguments.args.iter().all(is_pure)
                && c.arguments.keywords.iter().all(|k| is_pure(&k.value))
        }
        _ => false,
    }
}

/// `try: import x` whose handlers only `pass` or reset the imported names.
fn try_only_guards_imports(t: &ast::StmtTry) -> bool {
    if !t.orelse.is_empty() || !t.finalbody.is_empty() {
        return false;
    }
    let mut bound: HashSet<&str> = HashSet::new();
    for stmt in &t.body {
        match stmt {
            Stmt::Import(i) => bound.extend(i.names.iter().map(|a| {
                a.asname.as_ref().map_or_else(|| a.name.id.split('.').next().unwrap_or_default(), |n| n.id.as_str())
            })),
            Stmt::ImportFrom(i) => {
                bound.extend(i.names.iter().map(|a| a.asname.as_ref().unwrap_or(&a.name).id.as_str()))
            }
            _ => return false,
        }
    }
    t.handlers.iter().all(|h| {
        let ast::ExceptHandler::ExceptHandler(h) = h;
        h.body.iter().all(|s| match s {
            Stmt::Pass(_) => true,
            Stmt::Expr(e) => matches!(*e.value, Expr::EllipsisLiteral(_)),
            Stmt::Assign(a) => {
                a.targets.iter().all(|t| matches!(t, Expr::Name(n) if bound.contains(n.id.as_str())))
                    && matches!(*a.value, Expr::NoneLiteral(_) | Expr::BooleanLiteral(_))
            }
            _ => false,
        })
    })
}
