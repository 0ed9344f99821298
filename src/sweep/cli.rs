//! `xla2tpu sweep`: argument handling around [`crate::sweep::sweep`].
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::exact::Exact;
use super::report::{self, Format};
use super::{Corpus, Options, hub, models};
use crate::ops::execution::Executions;
use crate::ops::{DEFAULT_BACKEND, Profiles, Registry};
use crate::output::OutputFile;

/// Compatibility report over the most-downloaded Hugging Face models: which pass TorchTPU's
/// operator registry, which fail and on which ops, and the order to implement them in.
///
/// Without --models or --hub the embedded snapshot is used (offline; llmfit-core 1.1.18,
/// captured about 2026-10-12). Exit codes: 0 ok, 1 pass rate below --fail-under, 2 error.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// How many models, by downloads.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub top: u64,

    /// Model list: Hub API JSON (array or JSON lines) or CSV (model_id,downloads[,model_type,library_name,pipeline_tag]).
    #[arg(long, value_name = "FILE", conflicts_with = "hub")]
    pub models: Option<PathBuf>,

    /// List live from the Hub (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE honoured; pages cached).
    #[arg(long)]
    pub hub: bool,

    /// With --hub: ignore the page cache and fetch again.
    #[arg(long, requires = "hub")]
    pub refresh: bool,

    /// Backend registry: a built-in name or a backend TSV file.
    #[arg(long, default_value = DEFAULT_BACKEND, value_name = "NAME|FILE")]
    pub backend: String,

    /// Second backend to compare against, e.g. torch_xla-2.9.
    #[arg(long, value_name = "NAME|FILE")]
    pub compare: Option<String>,

    /// Operator profiles directory (default: the profiles built into the binary).
    #[arg(long, value_name = "DIR")]
    pub profiles: Option<PathBuf>,

    /// bf16-autocast profiles directory (default: the ones built into the binary; `--no-bf16` skips them).
    #[arg(long, value_name = "DIR", conflicts_with = "no_bf16")]
    pub bf16_profiles: Option<PathBuf>,

    /// Judge float32 only.
    #[arg(long)]
    pub no_bf16: bool,

    /// Per-config profiles from `xla2tpu ops trace --configs/--hub --out DIR`: models traced from
    /// their own config.json are judged by those instead of their type's profile.
    #[arg(long, value_name = "DIR")]
    pub exact: Option<PathBuf>,

    /// Execution profiles from `python -m xla2tpu_tracer execute --out DIR` instead of the ones
    /// built into the binary (corpus/exec): each model's profiled types run on the emulated
    /// TorchTPU 0.2.0, the second verdict every report shows beside op coverage.
    #[arg(long, value_name = "DIR", conflicts_with = "no_executions")]
    pub executions: Option<PathBuf>,

    /// Op coverage only: leave out the runs on the emulated TorchTPU.
    #[arg(long)]
    pub no_executions: bool,

    /// Report format (`--format` is the same option).
    #[arg(long = "output-format", alias = "format", value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the report here (whole or not at all) instead of stdout, which gets a one-line
    /// summary. It replaces only an earlier sweep report (`--output` is the same option).
    #[arg(long = "output-file", short, alias = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit 1 when the pass rate by model count is below PCT (for CI).
    #[arg(long, value_name = "PCT")]
    pub fail_under: Option<f64>,

    /// Steps of the greedy fix plan.
    #[arg(long, default_value_t = 10, value_name = "K")]
    pub plan_steps: usize,
}

pub fn run(args: SweepArgs) -> Result<ExitCode> {
    // Claimed before the sweep: a refused file costs nothing.
    let output = args.output.as_deref().map(|p| OutputFile::claim(p, "sweep report", report::is_report)).transpose()?;
    let backend = Registry::load(&args.backend)?;
    let compare = args.compare.as_deref().map(Registry::load).transpose()?;
    let owned;
    let profiles = match &args.profiles {
        Some(dir) => {
            owned = Profiles::from_dir(dir).with_context(|| format!("loading profiles from {}", dir.display()))?;
            &owned
        }
        None => Profiles::embedded(),
    };
    if let Some(first) = profiles.load_errors().first() {
        eprintln!("warning: {} profile files did not load (first: {first})", profiles.load_errors().len());
    }
    let bf16_owned;
    let bf16 = match &args.bf16_profiles {
        Some(dir) => {
            bf16_owned =
                Profiles::from_dir(dir).with_context(|| format!("loading bf16 profiles from {}", dir.display()))?;
            Some(&bf16_owned)
        }
        None if args.no_bf16 => None,
        None => Profiles::embedded_bf16(),
    };
    let exact = args.exact.as_deref().map(Exact::load).transpose()?;
    let exec_owned;
    let executions = match &args.executions {
        Some(dir) => {
            exec_owned = Executions::from_dir(dir)
                .with_context(|| format!("loading execution profiles from {}", dir.display()))?;
            Some(&exec_owned)
        }
        None if args.no_executions => None,
        None => Some(Executions::embedded()),
    };
    if let Some(first) = executions.and_then(|e| e.load_errors().first()) {
        eprintln!("warning: some execution profiles did not load (first: {first})");
    }
    let corpus = Corpus { f32: profiles, bf16, exact: exact.as_ref(), executions };
    let top = args.top as usize;
    let list = if args.hub {
        let opts = hub::HubOptions::from_env(args.refresh)?;
        hub::list_top(&opts, top, &progress_bar())?.0
    } else if let Some(path) = &args.models {
        models::load_file(path)?
    } else {
        models::embedded()
    };
    let list = list.top(top);
    let report = super::sweep(&list, corpus, &backend, compare.as_ref(), &Options { plan_steps: args.plan_steps });

    let mut stdout = std::io::stdout();
    match &output {
        Some(file) => {
            file.write(report::render(&report, args.format).as_bytes())?;
            // The report is in the file; the terminal gets the headline and where to look.
            writeln!(stdout, "{}", report::text::summary_line(&report))?;
            eprintln!("wrote {}", file.path.display());
        }
        None => stdout.write_all(report::render(&report, args.format).as_bytes())?,
    }

    if let Some(min) = args.fail_under {
        let rate = report.totals.pass_rate.by_count;
        if rate < min {
            eprintln!("pass rate {rate:.1}% by count is below --fail-under {min}%");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A bar on stderr when it is a terminal; hidden otherwise (CI logs, pipes).
fn progress_bar() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} listing models {pos}/{len} {msg}") {
        bar.set_style(style);
    }
    bar
}
