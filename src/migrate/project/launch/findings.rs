//! What the launch file handlers share: the findings of one file, built against its text, and
//! the byte ranges they edit. Below the handlers ([`super::shell`], [`super::dockerfile`],
//! [`super::yaml`]), which embed one another's text (a YAML `run:` block is a script).

use ruff_text_size::TextRange;

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::fix::{Edit, Fix};
use crate::migrate::rules::{Builtin, FixAction, RuleSet, Safety};

/// A variable a file sets: where its name is, and the edit that unsets it (or why none can).
pub(super) struct EnvSite {
    pub name: TextRange,
    pub removal: Result<Edit, &'static str>,
}

/// The diagnostics of one file, built against its text.
pub(super) struct Findings<'a> {
    pub text: &'a str,
    pub rules: &'a RuleSet,
    /// What the run's other files establish (which accelerate configs launch torch_xla).
    pub run: Option<&'a RunFacts>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Findings<'_> {
    /// Report a variable an environment rule names: renamed when TorchTPU has an equivalent,
    /// removed when the rule deletes it, else left for review with the rule's help.
    pub(super) fn env(&mut self, site: EnvSite) {
        let var = &self.text[site.name];
        let Some((id, rule)) = self.rules.env_rules().find(|(_, r)| r.env.iter().any(|e| e == var)) else { return };
        let deletion = rule.fixes.iter().find(|f| matches!(f.action, FixAction::Delete));
        let (fix, note) = match (rule.env_renames.get(var), deletion) {
            (Some(to), _) => (Some(self.rename(var, site.name, to)), None),
            (None, Some(spec)) => match (self.read(var), site.removal) {
                (Some(at), _) => (None, Some(crate::migrate::notes::kept_note(&at, var))),
                (None, Ok(edit)) => (Some(fix(spec.safety, vec![edit])), spec.note.clone()),
                (None, Err(why)) => (None, Some(format!("not converted: {why}"))),
            },
            (None, None) => (None, None),
        };
        let message = rule.message.replace("{name}", var);
        self.diagnostics.push(Diagnostic { rule: id, range: site.name, message, note, fix });
    }

    /// Where this file (`line 3 of this file`) or another of the run (`app.py:12`) reads `var` as
    /// a value: then its assignments stay, the project's own switch.
    pub(super) fn read(&self, var: &str) -> Option<String> {
        if let Some(at) = references(self.text, var).next() {
            return Some(format!("line {} of this file", self.text[..at].matches('\n').count() + 1));
        }
        self.run.and_then(|r| r.env_read(var)).map(|at| format!("`{at}`"))
    }

    /// Where the file reads a variable that fixes delete (`if [ "$PJRT_DEVICE" = TPU ]`): torch_xla
    /// logic, which TorchTPU leaves to the project (the run's assignments of it stay), so each
    /// read is reported.
    pub(super) fn deleted_variables_read(&mut self) {
        let rules = self.rules;
        let deleted = rules.env_rules().filter(|(_, r)| r.fixes.iter().any(|f| matches!(f.action, FixAction::Delete)));
        for (id, rule) in deleted {
            for var in &rule.env {
                for at in references(self.text, var) {
                    let message = rule.message.replace("{name}", var);
                    let note = Some(crate::migrate::notes::read_note(var, "decide what this line should do"));
                    self.diagnostics.push(Diagnostic {
                        rule: id,
                        range: range(at, at + var.len()),
                        message,
                        note,
                        fix: None,
                    });
                }
            }
        }
    }

    /// Rename the variable set at `name`, and its references (`$VAR`, `${VAR}`, Kubernetes'
    /// `$(VAR)`) in the whole file, so that what reads it still finds it.
    pub(super) fn rename(&self, var: &str, name: TextRange, to: &str) -> Fix {
        let mut edits = vec![Edit::replace(name, to)];
        edits.extend(references(self.text, var).map(|at| Edit::replace(range(at, at + var.len()), to)));
        fix(Safety::Safe, edits)
    }

    /// Report what a launcher rule matches at `range`; `fix` is the rule's fix applied there,
    /// or why it cannot be.
    pub(super) fn launcher(&mut self, builtin: Builtin, at: TextRange, fix: Option<Result<Fix, String>>) {
        let Some(id) = self.rules.builtin(builtin) else { return };
        let rule = &self.rules.rules[id];
        let message = rule.message.replace("{name}", &shown(&self.text[at]));
        let (fix, note) = match fix {
            Some(Ok(fix)) => (Some(fix), rule.fixes.first().and_then(|f| f.note.clone())),
            Some(Err(why)) => (None, Some(format!("not converted: {why}"))),
            None => (None, None),
        };
        self.diagnostics.push(Diagnostic { rule: id, range: at, message, note, fix });
    }

    /// The findings of a `pip install …` command (requirements are the dependency handler's).
    pub(super) fn pip_install(&mut self, command: TextRange) {
        self.diagnostics.extend(crate::migrate::project::deps::pip_install(self.text, command, self.rules, self.run));
    }
}

/// Where `text` reads the variable `var`: `$VAR`, `${VAR}`, Kubernetes' `$(VAR)`.
pub(super) fn references<'t>(text: &'t str, var: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(var).map(|(at, _)| at).filter(move |&at| {
        let before = &text[..at];
        let is_reference = before.ends_with('$') || before.ends_with("${") || before.ends_with("$(");
        let after = text[at + var.len()..].bytes().next();
        is_reference && !after.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

pub(super) fn fix(safety: Safety, edits: Vec<Edit>) -> Fix {
    Fix { safety, edits, deletes: vec![], imports: vec![], helpers: vec![] }
}

pub(super) fn range(start: usize, end: usize) -> TextRange {
    TextRange::new(offset(start), offset(end))
}

pub(super) fn offset(at: usize) -> ruff_text_size::TextSize {
    ruff_text_size::TextSize::try_from(at).expect("files are smaller than 4 GiB")
}

/// A command as a message shows it: on one line, at most 80 characters.
pub(super) fn shown(text: &str) -> String {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let one_line = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}
