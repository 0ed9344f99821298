//! torch_xla also drove hardware that is not a TPU (AWS Neuron, Tenstorrent,
//! CUDA through PJRT). TorchTPU does not replace it: a file that selects such
//! a device is left alone, apart from one finding that says so. So is every file
//! of a run that selects such a device elsewhere (a Neuron project whose launch
//! script alone says `PJRT_DEVICE=NEURON`) and a TPU nowhere
//! ([`crate::migrate::facts::RunFacts::other_hardware`]).

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::{Checker, Diagnostic};
use crate::migrate::rules::Builtin;
use crate::migrate::semantic::{ScopeId, Semantic};

/// Modules of a vendor's torch_xla stack: importing one selects its hardware.
const VENDOR_MODULES: &[(&str, &str)] = &[
    ("torch_neuronx", "NEURON"),
    ("neuronx_distributed", "NEURON"),
    ("torch_neuron", "NEURON"),
    ("libneuronxla", "NEURON"),
];

/// A place where a file selects a PJRT device: its range and the device, upper case.
struct Selected {
    range: TextRange,
    device: String,
}

/// The devices a module selects (`os.environ["PJRT_DEVICE"] = "NEURON"`, `xr.set_device_type("TT")`,
/// `import torch_neuronx`), TPU and CPU included, upper case, with where.
pub fn hardware_selected(module: &ast::ModModule) -> Vec<(String, TextSize)> {
    let sem = Semantic::build(module);
    let mut finder = Finder { sem: &sem, scope: 0, found: Vec::new() };
    finder.visit_body(&module.body);
    finder.found.into_iter().map(|s| (s.device, s.range.start())).collect()
}

/// Words every selection names: a file without any needs no walk.
pub(crate) fn may_select_hardware(text: &str) -> bool {
    ["PJRT_DEVICE", "set_device_type", "neuron"].iter().any(|w| text.contains(w))
}

impl<'a> Checker<'a> {
    /// Replace every finding by one, when the file (or, with a TPU nowhere, the run) selects
    /// non-TPU hardware.
    pub(super) fn report_other_hardware(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::OtherHardware) else { return };
        let own = may_select_hardware(self.text)
            .then(|| {
                let mut finder = Finder { sem: self.sem, scope: 0, found: Vec::new() };
                finder.visit_body(&self.module.body);
                finder.found.into_iter().find(|s| !crate::migrate::target::TPU_OR_HOST.contains(&s.device.as_str()))
            })
            .flatten();
        let kept = diagnostics.len();
        let left = (kept > 0)
            .then(|| format!("{kept} torch_xla use{} in this file left as they are", if kept == 1 { "" } else { "s" }));
        let (range, device, note) = match own {
            Some(hw) => (hw.range, hw.device, left),
            None => {
                // Elsewhere in the run: said where the first torch_xla use of this file is.
                let Some((place, device)) = self.run.and_then(|r| r.other_hardware()) else { return };
                let Some(first) = diagnostics.iter().map(|d| d.range).min_by_key(|r| r.start()) else { return };
                let note = format!(
                    "`{place}` selects it for the whole project, and no file of the run selects a TPU; {}",
                    left.unwrap_or_default()
                );
                (first, device.to_string(), Some(note))
            }
        };
        let message = self.message(rule, &device);
        diagnostics.clear();
        diagnostics.push(Diagnostic { rule, range, message, note, fix: None });
    }
}

struct Finder<'s> {
    sem: &'s Semantic,
    scope: ScopeId,
    found: Vec<Selected>,
}

impl Finder<'_> {
    fn qualified(&self, e: &Expr) -> Option<String> {
        self.sem.qualified_name(e, self.scope).map(|q| q.name)
    }

    fn is_pjrt_device(e: &Expr) -> bool {
        matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "PJRT_DEVICE")
    }

    fn note(&mut self, range: TextRange, value: &Expr) {
        let Expr::StringLiteral(s) = value else { return };
        let device = s.value.to_str().trim();
        if !device.is_empty() {
            self.found.push(Selected { range, device: device.to_ascii_uppercase() });
        }
    }

    fn vendor_import(&mut self, range: TextRange, module: &str) {
        let root = module.split('.').next().unwrap_or(module);
        if let Some((_, device)) = VENDOR_MODULES.iter().find(|(m, _)| *m == root) {
            self.found.push(Selected { range, device: (*device).to_string() });
        }
    }
}

impl<'a> Visitor<'a> for Finder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let saved = self.scope;
                self.scope = self.sem.scope_of_node(def.range.start()).unwrap_or(saved);
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
            // import torch_neuronx
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.vendor_import(stmt.range(), alias.name.id.as_str());
                }
            }
            Stmt::ImportFrom(from) if from.level == 0 => {
                if let Some(module) = &from.module {
                    self.vendor_import(stmt.range(), module.id.as_str());
                }
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
