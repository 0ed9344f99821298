//! Facts about a whole run that a per-file check may need: whether any Python file of the
//! run creates a process group, which of its accelerate configs launch torch_xla, and which of
//! its scripts are SPMD programs (one process for every chip, started with plain `python`). A
//! collective in library code (a framework's strategy, a project's `engine.py`) is only
//! converted where a group can exist on its path, and `accelerate launch --config_file F` only
//! where F is known; the file alone cannot tell, the project can. Gathered once, on the first
//! file that asks, so a run that never needs it (most `check` runs) never pays for a second walk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use crate::migrate::target::Kind;

/// The call that makes a torch_xla program SPMD: one process drives every chip.
pub const USE_SPMD: &str = "torch_xla.runtime.use_spmd";

/// The helper TPU216's fix turns `use_spmd()` into (`rules/helpers.yaml`), and its definition.
pub const SPMD_HELPER_NAME: &str = "torchtpu_spmd_processes";
const SPMD_HELPER: &str = "\ndef torchtpu_spmd_processes(";

/// Calls that create the process group (a converted launcher's workers create it too, when the
/// worker is the file's own: see `Inventory::creates_group`).
pub const GROUP_CREATORS: &[&str] = &[LAUNCHERS[0], LAUNCHERS[1], INIT_PROCESS_GROUP];

/// torch_xla's launchers: their converted workers create the group.
pub const LAUNCHERS: [&str; 2] = ["torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch"];

pub const INIT_PROCESS_GROUP: &str = "torch.distributed.init_process_group";

/// Hands each of the run's files to the visitor it is given.
type Walk = Box<dyn Fn(&mut dyn FnMut(PathBuf)) + Send + Sync>;

/// What the facts need read from one file's text. The layers that know how answer it (the
/// Python checker's queries, the notebook, launch and hardware handlers: `migrate::reader`)
/// and are handed in, so the facts sit below them and every checker can ask them.
pub trait FileReader: Send + Sync {
    /// Whether Python `text` calls `qualified`, resolved through its imports.
    fn calls(&self, text: &str, qualified: &str) -> bool;
    /// Whether Python `text` calls one of [`GROUP_CREATORS`] where that creates the group.
    fn creates_process_group(&self, text: &str) -> bool;
    /// Whether an accelerate config (YAML or JSON) launches torch_xla.
    fn launches_torch_xla(&self, config: &str) -> bool;
    /// The environment variables a file of `kind` reads as values, with the 1-based line where
    /// it has lines of its own (a notebook's reads have none).
    fn env_reads(&self, kind: Kind, text: &str) -> Vec<(String, Option<usize>)>;
    /// What a file of `kind` says about hardware.
    fn hardware(&self, kind: Kind, text: &str) -> Option<FileHardware>;
    /// Where Python `text` subclasses a class named `class` defined elsewhere and uses its
    /// attribute `attr` (a byte offset).
    fn subclass_loading(&self, text: &str, class: &str, attr: &str) -> Option<usize>;
    /// The top-level names of a Python module that are torch_xla names or objects.
    fn exports(&self, text: &str) -> rustc_hash::FxHashMap<String, Export>;
}

/// What one file says about hardware: whether it selects a TPU, and the first other hardware it
/// selects (its line where the file has lines of its own, the device).
pub type FileHardware = (bool, Option<(Option<usize>, String)>);

pub struct RunFacts {
    /// The run's files, walked when first needed.
    files: Walk,
    reader: Box<dyn FileReader>,
    creates_group: OnceLock<bool>,
    accelerate_xla_configs: OnceLock<Vec<PathBuf>>,
    spmd_programs: OnceLock<Vec<PathBuf>>,
    spmd_launched: OnceLock<bool>,
    requirements_files: OnceLock<Vec<PathBuf>>,
    /// Each environment variable some file reads as a value, and the first place (path, line).
    env_reads: OnceLock<BTreeMap<String, (PathBuf, Option<usize>)>>,
    /// Where the run selects hardware other than a TPU (place, device), unless it selects a TPU.
    other_hardware: OnceLock<Option<(String, String)>>,
    /// Answers of [`Self::subclass_loading`], by (class, attribute).
    subclasses: Mutex<BTreeMap<(String, String), Option<String>>>,
    /// The run's Python modules by every dotted name they may be imported as (`compat`,
    /// `pkg.compat` for `pkg/compat.py`); `None` where two files answer to a name.
    modules: OnceLock<rustc_hash::FxHashMap<String, Option<PathBuf>>>,
    /// Each module's top-level torch_xla names, read when a file first imports from it.
    exports: Mutex<rustc_hash::FxHashMap<PathBuf, Exports>>,
}

/// What a module of the run binds to a torch_xla name at its top level (`import
/// torch_xla.distributed.spmd as xs`, `xs = _xs`), or to a torch_xla object it cannot follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Export {
    Qualified(String),
    Opaque,
}

type Exports = std::sync::Arc<rustc_hash::FxHashMap<String, Export>>;

impl std::fmt::Debug for RunFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunFacts").field("creates_group", &self.creates_group.get()).finish_non_exhaustive()
    }
}

impl RunFacts {
    /// Facts about the files `list` returns.
    pub fn new(reader: impl FileReader + 'static, list: impl Fn() -> Vec<PathBuf> + Send + Sync + 'static) -> RunFacts {
        RunFacts::walking(reader, move |visit| list().into_iter().for_each(visit))
    }

    /// Facts about the files `walk` hands to its visitor, as it finds them.
    pub fn walking(
        reader: impl FileReader + 'static,
        walk: impl Fn(&mut dyn FnMut(PathBuf)) + Send + Sync + 'static,
    ) -> RunFacts {
        RunFacts {
            files: Box::new(walk),
            reader: Box::new(reader),
            creates_group: OnceLock::new(),
            accelerate_xla_configs: OnceLock::new(),
            spmd_programs: OnceLock::new(),
            spmd_launched: OnceLock::new(),
            requirements_files: OnceLock::new(),
            env_reads: OnceLock::new(),
            subclasses: Mutex::new(BTreeMap::new()),
            other_hardware: OnceLock::new(),
            modules: OnceLock::new(),
            exports: Mutex::new(rustc_hash::FxHashMap::default()),
        }
    }

    /// What `hit` finds in the run's files, read in parallel while the walk goes on (the list
    /// of a large tree's paths is never held: it was most of what a run's peak memory grew by
    /// with the tree); after the first find only, if `first_only`. In no particular order.
    fn scan<R: Send>(&self, hit: impl Fn(&Path) -> Option<R> + Sync, first_only: bool) -> Vec<R> {
        self.scan_until(hit, |_| first_only)
    }

    /// [`Self::scan`], stopping after a find that `stop` says settles the question.
    fn scan_until<R: Send>(&self, hit: impl Fn(&Path) -> Option<R> + Sync, stop: impl Fn(&R) -> bool + Sync) -> Vec<R> {
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
                    done.fetch_or(stop(&r), Ordering::Relaxed);
                    found.lock().expect("not poisoned").push(r);
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
            let launches =
                |p: &Path| crate::source::read_text(p).is_ok_and(|text| self.reader.launches_torch_xla(&text));
            self.scan(|p| (config(p) && launches(p)).then(|| p.to_path_buf()), false)
        })
    }

    /// Whether `spelled`, a config path as a launch command names it (`configs/tpu.yaml`, relative
    /// to a directory the file does not say), is one of [`Self::accelerate_xla_configs`].
    pub fn is_accelerate_xla_config(&self, spelled: &str) -> bool {
        named_in(spelled, self.accelerate_xla_configs())
    }

    /// The run's Python files that call `xr.use_spmd()`, or define or call the helper TPU216
    /// turns it into (imported from the project's helper module where several files share it),
    /// so that what a migration left for a person stays reported. `migrate --write` asks
    /// before any file is written.
    pub fn spmd_programs(&self) -> &[PathBuf] {
        self.spmd_programs.get_or_init(|| {
            let helper_call = format!("{SPMD_HELPER_NAME}()");
            let spmd = |text: &str| {
                text.contains(SPMD_HELPER) || text.contains(&helper_call) || self.text_calls(text, USE_SPMD)
            };
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

    /// Whether a launch file of the run (a shell script, a Dockerfile, a job spec) starts one of
    /// [`Self::spmd_programs`] with Python or torchrun on the same line: TPU925 converts such a
    /// launch, and the programs' `use_spmd()` needs no launch item (TPU926).
    pub fn launches_spmd_program(&self) -> bool {
        *self.spmd_launched.get_or_init(|| {
            let programs = self.spmd_programs();
            let launcher = |word: &str| {
                let word = word.rsplit('/').next().unwrap_or(word);
                word == "torchrun"
                    || word.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            };
            let starts = |text: &str| {
                text.lines().any(|line| {
                    let words: Vec<&str> = line
                        .split(|c: char| c.is_whitespace() || "\"';&|()".contains(c))
                        .filter(|w| !w.is_empty())
                        .collect();
                    words.iter().any(|w| launcher(w)) && words.iter().any(|w| named_in(w, programs))
                })
            };
            let launch = |p: &Path| matches!(Kind::of(p), Some(Kind::Shell | Kind::Dockerfile | Kind::Yaml));
            !programs.is_empty()
                && !self
                    .scan(|p| (launch(p) && std::fs::read_to_string(p).is_ok_and(|t| starts(&t))).then_some(()), true)
                    .is_empty()
        })
    }

    /// Whether `spelled`, a `-r FILE` of a `pip install` or a requirements file, is one of the
    /// run's requirements files: migrated with the rest, so what it installs is not unseen.
    pub fn is_requirements_file(&self, spelled: &str) -> bool {
        let files = self.requirements_files.get_or_init(|| {
            let requirements = |p: &Path| Kind::of(p) == Some(Kind::Requirements);
            self.scan(|p| requirements(p).then(|| p.to_path_buf()), false)
        });
        named_in(spelled, files)
    }

    /// Where a file of the run reads the environment variable `var` as a value (`app.py:12`): a
    /// Python test of `os.environ.get("PJRT_DEVICE")`, a script's `$PJRT_DEVICE`. A variable
    /// TorchTPU ignores can still be the project's own switch, whose assignments must then stay.
    /// `migrate --write` asks before any file is written.
    pub fn env_read(&self, var: &str) -> Option<String> {
        let reads = self.env_reads.get_or_init(|| {
            let mut first: BTreeMap<String, (PathBuf, Option<usize>)> = BTreeMap::new();
            for found in self.scan(|p| Some(self.env_reads_of(p)).filter(|r| !r.is_empty()), false) {
                for (var, line, path) in found {
                    let place = (path, line);
                    first.entry(var).and_modify(|at| *at = (*at).clone().min(place.clone())).or_insert(place);
                }
            }
            first
        });
        let (path, line) = reads.get(var)?;
        let shown = path.display().to_string();
        let shown = shown.strip_prefix("./").unwrap_or(&shown);
        Some(line.map_or_else(|| shown.to_string(), |line| format!("{shown}:{line}")))
    }

    /// Where a class of another file subclasses a class named `class` (`class Mine(lib.Trainer)`)
    /// and uses its attribute `.attr` (`train.py:12`): a device loader the class keeps there is
    /// iterated by code its own file cannot see. A file that defines `class` itself is not
    /// "another": its subclasses are that file's own business.
    pub fn subclass_loading(&self, class: &str, attr: &str) -> Option<String> {
        let key = (class.to_string(), attr.to_string());
        if let Some(known) = self.subclasses.lock().expect("not poisoned").get(&key) {
            return known.clone();
        }
        let hit = |p: &Path| -> Option<(PathBuf, usize)> {
            let text =
                std::fs::read_to_string(p).ok().filter(|t| is_python(p) && t.contains(class) && t.contains(attr))?;
            let at = self.reader.subclass_loading(&text, class, attr)?;
            Some((p.to_path_buf(), text[..at].matches('\n').count() + 1))
        };
        let found = self.scan(hit, false).into_iter().min().map(|(path, line)| {
            let shown = path.display().to_string();
            format!("{}:{line}", shown.strip_prefix("./").unwrap_or(&shown))
        });
        self.subclasses.lock().expect("not poisoned").insert(key, found.clone());
        found
    }

    /// Where the run selects hardware torch_xla drove that is not a TPU (`scripts/run.sh:3`,
    /// `NEURON`), when no file of it selects a TPU: a Neuron project whose launch script alone
    /// says so is a Neuron project in every file (TPU713). `migrate --write` asks before any
    /// file is written.
    pub fn other_hardware(&self) -> Option<(&str, &str)> {
        self.other_hardware
            .get_or_init(|| {
                // A TPU anywhere settles it: the rest of the tree need not be read.
                let found = self.scan_until(|p| self.hardware_of(p).filter(|h| h.0 || h.1.is_some()), |h| h.0);
                if found.iter().any(|(tpu, _)| *tpu) {
                    return None;
                }
                let (path, line, device) = found.into_iter().filter_map(|(_, other)| other).min()?;
                let shown = path.display().to_string();
                let shown = shown.strip_prefix("./").unwrap_or(&shown);
                Some((line.map_or_else(|| shown.to_string(), |line| format!("{shown}:{line}")), device))
            })
            .as_ref()
            .map(|(place, device)| (place.as_str(), device.as_str()))
    }

    /// What `name` imported from the run's module `module` is, when it is a torch_xla name
    /// (`from compat import xs` of a version shim's `xs = _xs`).
    pub fn export(&self, module: &str, name: &str) -> Option<Export> {
        self.exports_of(module)?.get(name).cloned()
    }

    /// The top-level torch_xla names of the run's module `module` (read once, when first asked).
    fn exports_of(&self, module: &str) -> Option<Exports> {
        let modules = self.modules.get_or_init(|| {
            let mut modules: rustc_hash::FxHashMap<String, Option<PathBuf>> = rustc_hash::FxHashMap::default();
            for (path, names) in self.scan(|p| is_python(p).then(|| (p.to_path_buf(), module_names(p))), false) {
                for name in names {
                    // Two files answer to it: neither is followed.
                    modules.entry(name).and_modify(|e| *e = None).or_insert_with(|| Some(path.clone()));
                }
            }
            modules
        });
        let path = modules.get(module)?.as_ref()?;
        if let Some(found) = self.exports.lock().expect("not poisoned").get(path) {
            return Some(found.clone());
        }
        let found: Exports =
            std::sync::Arc::new(std::fs::read_to_string(path).map(|t| self.module_exports(&t)).unwrap_or_default());
        self.exports.lock().expect("not poisoned").insert(path.clone(), found.clone());
        Some(found)
    }

    /// Read every module's torch_xla names now: `migrate --write` asks before any file is
    /// written, since the migration removes those names from the modules that bind them.
    pub fn read_exports(&self) {
        let _ = self.exports_of("");
        let mut paths: Vec<&PathBuf> = self.modules.get().into_iter().flat_map(|m| m.values().flatten()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let found: Exports =
                std::sync::Arc::new(std::fs::read_to_string(path).map(|t| self.module_exports(&t)).unwrap_or_default());
            self.exports.lock().expect("not poisoned").entry(path.clone()).or_insert(found);
        }
    }

    /// Whether `text` imports a module of the run that binds torch_xla names (a version
    /// shim): then it may use them without naming torch_xla itself (`from compat import xs`).
    pub fn imports_torch_xla_names(&self, text: &str) -> bool {
        let modules = text.lines().filter_map(|line| {
            let line = line.trim_start();
            let rest = line.strip_prefix("from ").or_else(|| line.strip_prefix("import "))?;
            Some(rest.trim_start_matches('.').split([' ', ',', '\t']).next().unwrap_or_default())
        });
        modules.filter(|m| !m.is_empty()).any(|m| self.exports_of(m).is_some_and(|e| !e.is_empty()))
    }

    /// Whether a Python file of the run creates a process group.
    pub fn creates_process_group(&self) -> bool {
        *self.creates_group.get_or_init(|| {
            let creates =
                |p: &Path| is_python(p) && crate::source::read_text(p).is_ok_and(|t| self.text_creates_group(&t));
            !self.scan(|p| creates(p).then_some(()), true).is_empty()
        })
    }
}

impl RunFacts {
    /// The environment variables `path` reads as values: (variable, line, path).
    fn env_reads_of(&self, path: &Path) -> Vec<(String, Option<usize>, PathBuf)> {
        let Some(kind) = Kind::of(path) else { return Vec::new() };
        let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
        let found = self.reader.env_reads(kind, &text);
        found.into_iter().map(|(var, line)| (var, line, path.to_path_buf())).collect()
    }

    /// What `path` says about hardware: whether it selects a TPU, and where it first selects
    /// other hardware (path, line: none for a notebook, device).
    fn hardware_of(&self, path: &Path) -> Option<Hardware> {
        let kind = Kind::of(path)?;
        let text = std::fs::read_to_string(path).ok()?;
        let (tpu, other) = self.reader.hardware(kind, &text)?;
        Some((tpu, other.map(|(line, device)| (path.to_path_buf(), line, device))))
    }

    /// The top-level torch_xla names of a module's text (a module that names neither torch_xla
    /// nor optimum is not parsed).
    fn module_exports(&self, text: &str) -> rustc_hash::FxHashMap<String, Export> {
        if !text.contains("torch_xla") && !text.contains("optimum") {
            return rustc_hash::FxHashMap::default();
        }
        self.reader.exports(text)
    }

    /// Whether this Python text calls `qualified` (resolved through its imports).
    fn text_calls(&self, text: &str, qualified: &str) -> bool {
        let last = qualified.rsplit('.').next().unwrap_or(qualified);
        text.contains(last) && self.reader.calls(text, qualified)
    }

    /// Whether this Python text calls one of [`GROUP_CREATORS`] (resolved through its imports).
    fn text_creates_group(&self, text: &str) -> bool {
        // Each creator's last name must appear in the bytes before the file is worth parsing.
        GROUP_CREATORS.iter().filter_map(|c| c.rsplit('.').next()).any(|w| text.contains(w))
            && self.reader.creates_process_group(text)
    }
}

/// What a file says about hardware: whether it selects a TPU, and where it first selects other
/// hardware (path, line: none for a notebook, device).
type Hardware = (bool, Option<(PathBuf, Option<usize>, String)>);

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

/// The dotted names a module file may be imported as: `compat`, `pkg.compat`, `src.pkg.compat`
/// for `src/pkg/compat.py` (`pkg` for `pkg/__init__.py`), a few levels up.
fn module_names(path: &Path) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    if path.file_stem().is_some_and(|s| s != "__init__") {
        parts.push(path.file_stem().unwrap_or_default().to_string_lossy().into_owned());
    }
    let dirs = path.parent().into_iter().flat_map(|d| d.components().rev()).take(4);
    let dirs = dirs.map_while(|c| match c {
        std::path::Component::Normal(n) => n.to_str().filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_')),
        _ => None,
    });
    let mut names = Vec::new();
    if !parts.is_empty() {
        names.push(parts[0].clone());
    }
    for dir in dirs {
        parts.insert(0, dir.to_string());
        names.push(parts.join("."));
    }
    names
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::reader::Reader;

    fn text_creates_group(text: &str) -> bool {
        RunFacts::new(Reader, Vec::new).text_creates_group(text)
    }

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
        let only_lib = RunFacts::new(Reader, {
            let lib = lib.clone();
            move || vec![lib.clone()]
        });
        assert!(!only_lib.creates_process_group());
        let both = RunFacts::new(Reader, move || vec![lib.clone(), main.clone()]);
        assert!(both.creates_process_group());
    }

    #[test]
    fn env_reads_are_values_a_file_of_the_run_reads() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let nb = r#"{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "import os\n!echo $COLAB_TPU_ADDR\nflag = 'TPU_NAME' in os.environ\n"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;
        let files = vec![
            // Writes, and a `get` whose value nobody uses, are not reads.
            write(
                "setup.py",
                "import os\nos.environ['PJRT_DEVICE'] = 'TPU'\nos.environ.setdefault('XRT_WORKERS', 'a')\nos.environ.get('XLA_USE_BF16')\n",
            ),
            write(
                "app.py",
                "from os import environ, getenv\n\nx = getenv('XRT_DEVICE_MAP')\nif environ['PJRT_DEVICE'] == 'TPU':\n    pass\n",
            ),
            write("run.sh", "export XLA_FLAGS=1\necho ${GPU_NUM_DEVICES}\n"),
            write("nb.ipynb", nb),
        ];
        let run = RunFacts::new(Reader, move || files.clone());
        let at = |var: &str| run.env_read(var).map(|at| at.rsplit(['/', '\\']).next().unwrap_or_default().to_string());
        assert_eq!(at("PJRT_DEVICE").as_deref(), Some("app.py:4"));
        assert_eq!(at("XRT_DEVICE_MAP").as_deref(), Some("app.py:3"));
        assert_eq!(at("GPU_NUM_DEVICES").as_deref(), Some("run.sh:2"));
        assert_eq!(at("COLAB_TPU_ADDR").as_deref(), Some("nb.ipynb"));
        assert_eq!(at("TPU_NAME").as_deref(), Some("nb.ipynb"));
        for unread in ["XRT_WORKERS", "XLA_USE_BF16", "XLA_FLAGS"] {
            assert_eq!(at(unread), None, "{unread}");
        }
    }

    #[test]
    fn a_modules_torch_xla_names_are_known_to_the_files_importing_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        let shim = dir.path().join("pkg").join("compat.py");
        std::fs::write(
            &shim,
            "try:\n    import torch_xla.distributed.spmd as _xs\nexcept ImportError:\n    _xs = None\nxs = _xs\n\
             import torch_xla.runtime as xr\nrank = getattr(xr, 'global_ordinal', None) or 0\ndef helper():\n    pass\n",
        )
        .unwrap();
        let other = dir.path().join("other").join("compat.py");
        std::fs::create_dir(other.parent().unwrap()).unwrap();
        std::fs::write(&other, "import torch_xla.core.xla_model as xs\n").unwrap();
        let run = RunFacts::new(Reader, move || vec![shim.clone(), other.clone()]);
        let spmd = Some(Export::Qualified("torch_xla.distributed.spmd".into()));
        assert_eq!(run.export("pkg.compat", "xs"), spmd);
        assert_eq!(run.export("pkg.compat", "rank"), Some(Export::Opaque));
        assert_eq!(run.export("pkg.compat", "helper"), None);
        assert_eq!(run.export("other.compat", "xs"), Some(Export::Qualified("torch_xla.core.xla_model".into())));
        assert_eq!(run.export("compat", "xs"), None, "two files are `compat`: neither is followed");
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
            write("shared.py", "from _torchtpu import torchtpu_spmd_processes\n\ntorchtpu_spmd_processes()\n"),
            write("eval.py", "import torch_xla.runtime as xr\nprint(xr.world_size())\n"),
            write("notes.py", "# we used to call use_spmd() here\n"),
        ];
        let run = RunFacts::new(Reader, move || files.clone());
        assert!(run.is_spmd_program("train.py") && run.is_spmd_program("./train.py"));
        assert!(run.is_spmd_program("\"migrated.py\"") && run.is_spmd_program("shared.py"));
        assert!(!run.is_spmd_program("eval.py") && !run.is_spmd_program("notes.py"));
        assert!(!run.is_spmd_program("$SCRIPT") && !run.is_spmd_program("other/train2.py"));
    }

    #[test]
    fn an_spmd_program_is_launched_by_a_script_naming_it_with_python_or_torchrun() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let train = write("train.py", "import torch_xla.runtime as xr\nxr.use_spmd()\n");
        let other = write("other.py", "print(1)\n");
        let notes = write("notes.sh", "# train.py is the SPMD program\necho train.py\npython other.py\n");
        let launch = write("run.sh", "set -e\nPJRT_DEVICE=TPU python3.11 ./train.py --steps 3 && echo done\n");
        let without = RunFacts::new(Reader, {
            let files = vec![train.clone(), other.clone(), notes.clone()];
            move || files.clone()
        });
        assert!(!without.launches_spmd_program());
        let with = RunFacts::new(Reader, move || vec![train.clone(), other.clone(), notes.clone(), launch.clone()]);
        assert!(with.launches_spmd_program());
    }
}
