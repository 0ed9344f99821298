//! The `ops` commands that run Python: `dump-backend` (embedded `dump_backend.py`) and `trace`
//! (the tracer package in `tracer/`).
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};

use super::{Class, Registry};
use crate::output::{OutputFile, count};

const DUMP_SCRIPT: &str = include_str!("dump_backend.py");

#[derive(Debug, clap::Args)]
pub struct DumpArgs {
    /// Python interpreter of an environment with torch and the backend installed.
    #[arg(long)]
    python: PathBuf,
    /// Where to write the TSV.
    #[arg(long)]
    output: PathBuf,
    /// Dispatch key the backend registers under.
    #[arg(long, default_value = "PrivateUse1")]
    key: String,
    /// Backend name for the header (default: the output file's stem).
    #[arg(long)]
    name: Option<String>,
    /// Class written for backend kernels (default: <device>_kernel).
    #[arg(long)]
    kernel_class: Option<String>,
    /// Module to import before reading the dispatcher (e.g. torch_xla); repeatable.
    #[arg(long = "import", value_name = "MODULE")]
    imports: Vec<String>,
    /// Take the kernel set from this list (one op per line, `#` lines kept as provenance).
    #[arg(long, value_name = "FILE")]
    registered: Option<PathBuf>,
    /// What an op without a kernel does on this backend (shown as the reason it is missing).
    #[arg(long)]
    fallback: Option<String>,
    /// Extra provenance line for the header; repeatable.
    #[arg(long)]
    note: Vec<String>,
}

pub fn dump_backend(args: &DumpArgs) -> anyhow::Result<ExitCode> {
    // Claimed first: only an earlier backend table is replaced, never an input or another file.
    let table = OutputFile::claim(&args.output, "backend table", Registry::is_table)?;
    let mut script = tempfile::Builder::new().prefix("xla2tpu_dump_backend").suffix(".py").tempfile()?;
    script.write_all(DUMP_SCRIPT.as_bytes())?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => args.output.file_stem().and_then(|s| s.to_str()).unwrap_or("backend").to_string(),
    };
    let mut cmd = Command::new(&args.python);
    cmd.arg(script.path()).args(["--key", &args.key, "--name", &name]);
    if let Some(k) = &args.kernel_class {
        cmd.args(["--kernel-class", k]);
    }
    for module in &args.imports {
        cmd.args(["--import", module]);
    }
    if let Some(r) = &args.registered {
        cmd.arg("--registered").arg(r);
    }
    if let Some(f) = &args.fallback {
        cmd.args(["--fallback", f]);
    }
    for n in &args.note {
        cmd.args(["--note", n]);
    }
    let output = cmd.output().with_context(|| format!("running {}", args.python.display()))?;
    if !output.status.success() {
        bail!("dump_backend.py failed ({}):\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    }
    let tsv = String::from_utf8(output.stdout).context("dump_backend.py printed non-UTF-8")?;
    // Parse before writing so a broken dump never replaces a good file.
    let registry = Registry::parse(&name, &tsv, Default::default()).context("dump_backend.py output does not parse")?;
    table.write(tsv.as_bytes())?;
    let kernels = registry.ops().filter(|(_, e)| e.class == Class::Kernel).count();
    let ops = count(registry.ops().count(), "op");
    eprintln!("wrote {} ({ops}, {kernels} with a backend kernel)", args.output.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// Output corpus directory (default: <repo>/corpus/ops). With --configs/--hub: required; it
    /// receives profiles/<hash>.json and index.json.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Trace each distinct config in DIR/<owner>/<name>/config.json (model id = relative dir),
    /// depth reduced and every other field kept, instead of the model types.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["hub", "only"])]
    configs: Option<PathBuf>,
    /// Like --configs, with the config.json of the top --top models on the Hub (listing and
    /// files cached; HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE as for `sweep --hub`).
    #[arg(long, conflicts_with = "only", requires = "top")]
    hub: bool,
    /// With --hub: how many of the most-downloaded models.
    #[arg(long, value_name = "N", requires = "hub")]
    top: Option<usize>,
    /// With --hub: ignore the cached listing and configs.
    #[arg(long, requires = "hub")]
    refresh: bool,
    /// With --configs/--hub: run the traces as tasks on this Ray cluster (host:port).
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    #[arg(long)]
    jobs: Option<u32>,
    /// Only these ids or names (transformers/llama, bert).
    #[arg(long, num_args = 1..)]
    only: Vec<String>,
    /// Per-type timeout in seconds.
    #[arg(long)]
    timeout: Option<f64>,
    /// Re-trace types that already have a result.
    #[arg(long)]
    force: bool,
    /// Repository checkout holding tracer/ (default: found from the current directory upwards).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// Further arguments passed to the tracer verbatim (after `--`).
    #[arg(last = true)]
    extra: Vec<String>,
}

pub fn trace(args: &TraceArgs) -> anyhow::Result<ExitCode> {
    let repo = match &args.repo {
        Some(r) => r.clone(),
        None => find_repo()?,
    };
    let tracer = repo.join("tracer");
    let python = tracer.join(".venv/bin/python");
    if !python.is_file() {
        bail!("tracer venv not found at {}; create it with tracer/setup_venv.sh", python.display());
    }
    if args.configs.is_some() || args.hub {
        return trace_exact(args, &tracer, &python);
    }
    if args.ray.is_some() {
        bail!("--ray runs per-config traces: use it with --configs DIR or --hub --top N");
    }
    let out = args.out.clone().unwrap_or_else(|| repo.join("corpus/ops"));
    let out = std::path::absolute(&out)?;
    let mut cmd = Command::new(&python);
    cmd.current_dir(&tracer).args(["-m", "xla2tpu_tracer", "trace", "--out"]).arg(&out);
    if let Some(j) = args.jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    if let Some(t) = args.timeout {
        cmd.args(["--timeout", &t.to_string()]);
    }
    if !args.only.is_empty() {
        cmd.arg("--only").args(&args.only);
    }
    run_tracer(cmd, args, &python)?;
    eprintln!(
        "profiles written to {}; rebuild to embed them, or use them now with `xla2tpu ops --profiles {} check …`",
        out.display(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--configs DIR` / `--hub --top N`: the tracer's `exact` command over Hub config.json files.
fn trace_exact(args: &TraceArgs, tracer: &Path, python: &Path) -> anyhow::Result<ExitCode> {
    let Some(out) = &args.out else {
        bail!("--out OUT is required with --configs/--hub (per-config profiles are not the corpus)");
    };
    let out = std::path::absolute(out)?;
    // --hub: the configs go to a temp dir laid out as --configs expects (the cache keeps them).
    let fetched_dir;
    let configs = match &args.configs {
        Some(dir) => std::path::absolute(dir)?,
        None => {
            fetched_dir = tempfile::Builder::new().prefix("xla2tpu-configs").tempdir()?;
            fetch_hub_configs(args, fetched_dir.path())?;
            fetched_dir.path().to_path_buf()
        }
    };
    let mut cmd = Command::new(python);
    cmd.current_dir(tracer).args(["-m", "xla2tpu_tracer", "exact", "--configs"]).arg(&configs).arg("--out").arg(&out);
    // Ray workers on this machine import the package from here too.
    let pythonpath = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty());
    let mut paths = vec![tracer.to_path_buf()];
    paths.extend(pythonpath.iter().flat_map(std::env::split_paths));
    cmd.env("PYTHONPATH", std::env::join_paths(paths)?);
    if let Some(j) = args.jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    if let Some(t) = args.timeout {
        cmd.args(["--timeout", &t.to_string()]);
    }
    if let Some(r) = &args.ray {
        cmd.args(["--ray", r]);
    }
    run_tracer(cmd, args, python)?;
    eprintln!("per-config profiles in {}/profiles, model index in {}/index.json", out.display(), out.display());
    Ok(ExitCode::SUCCESS)
}

/// The arguments every tracer command shares (`--force`, what follows `--`), then the run.
fn run_tracer(mut cmd: Command, args: &TraceArgs, python: &Path) -> anyhow::Result<()> {
    if args.force {
        cmd.arg("--force");
    }
    cmd.args(&args.extra);
    let status = cmd.status().with_context(|| format!("running {}", python.display()))?;
    if !status.success() {
        bail!("tracer failed ({status})");
    }
    Ok(())
}

fn fetch_hub_configs(args: &TraceArgs, dir: &Path) -> anyhow::Result<()> {
    use crate::sweep::{configs, hub};
    let top = args.top.unwrap_or_default();
    let opts = hub::HubOptions::from_env(args.refresh)?;
    let (list, _) = hub::list_top(&opts, top, &indicatif::ProgressBar::hidden())?;
    let fetched = configs::fetch_configs(&opts, &list.models, dir, &indicatif::ProgressBar::hidden())?;
    for failure in &fetched.failures {
        eprintln!("warning: {failure}");
    }
    eprintln!(
        "{} of the top {}: {} ({} from the cache, {}), {} not transformers (skipped), {} failed",
        list.models.len(),
        count(top, "model"),
        count(fetched.written, "config"),
        fetched.cached,
        count(fetched.stats.requests, "request"),
        fetched.skipped_other_library,
        fetched.failures.len()
    );
    if fetched.written == 0 {
        bail!("no config.json could be fetched; nothing to trace");
    }
    Ok(())
}

/// The checkout containing `tracer/xla2tpu_tracer`: the current directory or an ancestor, else
/// the source tree this binary was built from.
fn find_repo() -> anyhow::Result<PathBuf> {
    let has_tracer = |d: &Path| d.join("tracer/xla2tpu_tracer").is_dir();
    let cwd = std::env::current_dir()?;
    if let Some(dir) = cwd.ancestors().find(|d| has_tracer(d)) {
        return Ok(dir.to_path_buf());
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR"));
    if has_tracer(built_from) {
        return Ok(built_from.to_path_buf());
    }
    bail!("no tracer/ found above {}; run from the xla2tpu checkout or pass --repo", cwd.display())
}
