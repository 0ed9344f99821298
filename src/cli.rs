//! Command-line entry point: argument parsing and dispatch only.
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "xla2tpu",
    version,
    about = "Migrate PyTorch/XLA and Optimum TPU code to TorchTPU",
    after_help = "Examples:
  xla2tpu migrate src/                 diff of the safe fixes (--write applies them)
  xla2tpu check .                      CI gate: exit 1 while torch_xla code is left
  xla2tpu run -- python train.py       run the migrated program on the TorchTPU CPU emulator
  xla2tpu sweep --top 5000             which Hugging Face models TorchTPU 0.2.0 can run

Configuration: [tool.xla2tpu] in pyproject.toml, or xla2tpu.toml, found from each file upwards;
`xla2tpu check --show-settings FILE` prints what applies. Completions: `xla2tpu completions bash`."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Rewrite torch_xla / optimum-tpu code for TorchTPU (prints a diff; `--write` applies it).
    Migrate(crate::migrate::commands::args::MigrateArgs),
    /// Report torch_xla / optimum-tpu usage as diagnostics (exit 1 on findings, for CI).
    Check(crate::migrate::commands::args::CheckArgs),
    /// Explain a rule, or list all rules.
    Rule(crate::migrate::commands::args::RuleArgs),
    /// Run a program on the CPU emulation of TorchTPU 0.2.0: try your migration before you have a TPU.
    Run(crate::run::RunArgs),
    /// Operator profiles and backend registries.
    Ops(crate::ops::cli::OpsArgs),
    /// Compatibility report over the most-downloaded Hugging Face models.
    Sweep(crate::sweep::cli::SweepArgs),
    /// Print a shell completion script, e.g. `xla2tpu completions bash > ~/.local/share/bash-completion/completions/xla2tpu`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// The stack of each worker thread. The parser builds left-deep trees for chains such as
/// `a.b.b.b…` or `1 + 1 + …` without recursing, but dropping and walking them recurses once per
/// link: 2 MiB overflows (an abort no `catch_unwind` can stop) at a few thousand links, 1 GiB
/// holds a million. It is address space; only what a deep file touches becomes memory.
pub const WORKER_STACK: usize = 1 << 30;

pub fn main() -> ExitCode {
    // Fails only if a pool exists already, which is then what the caller chose.
    let _ = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK).build_global();
    // NO_COLOR, FORCE_COLOR and CLICOLOR_FORCE hold in every subcommand; `--color` overrides.
    crate::output::ColorChoice::Auto.apply();
    let result = parse().and_then(|cli| match cli.command {
        Command::Migrate(args) => crate::migrate::commands::migrate::migrate(args),
        Command::Check(args) => crate::migrate::commands::check::check(args),
        Command::Rule(args) => crate::migrate::commands::rule::rule(args),
        Command::Run(args) => crate::run::run(args),
        Command::Ops(args) => crate::ops::cli::run(args),
        Command::Sweep(args) => crate::sweep::cli::run(args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "xla2tpu", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(ExitCode::SUCCESS)
        }
    });
    match result {
        Ok(code) => code,
        // `xla2tpu rule | head`: the reader has what it wanted; nothing failed. (`check` finishes
        // its run and exits on its findings instead.)
        Err(err) if crate::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// The command line, where `backend` in the configuration (found from the working directory
/// up) is the default of `sweep --backend` and `ops check --backend`.
fn parse() -> anyhow::Result<Cli> {
    let matches = Cli::command().get_matches();
    let defaulted = |m: &ArgMatches| m.value_source("backend") == Some(ValueSource::DefaultValue);
    let backend_defaulted = match matches.subcommand() {
        Some(("sweep", m)) => defaulted(m),
        Some(("ops", m)) => m.subcommand().is_some_and(|(name, m)| name == "check" && defaulted(m)),
        _ => false,
    };
    let configured = if backend_defaulted {
        let cwd = std::env::current_dir()?;
        crate::config::Config::find(&cwd)?.and_then(|c| c.options.backend)
    } else {
        None
    };
    let Some(backend) = configured else {
        return Ok(Cli::from_arg_matches(&matches)?);
    };
    let matches = Cli::command()
        .mut_subcommand("sweep", |c| c.mut_arg("backend", |a| a.default_value(backend.clone())))
        .mut_subcommand("ops", |c| {
            c.mut_subcommand("check", |c| c.mut_arg("backend", |a| a.default_value(backend.clone())))
        })
        .get_matches();
    Ok(Cli::from_arg_matches(&matches)?)
}
