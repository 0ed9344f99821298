//! Command-line entry point: argument parsing and dispatch only.
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "xla2tpu", version, about = "Migrate PyTorch/XLA and Optimum TPU code to TorchTPU")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Rewrite torch_xla / optimum-tpu code for TorchTPU (prints a diff; `--write` applies it).
    Migrate(crate::migrate::commands::MigrateArgs),
    /// Report torch_xla / optimum-tpu usage as diagnostics (exit 1 on findings, for CI).
    Check(crate::migrate::commands::CheckArgs),
    /// Explain a rule, or list all rules.
    Rule(crate::migrate::commands::RuleArgs),
    /// Run a program on the CPU emulation of TorchTPU 0.2.0: try your migration before you have a TPU.
    Run(crate::run::RunArgs),
    /// Operator profiles and backend registries.
    Ops(crate::ops::cli::OpsArgs),
    /// Compatibility report over the most-downloaded Hugging Face models.
    Sweep(crate::sweep::cli::SweepArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Migrate(args) => crate::migrate::commands::migrate(args),
        Command::Check(args) => crate::migrate::commands::check(args),
        Command::Rule(args) => crate::migrate::commands::rule(args),
        Command::Run(args) => crate::run::run(args),
        Command::Ops(args) => crate::ops::cli::run(args),
        Command::Sweep(args) => crate::sweep::cli::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
