//! Facts about a whole run that a per-file check may need: whether any Python file of the
//! run creates a process group, which of its accelerate configs launch torch_xla, and which of
//! its scripts are SPMD programs (one process for every chip, started with plain `python`). A
//! collective in library code (a framework's strategy, a project's `engine.py`) is only
//! converted where a group can exist on its path, and `accelerate launch --config_file F` only
//! where F is known; the file alone cannot tell, the project can. Gathered once, on the first
//! file that asks, so a run that never needs it (most `check` runs) never pays for a second walk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

/// The call that makes a torch_xla program SPMD: one process drives every chip.
pub const USE_SPMD: &str = "torch_xla.runtime.use_spmd";

/// The definition TPU216's fix puts in a migrated SPMD program (`rules/helpers.yaml`).
const SPMD_HELPER: &str = "\ndef torchtpu_spmd_processes(";

/// Calls that create the process group (a converted launcher's workers create it too, when the
/// worker is the file's own: see `Inventory::creates_group`).
pub const GROUP_CREATORS: &[&str] = &[LAUNCHERS[0], LAUNCHERS[1], INIT_PROCESS_GROUP];

/// torch_xla's launchers: their converted workers create the group.
pub const LAUNCHERS: [&str; 2] = ["torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch"];

pub const INIT_PROCESS_GROUP: &str = "torch.distributed.init_process_group";

/// Hands each of the run's files to the visitor it is given.
type Walk = Box<dyn Fn(&mut dyn FnMut(PathBuf)) + Send + Sync>;

pub struct RunFacts {
    /// The run's files, walked when first needed.
    files: Walk,
    creates_group: OnceLock<bool>,
    accelerate_xla_configs: OnceLock<Vec<PathBuf>>,
    spmd_programs: OnceLock<Vec<PathBuf>>,
}

impl std::fmt::Debug for RunFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunFacts").field("creates_group", &self.creates_group.get()).finish_non_exhaustive()
    }
}

impl RunFacts {
    /// Facts about the files `list` returns.
    pub fn new(list: impl Fn() -> Vec<PathBuf> + Send + Sync + 'static) -> RunFacts {
        RunFacts::walking(move |visit| list().into_iter().for_each(visit))
    }

    /// Facts about the files `walk` hands to its visitor, as it finds them.
    pub fn walking(walk: impl Fn(&mut dyn FnMut(PathBuf)) + Send + Sync + 'static) -> RunFacts {
        RunFacts {
            files: Box::new(walk),
            creates_group: OnceLock::new(),
            accelerate_xla_configs: OnceLock::new(),
            spmd_programs: OnceLock::new(),
        }
    }

    /// What `hit` finds in the run's files, read in parallel while the walk goes on (the list
    /// of a large tree's paths is never held: it was most of what a run's peak memory grew by
    /// with the tree); after the first find only, if `first_only`. In no particular order.
    fn scan<R: Send>(&self, hit: impl Fn(&Path) -> Option<R> + Sync, first_only: bool) -> Vec<R> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<PathBuf>(1024);
        let found = Mutex::new(Vec::new());
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // Once `done`, the rest of the walk is not read.
                (self.files)(&mut |p| {
                    if !done.load(Ordering::Relaxed) {
                        let _ = tx.send(p);
                    }
                });
                drop(tx);
            });
            rx.into_iter().par_bridge().for_each(|p| {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                // A file that makes a probe panic tells nothing; its own worker reports it.
                if let Ok(Some(r)) = crate::isolate::catch(|| hit(&p)) {
                    found.lock().expect("not poisoned").push(r);
                    done.fetch_or(first_only, Ordering::Relaxed);
                }
            });
        });
        found.into_inner().expect("not poisoned")
    }

    /// The run's accelerate configs (YAML or JSON) with `distributed_type: XLA`. `migrate --write`
    /// asks before any file is written: the migration turns them into `MULTI_GPU`.
    pub fn accelerate_xla_configs(&self) -> &[PathBuf] {
        self.accelerate_xla_configs.get_or_init(|| {
            let config = |p: &Path| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
            let launches = |p: &Path| {
                crate::source::read_text(p)
                    .is_ok_and(|text| crate::migrate::project::launch::yaml::launches_torch_xla(&text))
            };
            self.scan(|p| (config(p) && launches(p)).then(|| p.to_path_buf()), false)
        })
    }

    /// Whether `spelled`, a config path as a launch command names it (`configs/tpu.yaml`, relative
    /// to a directory the file does not say), is one of [`Self::accelerate_xla_configs`].
    pub fn is_accelerate_xla_config(&self, spelled: &str) -> bool {
        named_in(spelled, self.accelerate_xla_configs())
    }

    /// The run's Python files that call `xr.use_spmd()`, or define the helper TPU216 turns it
    /// into (so that what a migration left for a person stays reported). `migrate --write` asks
    /// before any file is written.
    pub fn spmd_programs(&self) -> &[PathBuf] {
        self.spmd_programs.get_or_init(|| {
            let spmd = |text: &str| text.contains(SPMD_HELPER) || text_calls(text, USE_SPMD);
            self.scan(
                |p| {
                    (is_python(p) && crate::source::read_text(p).is_ok_and(|text| spmd(&text))).then(|| p.to_path_buf())
                },
                false,
            )
        })
    }

    /// Whether `spelled`, a script as a launch command names it, is one of [`Self::spmd_programs`].
    pub fn is_spmd_program(&self, spelled: &str) -> bool {
        named_in(spelled, self.spmd_programs())
    }

    /// Whether a Python file of the run creates a process group.
    pub fn creates_process_group(&self) -> bool {
        *self.creates_group.get_or_init(|| {
            let creates = |p: &Path| is_python(p) && crate::source::read_text(p).is_ok_and(|t| text_creates_group(&t));
            !self.scan(|p| creates(p).then_some(()), true).is_empty()
        })
    }
}

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

/// Whether `spelled`, a path as a command names it (relative to a directory it does not say),
/// is one of `files`.
fn named_in(spelled: &str, files: &[PathBuf]) -> bool {
    let spelled = spelled.trim_matches(['"', '\'']).trim_start_matches("./");
    if spelled.is_empty() || spelled.contains(['$', '~', '*']) {
        return false;
    }
    let named = std::path::Path::new(spelled);
    files.iter().any(|p| p.ends_with(named))
}

/// Whether this Python text calls `qualified` (resolved through its imports).
fn text_calls(text: &str, qualified: &str) -> bool {
    let last = qualified.rsplit('.').next().unwrap_or(qualified);
    text.contains(last)
        && ruff_python_parser::parse_module(text)
            .is_ok_and(|parsed| crate::migrate::checker::calls(parsed.syntax(), qualified))
}

/// Whether this Python text calls one of [`GROUP_CREATORS`] (resolved through its imports).
pub fn text_creates_group(text: &str) -> bool {
    // Each creator's last name must appear in the bytes before the file is worth parsing.
    if !GROUP_CREATORS.iter().filter_map(|c| c.rsplit('.').next()).any(|w| text.contains(w)) {
        return false;
    }
    ruff_python_parser::parse_module(text)
        .is_ok_and(|parsed| crate::migrate::checker::creates_process_group(parsed.syntax()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_creators_are_resolved_through_imports() {
        assert!(text_creates_group("import torch.distributed as d\nd.init_process_group('gloo')\n"));
        let spawn = "import torch_xla.distributed.xla_multiprocessing as xmp\n";
        assert!(text_creates_group(&format!("{spawn}def f(i):\n    pass\nxmp.spawn(f)\n")));
        // A launcher of a worker from elsewhere (a framework's) is not converted: it creates nothing.
        assert!(!text_creates_group(&format!("{spawn}def launch(f):\n    xmp.spawn(f)\n")));
        assert!(!text_creates_group(&format!(
            "{spawn}class L:\n    def w(self, i):\n        pass\n    def go(self):\n        xmp.spawn(self.w)\n"
        )));
        assert!(!text_creates_group("def spawn():\n    pass\nspawn()\n"));
        assert!(!text_creates_group("x = 1\n"));
    }

    #[test]
    fn a_group_created_by_another_file_of_the_run_counts() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("engine.py");
        let main = dir.path().join("train.py");
        std::fs::write(&lib, "import torch_xla.core.xla_model as xm\n").unwrap();
        std::fs::write(&main, "import torch_xla\ndef worker():\n    pass\ntorch_xla.launch(worker)\n").unwrap();
        let only_lib = RunFacts::new({
            let lib = lib.clone();
            move || vec![lib.clone()]
        });
        assert!(!only_lib.creates_process_group());
        let both = RunFacts::new(move || vec![lib.clone(), main.clone()]);
        assert!(both.creates_process_group());
    }

    #[test]
    fn spmd_programs_are_the_scripts_calling_use_spmd_or_migrated_from_one() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let files = vec![
            write("train.py", "from torch_xla import runtime as xr\nxr.use_spmd()\n"),
            write("migrated.py", "import os\n\ndef torchtpu_spmd_processes():\n    pass\n"),
            write("eval.py", "import torch_xla.runtime as xr\nprint(xr.world_size())\n"),
            write("notes.py", "# we used to call use_spmd() here\n"),
        ];
        let run = RunFacts::new(move || files.clone());
        assert!(run.is_spmd_program("train.py") && run.is_spmd_program("./train.py"));
        assert!(run.is_spmd_program("\"migrated.py\""));
        assert!(!run.is_spmd_program("eval.py") && !run.is_spmd_program("notes.py"));
        assert!(!run.is_spmd_program("$SCRIPT") && !run.is_spmd_program("other/train2.py"));
    }
}
