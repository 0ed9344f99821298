//! torch_xla also drove hardware that is not a TPU (AWS Neuron, Tenstorrent,
//! CUDA through PJRT). TorchTPU does not replace it: a file that selects such
//! a device is left alone, apart from one finding that says so.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::{Checker, Diagnostic};
use crate::migrate::rules::Builtin;

/// PJRT device names torch_xla knew that TorchTPU stands in for.
const TPU_OR_HOST: &[&str] = &["TPU", "CPU"];

/// A place where the file selects a PJRT device other than a TPU: its range and the device.
struct OtherHardware {
    range: TextRange,
    device: String,
}

impl<'a> Checker<'a> {
    /// Replace every finding by one, when the file selects non-TPU hardware.
    pub(super) fn report_other_hardware(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::OtherHardware) else { return };
        // Every selector names one of these: most files never need the walk.
        if !["PJRT_DEVICE", "set_device_type"].iter().any(|w| self.text.contains(w)) {
            return;
        }
        let mut finder = Finder { checker: self, scope: 0, found: None };
        finder.visit_body(&self.module.body);
        let Some(hw) = finder.found else { return };
        let message = self.message(rule, &hw.device);
        let kept = diagnostics.len();
        diagnostics.clear();
        let note = (kept > 0)
            .then(|| format!("{kept} torch_xla use{} in this file left as they are", if kept == 1 { "" } else { "s" }));
        diagnostics.push(Diagnostic { rule, range: hw.range, message, note, fix: None });
    }
}

struct Finder<'c, 'a> {
    checker: &'c Checker<'a>,
    scope: crate::migrate::semantic::ScopeId,
    found: Option<OtherHardware>,
}

impl Finder<'_, '_> {
    fn qualified(&self, e: &Expr) -> Option<String> {
        self.checker.sem.qualified_name(e, self.scope).map(|q| q.name)
    }

    fn is_pjrt_device(e: &Expr) -> bool {
        matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "PJRT_DEVICE")
    }

    fn note(&mut self, range: TextRange, value: &Expr) {
        let Expr::StringLiteral(s) = value else { return };
        let device = s.value.to_str().trim();
        if !device.is_empty() && !TPU_OR_HOST.contains(&device.to_ascii_uppercase().as_str()) && self.found.is_none() {
            self.found = Some(OtherHardware { range, device: device.to_string() });
        }
    }
}

impl<'a> Visitor<'a> for Finder<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let saved = self.scope;
                self.scope = self.checker.sem.scope_of_node(def.range.start()).unwrap_or(saved);
                visitor::walk_stmt(self, stmt);
                self.scope = saved;
            }
            // os.environ["PJRT_DEVICE"] = "NEURON"
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Subscript(sub) = target
                        && Self::is_pjrt_device(&sub.slice)
                        && self.qualified(&sub.value).as_deref() == Some("os.environ")
                    {
                        self.note(stmt.range(), &assign.value);
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(ast::ExprCall { func, arguments, .. }) = expr {
            let range = &expr.range();
            let args = &arguments.args;
            match self.qualified(func).as_deref() {
                // xr.set_device_type("TT")
                Some("torch_xla.runtime.set_device_type") => {
                    if let Some(device) = args.first().or(arguments.find_keyword("pjrt_device").map(|k| &k.value)) {
                        self.note(*range, device);
                    }
                }
                // os.environ.setdefault("PJRT_DEVICE", "NEURON"), os.putenv(...)
                Some("os.environ.setdefault" | "os.putenv") if args.len() == 2 && Self::is_pjrt_device(&args[0]) => {
                    self.note(*range, &args[1]);
                }
                // os.environ.update(PJRT_DEVICE="CUDA")
                Some("os.environ.update") => {
                    if let Some(k) = arguments.find_keyword("PJRT_DEVICE") {
                        self.note(*range, &k.value);
                    }
                }
                _ => {}
            }
        }
        visitor::walk_expr(self, expr);
    }
}
