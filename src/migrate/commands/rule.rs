//! `rule`: what a rule does, as `ruff rule` shows it.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::args::RuleArgs;
use crate::config::{Overrides, Resolver};
use crate::migrate::rules::{RuleSet, Safety};

pub fn rule(args: RuleArgs) -> anyhow::Result<ExitCode> {
    // Without --rules, the rules configured for the working directory.
    let rules = match &args.rules {
        Some(dir) => Arc::new(RuleSet::load(std::slice::from_ref(dir))?),
        None => Resolver::new(Overrides::default())?.global()?.rules.clone(),
    };
    let mut out = anstream::stdout();
    match args.code {
        Some(code) => {
            let rule = rules.by_code(&code).with_context(|| format!("no rule {code}; `xla2tpu rule` lists them"))?;
            writeln!(out, "# {} ({})\n", rule.code, rule.name)?;
            writeln!(out, "{}\n", rule.help)?;
            let fix = match rule.fixes.iter().map(|f| f.safety).min() {
                Some(Safety::Safe) => "Fix: safe (applied by `migrate`)",
                Some(Safety::Unsafe) => "Fix: unsafe (applied by `migrate --unsafe-fixes`)",
                None => "Fix: none (reported with guidance)",
            };
            if let Some(range) = &rule.torchtpu {
                writeln!(out, "Applies to TorchTPU {range}\n")?;
            }
            if rule.opt_in {
                let family = &rule.code[..rule.code.len() - 1];
                writeln!(
                    out,
                    "Opt-in: enabled only when named (`--extend-select {family}` or `{}`), not by `ALL`\n",
                    rule.code
                )?;
            }
            writeln!(out, "{fix}\n\n{}", rule.explanation.trim_end())?;
            if let Some(changes) = &rule.changes {
                writeln!(out, "\nWhat behaves differently after the fix: {}", changes.trim_end())?;
            }
        }
        None => {
            let mut sorted: Vec<_> = rules.rules.iter().collect();
            sorted.sort_by(|a, b| a.code.cmp(&b.code));
            for r in sorted {
                let fix = match r.fixes.iter().map(|f| f.safety).min() {
                    Some(Safety::Safe) => "safe  ",
                    Some(Safety::Unsafe) => "unsafe",
                    None => "manual",
                };
                let help = if r.opt_in { format!("(opt-in) {}", r.help) } else { r.help.clone() };
                writeln!(out, "{}  {fix}  {:<22} {help}", r.code, r.name)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
