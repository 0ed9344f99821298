//! Code held in a string that IPython runs: a notebook exported to `.py` turns a `%%time` cell
//! into `get_ipython().run_cell_magic('time', '', 'device = xm.xla_device()\n…')`, and a
//! `%%writefile train.py` cell into the same call with the whole program as its last argument.
//! That code is torch_xla code like any other: the imports it uses stay (they are used), and what
//! the rules find in it is reported at the string. It is not edited: a string's escapes do not
//! map onto the code's offsets, and the cell is better converted as code of its own.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::{Checker, Diagnostic};
use crate::migrate::semantic::Resolution;

/// Cell magics whose body is Python run in the notebook's namespace.
const NAMESPACE_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "debug"];

impl<'a> Checker<'a> {
    /// `get_ipython().run_cell_magic(magic, line, code)` with string literals: the code's uses of
    /// this file's imports, and the findings in it.
    pub(super) fn check_cell_magic(&mut self, call: &'a ast::ExprCall) {
        let Expr::Attribute(method) = &*call.func else { return };
        let [Expr::StringLiteral(magic), Expr::StringLiteral(line), Expr::StringLiteral(code), ..] =
            &call.arguments.args[..]
        else {
            return;
        };
        if method.attr.id.as_str() != "run_cell_magic" {
            return;
        }
        let (magic, line, code_text) = (magic.value.to_str(), line.value.to_str().trim(), code.value.to_str());
        let (text, prefix, written) = if NAMESPACE_MAGICS.contains(&magic) {
            self.mark_used_in(code_text, call.start());
            // Its names resolve through this file's imports: checked below them.
            let imports = self.top_level_imports();
            (format!("{imports}{code_text}"), imports.len(), None)
        } else if magic == "writefile" && !line.split_whitespace().any(|w| w.starts_with('-')) && line.ends_with(".py")
        {
            (code_text.to_string(), 0, Some(line.trim_matches(['"', '\''])))
        } else {
            return;
        };
        let Ok(parsed) = ruff_python_parser::parse_module(&text) else { return };
        let inner = super::check(&parsed, &text, self.rules, &crate::migrate::selection::Selection::default());
        let shown = match written {
            Some(file) => format!("the program this cell writes to `{file}`"),
            None => format!("the code of `run_cell_magic('{magic}', …)`"),
        };
        for d in inner.diagnostics.into_iter().filter(|d| usize::from(d.range.start()) >= prefix) {
            let line = text[prefix..usize::from(d.range.start())].matches('\n').count() + 1;
            let note = format!(
                "line {line} of {shown}; xla2tpu does not edit code held in a string: convert it there by hand{}",
                d.note.map(|n| format!(" ({n})")).unwrap_or_default()
            );
            self.diagnostics.push(Diagnostic {
                rule: d.rule,
                range: code.range(),
                message: d.message,
                note: Some(note),
                fix: None,
            });
        }
    }

    /// Mark the imports the code uses (parsed on its own; a name in code that does not parse
    /// counts where it appears as a word) as used, seen from `at`.
    fn mark_used_in(&mut self, code: &str, at: TextSize) {
        let names: Vec<String> = match ruff_python_parser::parse_module(code) {
            Ok(parsed) => {
                let mut names = Names::default();
                names.visit_body(&parsed.syntax().body);
                names.0
            }
            Err(_) => self
                .sem
                .bindings
                .iter()
                .map(|b| b.name.to_string())
                .filter(|n| crate::source::has_word(code, n))
                .collect(),
        };
        for name in names {
            if let Resolution::Import { also, .. } = self.sem.resolve(&name, self.scope, at) {
                self.used.extend(also);
            }
        }
    }

    /// This file's top-level imports, one a line, as written.
    fn top_level_imports(&self) -> String {
        self.module
            .body
            .iter()
            .filter(|s| matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_)))
            .map(|s| format!("{}\n", self.src(s.range())))
            .collect()
    }
}

/// The names an expression or body loads.
#[derive(Default)]
struct Names(Vec<String>);

impl<'b> Visitor<'b> for Names {
    fn visit_expr(&mut self, expr: &'b Expr) {
        if let Expr::Name(n) = expr {
            self.0.push(n.id.to_string());
        }
        visitor::walk_expr(self, expr);
    }
}
