//! How the run facts read one file: the Python checker's queries and the notebook, launch and
//! hardware handlers, behind [`FileReader`]. It sits above all of them and below the pipeline,
//! which hands it to [`RunFacts`](crate::migrate::facts::RunFacts); the facts themselves know
//! none of these layers.

use ruff_python_parser::parse_module;

use crate::migrate::checker::{env, hardware, inventory, loaders};
use crate::migrate::facts::{Export, FileHardware, FileReader};
use crate::migrate::project::hardware as launch_hardware;
use crate::migrate::project::{launch, notebook};
use crate::migrate::semantic::{self, Resolution, Semantic};
use crate::migrate::target::Kind;

/// The reader every run uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reader;

fn line_of(text: &str, at: usize) -> Option<usize> {
    Some(text[..at].matches('\n').count() + 1)
}

/// The variables a shell script, Dockerfile or job spec reads: `$VAR`, `${VAR}`, Kubernetes'
/// `$(VAR)`, with where.
fn shell_references(text: &str) -> impl Iterator<Item = (&str, usize)> {
    text.match_indices('$').filter_map(move |(at, _)| {
        let rest = text[at + 1..].trim_start_matches(['{', '(']);
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let name = &rest[..len];
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_').then_some((name, at))
    })
}

/// The first hardware other than a TPU or the host that Python `code` selects: (offset, device).
fn python_other_hardware(code: &str) -> Option<(usize, String)> {
    if !hardware::may_select_hardware(code) {
        return None;
    }
    let parsed = parse_module(code).ok()?;
    hardware::hardware_selected(parsed.syntax())
        .into_iter()
        .find(|(device, _)| !crate::migrate::target::TPU_OR_HOST.contains(&device.as_str()))
        .map(|(device, at)| (usize::from(at), device))
}

/// The variables Python `code` reads as values: (variable, offset).
fn python_env_reads(code: &str) -> Vec<(String, usize)> {
    if !code.contains("environ") && !code.contains("getenv") {
        return Vec::new();
    }
    let Ok(parsed) = parse_module(code) else { return Vec::new() };
    env::env_reads(parsed.syntax()).into_iter().map(|(var, at)| (var, usize::from(at))).collect()
}

impl FileReader for Reader {
    fn calls(&self, text: &str, qualified: &str) -> bool {
        parse_module(text).is_ok_and(|parsed| inventory::calls(parsed.syntax(), qualified))
    }

    fn creates_process_group(&self, text: &str) -> bool {
        parse_module(text).is_ok_and(|parsed| inventory::creates_process_group(parsed.syntax()))
    }

    fn launches_torch_xla(&self, config: &str) -> bool {
        launch::yaml::launches_torch_xla(config)
    }

    fn env_reads(&self, kind: Kind, text: &str) -> Vec<(String, Option<usize>)> {
        match kind {
            Kind::Python | Kind::SetupPy => {
                python_env_reads(text).into_iter().map(|(var, at)| (var, line_of(text, at))).collect()
            }
            Kind::Shell | Kind::Dockerfile | Kind::Yaml => {
                shell_references(text).map(|(var, at)| (var.to_string(), line_of(text, at))).collect()
            }
            Kind::Notebook => {
                let Some((code, magics)) = notebook::python_and_magics(text) else { return Vec::new() };
                let shell = magics.iter().flat_map(|l| shell_references(l).map(|(var, _)| var.to_string()));
                python_env_reads(&code).into_iter().map(|(var, _)| var).chain(shell).map(|var| (var, None)).collect()
            }
            _ => Vec::new(),
        }
    }

    fn hardware(&self, kind: Kind, text: &str) -> Option<FileHardware> {
        Some(match kind {
            Kind::Python | Kind::SetupPy => (
                launch_hardware::selects_tpu(text),
                python_other_hardware(text).map(|(at, device)| (line_of(text, at), device)),
            ),
            Kind::Notebook => {
                let (code, magics) = notebook::python_and_magics(text)?;
                let magics = magics.concat();
                let other = python_other_hardware(&code)
                    .map(|(_, device)| device)
                    .or_else(|| launch_hardware::other_hardware(&magics).map(|(_, device)| device.to_string()));
                (
                    launch_hardware::selects_tpu(&code) || launch_hardware::selects_tpu(&magics),
                    other.map(|device| (None, device)),
                )
            }
            _ => (
                launch_hardware::selects_tpu(text),
                launch_hardware::other_hardware(text).map(|(at, device)| (line_of(text, at), device.to_string())),
            ),
        })
    }

    fn subclass_loading(&self, text: &str, class: &str, attr: &str) -> Option<usize> {
        let parsed = parse_module(text).ok()?;
        loaders::subclass_loading(parsed.syntax(), class, attr).map(usize::from)
    }

    fn exports(&self, text: &str) -> rustc_hash::FxHashMap<String, Export> {
        let mut out = rustc_hash::FxHashMap::default();
        let Ok(parsed) = parse_module(text) else { return out };
        let sem = Semantic::build(parsed.syntax());
        let end = ruff_text_size::TextSize::try_from(text.len()).unwrap_or_default();
        for name in sem.module_names() {
            let export = match sem.resolve(name, 0, end) {
                Resolution::Import { binding, .. } => sem.bindings[binding]
                    .qualified()
                    .filter(|q| semantic::aliased(q))
                    .map(|q| Export::Qualified(q.to_string())),
                Resolution::Opaque(_) => Some(Export::Opaque),
                _ => None,
            };
            if let Some(export) = export {
                out.insert(name.to_string(), export);
            }
        }
        out
    }
}
