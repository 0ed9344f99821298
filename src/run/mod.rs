//! `xla2tpu run -- python train.py`: run a program on the CPU emulation of
//! TorchTPU that ships inside the binary, then say whether it would run on
//! TorchTPU 0.2.0 (and if not, where it first fails) or that it finished,
//! with the ops it dispatched and the host syncs it made.
//!
//! The emulator is loaded the way the real wheel is: an entry point in the
//! `torch.backends` group, found on `PYTHONPATH`, so every process of the run
//! (spawned workers, torchrun children) gets it at `import torch`.

pub mod advice;
pub mod advise;
pub mod emulator;
pub mod process;
pub mod python;
pub mod report;
pub mod site;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::Context;
use report::{Incompatibility, RunReport};
use site::{Site, site, site_fn};

/// Exit codes of `xla2tpu run`.
pub mod exit {
    /// The program finished and nothing it did fails on TorchTPU 0.2.0.
    pub const OK: u8 = 0;
    /// The program hit a TorchTPU 0.2.0 incompatibility (it would fail there).
    pub const INCOMPATIBLE: u8 = 1;
    /// xla2tpu could not run the program (usage, no Python, torch missing or too old).
    pub const ERROR: u8 = 2;
    /// The program failed for another reason; its own output says why.
    pub const PROGRAM_FAILED: u8 = 3;
    /// The program ran longer than `--timeout` and was stopped (as `timeout(1)` exits).
    pub const TIMED_OUT: u8 = 124;
}

/// What a CPU cannot tell about a run, said in `--help` and after every
/// finished run (the emulator adds `not_checked` warnings for what it saw the
/// program rely on). A macro, so that `AFTER_HELP` can be built with `concat!`.
macro_rules! not_checked {
    () => {
        "bf16 matmul numerics, HBM capacity, XLA compilation, dtypes a TorchTPU kernel refuses, speed"
    };
}

const AFTER_HELP: &str = concat!(
    "\
Exit codes:
  0      the program finished and nothing it did fails on TorchTPU 0.2.0
  1      the program hit a TorchTPU 0.2.0 incompatibility (reported with file and line)
  2      xla2tpu could not run it (no Python, torch missing or older than 2.11, bad arguments)
  3      the program failed for another reason (see its own output)
  124    the program ran longer than --timeout; its process group was stopped
  128+N  xla2tpu run was stopped by signal N (SIGTERM: 143), which went to the program's
         process group first

The emulator models TorchTPU's API surface, operator registry, device rules (a tensor or module
left on the CPU fails as on the chip), launch environment, process groups (on gloo) and autocast
op list. Each finished run says what it cannot check: ",
    not_checked!(),
    "."
);

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct RunArgs {
    /// Emulated TorchTPU chips on this host; TorchTPU runs one process per chip.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub nproc: u32,
    /// Python whose torch (2.11–2.15) hosts the emulator [default: the command's own interpreter]
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
    /// Also write everything the emulator saw, merged over processes, as JSON (with `--advise`,
    /// the ranked advice too).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// After the run, say what would make it slow on TorchTPU, per training step: host syncs,
    /// host-chip copies, dynamic shapes, ops dispatched alone, for-loop optimizers, graph breaks
    /// and recompiles, ranked by estimated cost, each with what to change.
    #[arg(long)]
    pub advise: bool,
    /// With --advise: a step is one call of this function (name or qualified name) instead of
    /// the work between two optimizer steps.
    #[arg(long, value_name = "FUNCTION", requires = "advise")]
    pub step_marker: Option<String>,
    /// With --advise: also write the advice as a self-contained HTML page with a per-step chart.
    #[arg(long, value_name = "FILE", requires = "advise")]
    pub advise_html: Option<PathBuf>,
    /// Stop the program (its whole process group: SIGTERM, then SIGKILL after 10 s) once it has
    /// run this many seconds; exit code 124.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Start each line a rank prints with `[rankN]: ` (torchrun's `--tee` habit). With it, or
    /// with --nproc 2 or more, each process writes its lines whole, never glued to another's.
    #[arg(long)]
    pub rank_prefix: bool,
    /// The program and its arguments, after `--`: `python train.py ARGS`, `torchrun …`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Claimed before the program runs: a refused file (not an earlier report) costs nothing.
    use crate::output::OutputFile;
    let report_file =
        args.report.as_deref().map(|p| OutputFile::claim(p, "run report", report::is_report)).transpose()?;
    let page_file =
        args.advise_html.as_deref().map(|p| OutputFile::claim(p, "advice page", advise::html::is_page)).transpose()?;
    let program = args.command[0].to_string_lossy().to_string();
    let python = match &args.python {
        Some(p) => p.clone(),
        None => python::interpreter_of(&program)
            .or_else(|| python::which("python3"))
            .with_context(|| format!("cannot tell which Python `{program}` runs; pass --python"))?,
    };
    let (_, _, torch) = python::torch_version(&python)?;
    let installed = emulator::install(&crate::cache::root()?)?;
    let events = tempfile::Builder::new().prefix("xla2tpu-run-").tempdir()?;
    let state = events.path().join("state");
    std::fs::create_dir(&state)?;

    let mut pythonpath = vec![installed.pythonpath.clone()];
    pythonpath.extend(std::env::var_os("PYTHONPATH").iter().flat_map(std::env::split_paths));
    let mut command = Command::new(&args.command[0]);
    if args.advise {
        command.env("XLA2TPU_EMULATOR_ADVISE", "1");
    }
    if let Some(marker) = &args.step_marker {
        command.env("XLA2TPU_EMULATOR_STEP_MARKER", marker);
    }
    if args.nproc > 1 || args.rank_prefix {
        // Each process writes whole lines in one write(2): two ranks' lines never interleave.
        command.env("XLA2TPU_EMULATOR_WHOLE_LINES", "1");
    }
    if args.rank_prefix {
        command.env("XLA2TPU_EMULATOR_RANK_PREFIX", "1");
    }
    if let Some(t) = args.timeout
        && !(t.is_finite() && t > 0.0)
    {
        anyhow::bail!("--timeout {t}: give a number of seconds above 0");
    }
    command
        .args(&args.command[1..])
        .env("PYTHONPATH", std::env::join_paths(pythonpath)?)
        .env("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")
        .env("XLA2TPU_EMULATOR_CHIPS", args.nproc.to_string())
        .env("XLA2TPU_EMULATOR_REGISTRY", &installed.registry)
        .env("XLA2TPU_EMULATOR_AUTOCAST", &installed.autocast)
        .env("XLA2TPU_EMULATOR_REPORT", events.path())
        .env("XLA2TPU_EMULATOR_STATE", &state);
    let timeout = args.timeout.map(std::time::Duration::from_secs_f64);
    let status = match process::run_group(command, timeout).with_context(|| format!("cannot start `{program}`"))? {
        process::Ended::Exited(status) => status,
        process::Ended::TimedOut => {
            writeln!(
                anstream::stderr(),
                "xla2tpu run: the program ran longer than --timeout {}s; its process group was stopped",
                args.timeout.unwrap_or_default()
            )?;
            return Ok(ExitCode::from(exit::TIMED_OUT));
        }
        process::Ended::Signalled(signal) => {
            writeln!(
                anstream::stderr(),
                "xla2tpu run: stopped by signal {signal}; the program's process group was stopped with it"
            )?;
            // The temporary directory is removed on the way out, as after any run.
            return Ok(ExitCode::from(128 + signal as u8));
        }
    };

    let report = RunReport::read(events.path());
    let analysis = report.advice().map(|(_, a)| a.analyse());
    if let Some(file) = &report_file {
        let mut json = serde_json::to_value(&report)?;
        if let (Some(a), Some(map)) = (&analysis, json.as_object_mut()) {
            map.insert("advice".into(), serde_json::to_value(a)?);
        }
        file.write(serde_json::to_string_pretty(&json)?.as_bytes())?;
    }
    let mut err = anstream::stderr();
    let code = if let Some(first) = report.first_incompatibility() {
        render_incompatibility(&mut err, first, &report)?;
        exit::INCOMPATIBLE
    } else if !status.success() {
        let how = match status.code() {
            Some(c) => format!("exited with status {c}"),
            None => "was killed by a signal".to_string(),
        };
        writeln!(err, "xla2tpu run: the program {how}; no TorchTPU incompatibility was seen (see its output above)")?;
        for p in &report.processes {
            if let Some(e) = &p.exception {
                writeln!(err, "  {}: {}: {}", site(&e.at), e.kind, first_line(&e.message))?;
            }
        }
        exit::PROGRAM_FAILED
    } else {
        render_finished(&mut err, &report, &torch, args.nproc)?;
        exit::OK
    };
    // Experimental-API notices are TorchTPU's own (it warns at the call); the rest deserve a look.
    for w in report.warnings.iter().filter(|w| w.kind != "experimental_api").take(5) {
        writeln!(err, "  warning: {}: {}", site(&w.at), first_line(&w.message))?;
    }
    for p in &report.problems {
        writeln!(err, "  note: unreadable emulator event: {p}")?;
    }
    if args.advise {
        match (&analysis, report.advice()) {
            (Some(a), Some((p, raw))) => {
                let who = p.summary.as_ref().and_then(|s| s.rank).map(|r| format!("rank {r}"));
                advise::render(&mut err, a, who.as_deref(), args.step_marker.is_some())?;
                if let Some(file) = &page_file {
                    // `train.py`, not the interpreter's path before it.
                    let words: Vec<String> = args.command.iter().map(|c| c.to_string_lossy().to_string()).collect();
                    let program = words.iter().find(|w| w.ends_with(".py")).cloned().unwrap_or_else(|| words.join(" "));
                    let page = advise::html::render(raw, a, &program);
                    file.write(page.as_bytes())?;
                    writeln!(err, "  advice page: {}", file.path.display())?;
                }
            }
            _ => writeln!(err, "xla2tpu run --advise: no process used the emulated chip; nothing to advise on")?,
        }
    }
    Ok(ExitCode::from(code))
}

fn render_incompatibility(out: &mut impl Write, first: &Incompatibility, report: &RunReport) -> anyhow::Result<()> {
    let what = match (&first.op, first.kind.as_str()) {
        (Some(op), "missing_op") => format!("{op} has no TorchTPU 0.2.0 kernel"),
        (op, "device_mismatch") => {
            let what = match (first.argument.as_deref(), op.as_deref()) {
                (Some(arg), Some(op)) => format!("argument `{arg}` of {op} is not on the tpu device"),
                (Some(arg), None) => format!("argument `{arg}` is not on the tpu device"),
                (None, Some(op)) => format!("{op} got tensors on two devices"),
                (None, None) => "an op got tensors on two devices".into(),
            };
            format!("device mix-up: {what} (a tensor or module left on the CPU; not a missing TorchTPU op)")
        }
        (_, "strided_view") => {
            "`.view()` of a tensor whose strides cannot express it (torch_xla tensors had none)".into()
        }
        _ => first.kind.replace('_', " "),
    };
    writeln!(out, "xla2tpu run: TorchTPU 0.2.0 incompatibility: {what}")?;
    writeln!(out, "  --> {}", site_fn(&first.at, first.function.as_deref()))?;
    for frame in first.stack.iter().skip(1).take(4) {
        writeln!(
            out,
            "      called from {}",
            site_fn(&Site { file: Some(frame.file.clone()), line: Some(frame.line) }, Some(&frame.function))
        )?;
    }
    writeln!(out, "  = on TorchTPU 0.2.0 this raises: {}", first_line(&first.message))?;
    if let Some(help) = help_for(first) {
        writeln!(out, "  = help: {help}")?;
    }
    let more = report.incompatibilities.len() - 1;
    if more > 0 {
        writeln!(out, "  ({more} more after it; `--report FILE` lists them all)")?;
    }
    Ok(())
}

fn help_for(i: &Incompatibility) -> Option<String> {
    Some(match i.kind.as_str() {
        "missing_op" => format!(
            "`xla2tpu ops show {}` says what TorchTPU has instead; compute it on the CPU deliberately (`.cpu()`), or use a supported op",
            i.op.as_deref().unwrap_or("OP")
        ),
        "torch_xla_import" | "optimum_tpu_import" => {
            "torch_xla and optimum-tpu do not exist on TorchTPU: `xla2tpu migrate --unsafe-fixes FILE` converts them".into()
        }
        "device_mismatch" => "move the CPU-side tensor or module to the chip before the op (`.to(\"tpu\")`, `model.to(\"tpu\")`), or create it there (`device=\"tpu\"`); only 0-dim CPU tensors pass as scalars, and index tensors in `t[idx]`".into(),
        "set_device" => "each process sees its own chip as `tpu:0`: do not pick a device by rank or LOCAL_RANK".into(),
        "strided_view" => "torch_xla tensors had no strides, so `.view()` of a slice (`x[:, :-1]`) or a transpose ran there; TorchTPU tensors keep their parent's strides, as on CUDA: write `.reshape(...)` (a copy only when no view can do) or `.contiguous().view(...)`; `xla2tpu migrate` converts the ones it can see".into(),
        "launch_env" => "call `torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=N)` in the launcher before spawning, or `eval $(python -m torch.tpu.distributed | sed 's/^/export /')` before torchrun".into(),
        "device_busy" => "another process holds this chip (often a launcher that touched the TPU before spawning): keep the parent off the device, or emulate more chips with --nproc".into(),
        _ => return None,
    })
}

fn render_finished(out: &mut impl Write, report: &RunReport, torch: &str, chips: u32) -> anyhow::Result<()> {
    let loaded = report.processes.len();
    if loaded == 0 {
        writeln!(out, "xla2tpu run: the program finished without importing torch; nothing ran on the emulator")?;
        return Ok(());
    }
    // What a person counts: the ranks of the job. Launchers (torchrun's agent, a spawning parent)
    // import torch too, and are only mentioned.
    let ranks = report.ranks();
    let plural = |n: usize, one: &str, many: &str| if n == 1 { one.to_string() } else { many.to_string() };
    let who = match (ranks.first(), ranks.last()) {
        (Some((lo, world)), Some((hi, _))) => {
            let world = world.map(|w| format!(" of {w}")).unwrap_or_default();
            let ranks_text = if lo == hi { format!("rank {lo}{world}") } else { format!("ranks {lo}–{hi}{world}") };
            match loaded - ranks.len() {
                0 => ranks_text,
                others => format!(
                    "{ranks_text} (+{others} {} without a rank)",
                    plural(others, "helper process", "helper processes")
                ),
            }
        }
        _ => format!("{loaded} {}", plural(loaded, "process", "processes")),
    };
    writeln!(
        out,
        "xla2tpu run: finished on {chips} emulated TorchTPU 0.2.0 chip{} (torch {torch}, CPU): {who}",
        if chips == 1 { "" } else { "s" },
    )?;
    let ops = report.ops();
    let dispatched: u64 = ops.iter().map(|(_, n)| n).sum();
    let top: Vec<String> = ops.iter().take(5).map(|(op, n)| format!("{op} ×{n}")).collect();
    writeln!(
        out,
        "  ops: {dispatched} dispatched to the chips ({} distinct){}",
        ops.len(),
        if top.is_empty() { String::new() } else { format!("; most frequent {}", top.join(", ")) }
    )?;
    let syncs = report.host_syncs();
    let total: u64 = syncs.iter().map(|h| h.count).sum();
    let sites: Vec<String> =
        syncs.iter().take(5).map(|h| format!("{} at {} ×{}", h.kind, site(&h.at), h.count)).collect();
    writeln!(
        out,
        "  host syncs: {total}{}",
        if sites.is_empty() { String::new() } else { format!(" ({})", sites.join(", ")) }
    )?;
    writeln!(out, concat!("  not checked on a CPU: ", not_checked!()))?;
    Ok(())
}

/// `train.py:42`, relative to the working directory when inside it.
/// `file:line`, relative to the working directory when under it.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
