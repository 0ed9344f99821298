//! torch_xla imports: removed once nothing uses them, kept (and reported)
//! while something does; a guarded `try:` import becomes a TorchTPU probe.

use rustc_hash::FxHashSet;

use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Contingent, Diagnostic, in_modules};
use crate::migrate::fix::{Edit, Fix, StmtRef};
use crate::migrate::rules::{Builtin, RuleId, Safety};
use crate::migrate::semantic::aliased;
use crate::source::{indentation_at, newline_of};

/// The name an import alias binds: `xm` of `import … as xm`, `a` of `import a.b.c`.
fn bound_name(alias: &ast::Alias) -> &str {
    match &alias.asname {
        Some(name) => name.id.as_str(),
        None => alias.name.id.as_str().split('.').next().unwrap_or_default(),
    }
}

/// `import q as name`, or `from parent import last [as name]`: the import binding `name` to
/// the torch_xla name `q` directly.
fn direct_import(q: &str, name: &str) -> String {
    match q.rsplit_once('.') {
        Some((parent, last)) if last == name => format!("from {parent} import {last}"),
        Some((parent, last)) => format!("from {parent} import {last} as {name}"),
        None if q == name => format!("import {q}"),
        None => format!("import {q} as {name}"),
    }
}

/// What a removed torch_xla import in a guarded `try:` becomes.
const PROBE: &str = "import torch_tpu  # noqa: F401  (TorchTPU probe; was a torch_xla import)";

impl<'a> Checker<'a> {
    /// `import torch_xla; …; del torch_xla`: the `del` keeps the import alive.
    /// A `del` of torch_xla names only is deleted (the import then goes in the
    /// next pass); a mixed one is reported.
    pub(super) fn check_delete(&mut self, del: &'a ast::StmtDelete, sref: StmtRef) {
        let Some(rule) = self.rules.builtin(Builtin::Import) else { return };
        let modules = &self.rule(rule).modules;
        let xla: Vec<&Expr> = del
            .targets
            .iter()
            .filter(|t| {
                matches!(t, Expr::Name(_))
                    && self.sem.qualified_name(t, self.scope).is_some_and(|q| in_modules(&q.name, modules))
            })
            .collect();
        if xla.is_empty() {
            return;
        }
        let names = xla.iter().map(|t| self.src(t.range())).collect::<Vec<_>>().join("`, `");
        let message = format!("`del {names}` unbinds a torch_xla import");
        let (fix, note) = if xla.len() == del.targets.len() {
            let fix = self.rule(rule).fixes.first().map(|spec| Fix {
                safety: spec.safety,
                edits: vec![],
                deletes: vec![sref],
                imports: vec![],
                helpers: vec![],
            });
            (fix, None)
        } else {
            (None, Some(format!("remove `{names}` from this `del` so the torch_xla import can go")))
        };
        self.diagnostics.push(Diagnostic { rule, range: del.range, message, note, fix });
    }

    pub(super) fn report_imports(&mut self) {
        let Some(rule) = self.rules.builtin(Builtin::Import) else { return };
        let modules = self.rule(rule).modules.clone();
        let probes = self.probe_sites(&modules);
        // Imports still used in a probe's `try:` body: (diagnostic, statement, text kept).
        let mut kept_in_probes: Vec<(usize, StmtRef, &'a Stmt, String)> = Vec::new();
        for (sref, stmt) in std::mem::take(&mut self.import_sites) {
            // A name of the run's own module that is a torch_xla name (`from compat import xs`)
            // is that torch_xla name.
            let from_own_module = match stmt {
                Stmt::ImportFrom(i) => i.level > 0 || i.module.as_ref().is_some_and(|m| !aliased(m.id.as_str())),
                _ => false,
            };
            let exported = |a: &ast::Alias| {
                let b = self.sem.binding_at(a.range.start()).filter(|_| from_own_module)?;
                self.sem.bindings[b].qualified().filter(|q| aliased(q)).map(str::to_string)
            };
            let aliases: Vec<(&ast::Alias, String)> = match stmt {
                Stmt::Import(i) => i.names.iter().map(|a| (a, a.name.id.to_string())).collect(),
                Stmt::ImportFrom(i) if i.level == 0 || i.names.iter().any(|a| exported(a).is_some()) => {
                    let module = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or_default();
                    let name = |a: &ast::Alias| exported(a).unwrap_or_else(|| format!("{module}.{}", a.name.id));
                    i.names.iter().map(|a| (a, name(a))).collect()
                }
                _ => continue,
            };
            let xla: Vec<&(&ast::Alias, String)> = aliases.iter().filter(|(_, m)| in_modules(m, &modules)).collect();
            if xla.is_empty() {
                self.contingent.extend(self.user_import_removal(sref, stmt));
                continue;
            }
            let binding_of = |alias: &ast::Alias| self.sem.binding_at(alias.range.start());
            let star = xla.iter().any(|(a, _)| a.name.id.as_str() == "*");
            let relied_on: Vec<&str> = xla.iter().filter_map(|(_, m)| self.side_effect_relied_on(rule, m)).collect();
            let unused: Vec<&ast::Alias> = xla
                .iter()
                .filter(|(a, m)| {
                    binding_of(a).is_some_and(|b| !self.used.contains(&b))
                        && self.side_effect_relied_on(rule, m).is_none()
                })
                .map(|(a, _)| *a)
                .collect();
            let names: Vec<&str> = xla.iter().map(|(_, m)| m.as_str()).collect();
            let message = self.rule(rule).message.replace("{name}", &names.join("`, `"));
            let spec = self.rule(rule).fixes.first();
            let still_used = xla.len() - unused.len();
            let note = if star {
                Some("a star import hides which names are used: replace it by hand".to_string())
            } else if let Some(code) = relied_on.first() {
                Some(format!("imported for its side effect, which the {code} finding left in this file still needs"))
            } else if still_used > 0 {
                Some(match (xla.len(), still_used) {
                    (1, _) => "still used: migrate its uses first".to_string(),
                    (_, 1) => "1 of these names is still used: migrate its uses first".to_string(),
                    (_, n) => format!("{n} of these names are still used: migrate their uses first"),
                })
            } else {
                None
            };
            let removal = |removed: &[&ast::Alias]| {
                let spec = spec?;
                let (mut edits, deletes) = if removed.len() == aliases.len() && probes.contains(&sref) {
                    (vec![Edit::replace(stmt.range(), PROBE)], vec![])
                } else if removed.len() == aliases.len() {
                    (vec![], vec![sref])
                } else {
                    (vec![self.keep_aliases(&aliases, removed)], vec![])
                };
                let module_level = |a: &&&ast::Alias| binding_of(a).is_some_and(|b| self.sem.bindings[b].scope == 0);
                edits.extend(self.unexport(removed.iter().filter(module_level).map(|a| bound_name(a))));
                Some(Fix { safety: spec.safety, edits, deletes, imports: vec![], helpers: vec![] })
            };
            let in_probe = self.guarded_try_bodies.contains(&sref.block) && !star && relied_on.is_empty();
            // `from compat import xm` whose `xm` (torch_xla's) is still used here: import it from
            // torch_xla itself, so that the shim may drop it (its own file is migrated on its own).
            let reexported: Vec<(&ast::Alias, String)> = match stmt {
                Stmt::ImportFrom(_) => xla
                    .iter()
                    .filter(|(a, _)| exported(a).is_some() && !unused.iter().any(|u| u.range == a.range))
                    .filter_map(|(a, _)| Some((*a, exported(a)?)))
                    .collect(),
                _ => vec![],
            };
            let fix = if !reexported.is_empty() && !star {
                spec.map(|spec| {
                    let direct: Vec<String> = reexported.iter().map(|(a, q)| direct_import(q, bound_name(a))).collect();
                    let removed: Vec<&ast::Alias> =
                        unused.iter().copied().chain(reexported.iter().map(|(a, _)| *a)).collect();
                    let newline = newline_of(self.text);
                    let indent = indentation_at(self.text, stmt.start().into());
                    let edits = if removed.len() == aliases.len() {
                        vec![Edit::replace(stmt.range(), direct.join(&format!("{newline}{indent}")))]
                    } else {
                        let after = direct.iter().map(|d| format!("{newline}{indent}{d}")).collect::<String>();
                        vec![self.keep_aliases(&aliases, &removed), Edit::insert(stmt.end(), after)]
                    };
                    Fix { safety: spec.safety, edits, deletes: vec![], imports: vec![], helpers: vec![] }
                })
            } else if in_probe && still_used > 0 {
                // Moved out of the probe below, without the names nothing uses.
                let kept = if unused.is_empty() {
                    self.src(stmt.range()).to_string()
                } else {
                    let span = TextRange::new(aliases[0].0.start(), aliases[aliases.len() - 1].0.end());
                    let before = self.src(TextRange::new(stmt.start(), span.start()));
                    let after = self.src(TextRange::new(span.end(), stmt.end()));
                    format!("{before}{}{after}", self.keep_aliases(&aliases, &unused).content)
                };
                kept_in_probes.push((self.diagnostics.len(), sref, stmt, kept));
                None
            } else if !unused.is_empty() && !star {
                removal(&unused)
            } else {
                None
            };
            if unused.is_empty() && !star && relied_on.is_empty() {
                // Every name is still used: if this pass's fixes remove every use, the import
                // can go in the same pass instead of the next one.
                let all: Vec<&ast::Alias> = xla.iter().map(|(a, _)| *a).collect();
                let names = all.iter().map(|a| bound_name(a).to_string()).collect();
                if let Some(fix) = removal(&all) {
                    self.contingent.push(Contingent { range: stmt.range(), fix, names, unreported: false });
                }
            }
            self.diagnostics.push(Diagnostic { rule, range: stmt.range(), message, note, fix });
        }
        self.move_out_of_probes(&kept_in_probes, &probes);
        self.report_aliases(rule);
    }

    /// `import os` whose every name is used now, to remove in the same pass as the fixes that
    /// delete its last uses (`os.environ["PJRT_DEVICE"] = "TPU"`), so that no import the
    /// migration made unused is left behind (ruff's F401). Plain `import` statements only: a name
    /// from `from m import x` may be imported from this module by another file. An import the
    /// user had left unused is theirs and stays.
    fn user_import_removal(&self, sref: StmtRef, stmt: &'a Stmt) -> Option<Contingent> {
        let Stmt::Import(import) = stmt else { return None };
        if self.guarded_try_bodies.contains(&sref.block) {
            return None;
        }
        let used = |a: &ast::Alias| self.sem.binding_at(a.range.start()).is_some_and(|b| self.used.contains(&b));
        if !import.names.iter().all(used) {
            return None;
        }
        let names = import.names.iter().map(|a| bound_name(a).to_string()).collect();
        let fix = Fix { safety: Safety::Safe, edits: vec![], deletes: vec![sref], imports: vec![], helpers: vec![] };
        Some(Contingent { range: stmt.range(), fix, names, unreported: true })
    }

    /// Assignments that alias a torch_xla name (`xs = _xs`, `sync = torch_xla.sync`): like the
    /// imports they alias, deleted once nothing uses them (in the same pass as the fixes that
    /// remove their last uses), kept while something does.
    fn report_aliases(&mut self, rule: RuleId) {
        let Some(spec) = self.rule(rule).fixes.first() else { return };
        let safety = spec.safety;
        for (sref, stmt, binding) in std::mem::take(&mut self.alias_sites) {
            let b = &self.sem.bindings[binding];
            let name = b.name.to_string();
            let message = format!(
                "`{name}` aliases `{}`, which is not installed alongside TorchTPU",
                b.qualified().unwrap_or_default()
            );
            let edits = if b.scope == 0 { self.unexport([name.as_str()].into_iter()) } else { vec![] };
            let removal = Fix { safety, edits, deletes: vec![sref], imports: vec![], helpers: vec![] };
            let (fix, note) = if self.used.contains(&binding) {
                self.contingent.push(Contingent {
                    range: stmt.range(),
                    fix: removal,
                    names: vec![name],
                    unreported: false,
                });
                (None, Some("still used: migrate its uses first".to_string()))
            } else {
                (Some(removal), None)
            };
            self.diagnostics.push(Diagnostic { rule, range: stmt.range(), message, note, fix });
        }
    }

    /// The edits taking `names` out of the module's `__all__` list (or tuple), where it lists
    /// them: a name the migration deletes must not be exported any more.
    fn unexport<'n>(&self, names: impl Iterator<Item = &'n str>) -> Vec<Edit> {
        let all = self.module.body.iter().find_map(|stmt| {
            let Stmt::Assign(a) = stmt else { return None };
            let [Expr::Name(target)] = &*a.targets else { return None };
            (target.id.as_str() == "__all__").then_some(&*a.value)
        });
        let elts = match all {
            Some(Expr::List(l)) => &l.elts,
            Some(Expr::Tuple(t)) => &t.elts,
            _ => return vec![],
        };
        let mut edits = Vec::new();
        for name in names {
            let Some(i) = elts.iter().position(|e| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == name))
            else {
                continue;
            };
            // The entry with the separator after it, or, for the last one, before it.
            let range = match (elts.get(i + 1), i.checked_sub(1).map(|p| &elts[p])) {
                (Some(next), _) => TextRange::new(elts[i].start(), next.start()),
                (None, Some(prev)) => TextRange::new(prev.end(), elts[i].end()),
                (None, None) => elts[i].range(),
            };
            edits.push(Edit::delete(range));
        }
        edits
    }

    /// A use of a name holding a torch_xla object xla2tpu cannot follow: reported where it is
    /// used, since what it calls or reads there is torch_xla's.
    pub(super) fn report_opaque_use(&mut self, name: &ast::ExprName) {
        if name.ctx != ast::ExprContext::Load {
            return;
        }
        let Some(origin) = self.sem.opaque_origin(&name.id, self.scope, name.range.start()) else { return };
        let Some(rule) = self.rules.builtin(Builtin::Unmapped) else { return };
        let message = format!(
            "`{}` holds a torch_xla object xla2tpu cannot follow (`{}`)",
            name.id,
            super::shown(self.src(origin))
        );
        let note = Some(
            "migrate this use by hand; a name assigned one torch_xla name (`ws = xr.world_size`, \
             `getattr(xr, \"world_size\")`) is followed"
                .to_string(),
        );
        self.diagnostics.push(Diagnostic { rule, range: name.range, message, note, fix: None });
    }

    /// A torch_xla import still used (by a manual item) in a probe's `try:` body would fail on
    /// TorchTPU and send the program down its path for a machine without TorchTPU, silently,
    /// although the probe's flag now means TorchTPU. The probe becomes `import torch_tpu`, and
    /// the import goes right after the `try`, where it stops the program, loudly, until its
    /// uses are migrated (as any import kept for a manual item does). One fix per `try`, on
    /// the finding of its first such import.
    fn move_out_of_probes(&mut self, kept: &[(usize, StmtRef, &'a Stmt, String)], probes: &FxHashSet<StmtRef>) {
        let Some(spec) = self.rules.builtin(Builtin::Import).and_then(|r| self.rule(r).fixes.first()) else {
            return;
        };
        let safety = spec.safety;
        let mut blocks: Vec<usize> = kept.iter().map(|(_, sref, _, _)| sref.block).collect();
        blocks.dedup();
        for block in blocks {
            let Some((try_ref, _)) = self.blocks[block].owner else { continue };
            let try_range = self.blocks[try_ref.block].stmts[try_ref.index];
            let newline = newline_of(self.text);
            let indent = indentation_at(self.text, try_range.start().into());
            let group: Vec<&(usize, StmtRef, &Stmt, String)> = kept.iter().filter(|k| k.1.block == block).collect();
            let mut edits = Vec::new();
            let mut deletes = Vec::new();
            let mut moved = String::new();
            for (_, sref, stmt, text) in &group {
                if probes.contains(sref) {
                    edits.push(Edit::replace(stmt.range(), PROBE));
                } else {
                    deletes.push(*sref);
                }
                moved.push_str(&format!("{newline}{indent}{text}"));
            }
            // The `try` probes TorchTPU once its probe site is converted, or already does.
            if !probes.iter().any(|p| p.block == block)
                && !self.blocks[block].stmts.iter().any(|r| self.src(*r).starts_with("import torch_tpu"))
            {
                continue;
            }
            edits.push(Edit::insert(try_range.end(), moved));
            let first = group[0].0;
            self.diagnostics[first].fix = Some(Fix { safety, edits, deletes, imports: vec![], helpers: vec![] });
            self.diagnostics[first].note = Some(
                "the probe's `try` now probes TorchTPU (`import torch_tpu`); while names of this import are \
                 still used it goes right after the `try`, where it stops the program until they are migrated"
                    .into(),
            );
        }
    }

    /// The code of the rule whose findings left in this file still need `module`'s side
    /// effect (`import torch_xla.distributed.xla_backend` registers the "xla" process-group
    /// backend while an `init_process_group("xla")` remains): deleting the import would break
    /// a program that the safe fixes alone must leave working.
    fn side_effect_relied_on(&self, rule: RuleId, module: &str) -> Option<&'a str> {
        let code = self.rule(rule).side_effects.get(module)?;
        self.diagnostics.iter().any(|d| &self.rule(d.rule).code == code).then_some(code.as_str())
    }

    /// In each guarded `try:` body, the first torch_xla import becomes a
    /// TorchTPU probe, so `except ImportError` still fires where TorchTPU is absent.
    pub(super) fn probe_sites(&self, modules: &[String]) -> FxHashSet<StmtRef> {
        let mut probes = FxHashSet::default();
        let mut seen_blocks = FxHashSet::default();
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
    pub(super) fn keep_aliases(&self, aliases: &[(&ast::Alias, String)], removed: &[&ast::Alias]) -> Edit {
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
