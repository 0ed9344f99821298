//! The command-line arguments of `migrate`, `check` and `rule`, and what they share.

use std::path::PathBuf;

use crate::config::Overrides;
use crate::migrate::render::OutputFormat;
use crate::output::ColorChoice;

#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// Files or directories to process (`-` reads standard input) [default: .]
    pub paths: Vec<PathBuf>,
    /// Read standard input as this file: its name decides how it is read (`requirements.txt`,
    /// a notebook, …), which configuration applies and what findings show.
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,

    /// Only these rule codes or prefixes (e.g. `TPU1,TPU214`); replaces the configured selection.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub select: Option<Vec<String>>,
    /// Also these rule codes or prefixes.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub extend_select: Vec<String>,
    /// Skip these rule codes or prefixes.
    #[arg(long, value_delimiter = ',', value_name = "CODE", help_heading = "Rule selection")]
    pub ignore: Vec<String>,
    /// A directory of extra rule files (`*.yaml`), loaded after the built-in ones; repeatable,
    /// replaces the configured `rules`.
    #[arg(long, value_name = "DIR", help_heading = "Rule selection")]
    pub rules: Vec<PathBuf>,

    /// Skip files and directories matching these globs (replaces the configured `exclude`).
    #[arg(long, value_delimiter = ',', value_name = "GLOB", help_heading = "File selection")]
    pub exclude: Option<Vec<String>>,
    /// Also skip files and directories matching these globs.
    #[arg(long, value_delimiter = ',', value_name = "GLOB", help_heading = "File selection")]
    pub extend_exclude: Vec<String>,
    /// Apply the excludes to files named on the command line too (pre-commit names every file).
    #[arg(long, overrides_with = "no_force_exclude", help_heading = "File selection")]
    pub force_exclude: bool,
    #[arg(long, overrides_with = "force_exclude", hide = true)]
    pub no_force_exclude: bool,
    /// Also walk files that .gitignore, hidden directories or the default excludes would hide.
    #[arg(long, help_heading = "File selection")]
    pub no_ignore: bool,

    /// Use this configuration file (pyproject.toml or xla2tpu.toml) for every path.
    #[arg(long, value_name = "FILE", help_heading = "Configuration")]
    pub config: Option<PathBuf>,
    /// Ignore every configuration file.
    #[arg(long, conflicts_with = "config", help_heading = "Configuration")]
    pub isolated: bool,
    /// Judge PyTorch calls (TPU8xx) against this backend registry: a built-in name
    /// (`torchtpu-0.2.0`, `torch_xla-2.9`) or an `xla2tpu-backend/1` file [default: torchtpu-0.2.0]
    #[arg(long, value_name = "NAME|PATH", help_heading = "Configuration")]
    pub backend: Option<String>,
    /// Migrate to this TorchTPU release: rules that do not apply to it are off [default: 0.2.0]
    #[arg(long, value_name = "VERSION", help_heading = "Configuration")]
    pub target_version: Option<String>,

    /// Colour the output: auto colours a terminal, unless NO_COLOR is set; FORCE_COLOR or
    /// CLICOLOR_FORCE colour wherever it goes.
    #[arg(long, value_enum, default_value_t, help_heading = "Output")]
    pub color: ColorChoice,
    /// Print the findings (or the diff) and errors, nothing else: no warnings, no summary.
    #[arg(short, long, conflicts_with = "verbose", help_heading = "Output")]
    pub quiet: bool,
    /// Also name every file as it is done, and where the run's time went.
    #[arg(short, long, help_heading = "Output")]
    pub verbose: bool,
}

/// `--flag` / `--no-flag`: `None` when neither was given, so the configuration decides.
pub(super) fn flag(yes: bool, no: bool) -> Option<bool> {
    if yes {
        Some(true)
    } else if no {
        Some(false)
    } else {
        None
    }
}

impl CommonArgs {
    /// What the command line leaves to defaults, settled once: `.` when no path is given
    /// (standard input with `--stdin-filename`), and the colour of the standard streams.
    pub(super) fn settle(&mut self) {
        if self.paths.is_empty() {
            self.paths.push(PathBuf::from(if self.stdin_filename.is_some() { "-" } else { "." }));
        }
        self.color.apply();
    }

    pub(super) fn overrides(&self, unsafe_fixes: Option<bool>, output_format: Option<OutputFormat>) -> Overrides {
        Overrides {
            select: self.select.clone(),
            extend_select: self.extend_select.clone(),
            ignore: self.ignore.clone(),
            exclude: self.exclude.clone(),
            extend_exclude: self.extend_exclude.clone(),
            force_exclude: flag(self.force_exclude, self.no_force_exclude),
            rules: self.rules.clone(),
            unsafe_fixes,
            output_format,
            no_ignore: self.no_ignore,
            config: self.config.clone(),
            isolated: self.isolated,
            backend: self.backend.clone(),
            target_version: self.target_version.clone(),
            helper_module: None,
            outputs: Vec::new(),
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  xla2tpu migrate src/                         print the diff of the safe fixes
  xla2tpu migrate --write src/                 apply them
  xla2tpu migrate --write --unsafe-fixes src/  also the fixes whose behaviour may differ")]
pub struct MigrateArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Write the changes to the files instead of printing a diff.
    #[arg(long)]
    pub write: bool,
    /// Also apply fixes whose behaviour may differ (see each rule's explanation).
    #[arg(long, overrides_with = "no_unsafe_fixes")]
    pub unsafe_fixes: bool,
    #[arg(long, overrides_with = "unsafe_fixes", hide = true)]
    pub no_unsafe_fixes: bool,
    /// Exit 1 when a file was (or, without --write, would be) changed.
    #[arg(long)]
    pub exit_non_zero_on_fix: bool,
    /// Also write a migration report: what needs a person, by kind of work, then what changed
    /// and totals (Markdown for `.md`, JSON for `.json`). It replaces only an earlier report.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The module helpers go to when several files of a directory need them (default
    /// `_torchtpu`, written beside them); "" keeps a copy in each file.
    #[arg(long, value_name = "NAME")]
    pub helper_module: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 no findings, 1 findings (new ones with --baseline), 2 usage, configuration or I/O error.

Examples:
  xla2tpu check src/                                      findings with code frames
  xla2tpu check --output-format sarif -o xla2tpu.sarif    for GitHub code scanning
  xla2tpu check --fix src/                                apply the safe fixes, then report the rest
  xla2tpu check --write-baseline .xla2tpu-baseline.json   record today's findings
  xla2tpu check --baseline .xla2tpu-baseline.json         then fail only on new ones
  xla2tpu check --show-settings src/train.py              the configuration that applies"
)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// How to print findings [default: full, or `output-format` from the configuration].
    #[arg(long, value_enum, help_heading = "Output")]
    pub output_format: Option<OutputFormat>,
    /// Write the findings (or statistics) to this file instead of standard output. It replaces
    /// only an earlier report and is never checked itself.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    pub output_file: Option<PathBuf>,
    /// Print the number of findings per rule instead of the findings.
    #[arg(long, help_heading = "Output")]
    pub statistics: bool,
    /// Print the diff `migrate` would apply instead of the findings; exit 1 if there is one.
    #[arg(long, conflicts_with_all = ["statistics", "add_noqa", "baseline", "write_baseline"], help_heading = "Output")]
    pub diff: bool,
    /// Apply the safe fixes first, as `xla2tpu migrate --write` does, then report what is left.
    #[arg(long, conflicts_with_all = ["diff", "add_noqa", "write_baseline"], help_heading = "Output")]
    pub fix: bool,
    /// With --diff or --fix: include the unsafe fixes.
    #[arg(long, overrides_with = "no_unsafe_fixes", help_heading = "Output")]
    pub unsafe_fixes: bool,
    #[arg(long, overrides_with = "unsafe_fixes", hide = true)]
    pub no_unsafe_fixes: bool,
    /// Exit 0 even when there are findings.
    #[arg(long, help_heading = "Output")]
    pub exit_zero: bool,

    /// Fail only on findings that are not in this baseline file.
    #[arg(long, value_name = "FILE", help_heading = "Gating")]
    pub baseline: Option<PathBuf>,
    /// Record today's findings in this baseline file, and exit 0.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["baseline", "add_noqa"], help_heading = "Gating")]
    pub write_baseline: Option<PathBuf>,
    /// Add `# noqa: CODE` comments on the lines of today's findings, and exit 0.
    #[arg(long, help_heading = "Gating")]
    pub add_noqa: bool,

    /// Print the settings that apply to the (first) path, and exit.
    #[arg(long, help_heading = "Configuration")]
    pub show_settings: bool,
    /// Print the files that would be checked, and exit.
    #[arg(long, help_heading = "Configuration")]
    pub show_files: bool,
}

#[derive(Debug, clap::Args)]
pub struct RuleArgs {
    /// A rule code (e.g. TPU110); omit to list every rule.
    pub code: Option<String>,
    /// Extra rule files to load, as for migrate/check [default: the configured `rules`].
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}
