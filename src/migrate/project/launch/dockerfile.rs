//! Dockerfiles: `ENV` settings, and the shell commands of `RUN`, `CMD` and `ENTRYPOINT` (shell
//! form; in the exec form's JSON arrays only torch_xla launchers are looked for, and reported).

use ruff_text_size::TextRange;

use super::findings::{EnvSite, Findings, range};
use super::shell::{self, Region};
use crate::migrate::fix::Edit;
use crate::migrate::rules::Builtin;
use crate::source::line_end_inclusive;

/// One instruction, over all its continuation lines.
#[derive(Debug)]
struct Instruction {
    keyword: TextRange,
    /// From the first argument to the end of the last line (without its newline).
    args: TextRange,
    /// Its lines, newline included: what deleting it removes.
    lines: TextRange,
}

pub(super) fn check(found: &mut Findings) {
    for ins in instructions(found.text) {
        let keyword = found.text[ins.keyword].to_ascii_uppercase();
        let exec_form = found.text[ins.args].starts_with('[');
        match keyword.as_str() {
            "ENV" => env(found, &ins),
            "FROM" => base_image(found, &ins),
            "RUN" | "CMD" | "ENTRYPOINT" if !exec_form => shell::scan(found, Region::whole(ins.args, ins.lines)),
            "RUN" | "CMD" | "ENTRYPOINT" => exec_form_launcher(found, &ins),
            _ => {}
        }
    }
}

/// The lines (1-based) of instructions that open a here-document (`RUN <<EOF`, `RUN python3
/// <<EOF`, `COPY <<EOF /etc/x`): BuildKit's syntax, whose bodies are not checked, which the
/// caller says rather than skipping them silently.
pub fn heredoc_lines(text: &str) -> Vec<usize> {
    instructions(text)
        .into_iter()
        .filter(|ins| !shell::heredoc_delimiters(&text[ins.args]).is_empty())
        .map(|ins| text[..usize::from(ins.keyword.start())].matches('\n').count() + 1)
        .collect()
}

/// `CMD ["python", "xla_spawn.py", …]`: the exec form runs no shell, so TorchTPU's launch (an
/// `eval` of `python -m torch.tpu.distributed`, then torchrun) cannot replace it word for word.
fn exec_form_launcher(found: &mut Findings, ins: &Instruction) {
    let Ok(words) = serde_json::from_str::<Vec<String>>(&found.text[ins.args]) else { return };
    let launcher = |w: &String| {
        if w.ends_with("xla_spawn.py") || w == "torch_xla.distributed.xla_multiprocessing" {
            Some(Builtin::XlaSpawn)
        } else {
            (w == "torch_xla.distributed.xla_dist").then_some(Builtin::XlaDist)
        }
    };
    if let Some(builtin) = words.iter().find_map(launcher) {
        let why = "the exec form runs no shell: write it as `CMD [\"bash\", \"-c\", \"…\"]` with TorchTPU's launch";
        let fix = (builtin == Builtin::XlaSpawn).then(|| Err(why.to_string()));
        found.launcher(builtin, ins.args, fix);
    }
}

/// `ENV A=1 B=2` (each pair on its own), or the legacy `ENV KEY value` (the whole instruction).
fn env(found: &mut Findings, ins: &Instruction) {
    // A comment line inside the continuation ends a shell command, not the instruction.
    let words: Vec<TextRange> = shell::commands(found.text, ins.args).into_iter().flat_map(|c| c.words).collect();
    let text = found.text;
    let whole = || Ok(Edit::delete(ins.lines));
    let Some(&first) = words.first() else { return };
    if shell::assigned_name(&text[first]).is_none() {
        return found.env(EnvSite { name: first, removal: whole() });
    }
    for (k, &word) in words.iter().enumerate() {
        let Some(len) = shell::assigned_name(&text[word]).map(str::len) else { continue };
        let start = usize::from(word.start());
        let removal = if words.len() == 1 { whole() } else { Ok(Edit::delete(shell::span(&words, k, k))) };
        found.env(EnvSite { name: range(start, start + len), removal });
    }
}

/// `FROM python:3.10-slim`: an official Python image older than torch-tpu supports cannot
/// install it (TPU908); a PyTorch/XLA image ships torch_xla (TPU909) and its own Python.
fn base_image(found: &mut Findings, ins: &Instruction) {
    let args = &found.text[ins.args];
    let image = args.split_whitespace().find(|w| !w.starts_with("--")).unwrap_or("");
    let Some((name, tag)) = image.rsplit_once(':') else { return };
    let start = usize::from(ins.args.start()) + args.find(image).unwrap_or(0);
    let at = range(start, start + image.len());
    // PyTorch/XLA's images (`gcr.io/tpu-pytorch/xla:r2.1_3.10_tpuvm`,
    // `…/tpu-pytorch-releases/docker/xla:r2.9.0_3.11_tpuvm`): torch_xla preinstalled, and the
    // Python the tag names after its `_`.
    if name.contains("tpu-pytorch") && name.rsplit('/').next() == Some("xla") {
        found.launcher(Builtin::XlaBaseImage, at, None);
        if let Some(python) = tag.split('_').nth(1).filter(|p| p.split('.').count() == 2) {
            found.diagnostics.extend(crate::migrate::project::deps::python_version(
                found.text,
                at,
                python,
                found.rules,
            ));
        }
        return;
    }
    if !matches!(name.trim_start_matches("docker.io/").trim_start_matches("library/"), "python") {
        return;
    }
    // `3.10`, `3.10.14-slim`, `3.9-bullseye`: the major.minor before any suffix.
    let mut parts = tag.split(|c: char| !c.is_ascii_digit());
    let (Some(major), Some(minor)) = (parts.next().filter(|p| !p.is_empty()), parts.next().filter(|p| !p.is_empty()))
    else {
        return;
    };
    let findings =
        crate::migrate::project::deps::python_version(found.text, at, &format!("{major}.{minor}"), found.rules);
    found.diagnostics.extend(findings);
}

/// The instructions of a Dockerfile: comment lines, blank lines, and comment lines inside
/// continuations (which Docker drops) are skipped.
fn instructions(text: &str) -> Vec<Instruction> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let end = line_end_inclusive(text, at);
        let line = &text[at..end];
        let body = line.trim_start();
        if body.trim().is_empty() || body.starts_with('#') {
            at = end;
            continue;
        }
        let keyword_start = at + (line.len() - body.len());
        let keyword_end = keyword_start + body.find(char::is_whitespace).unwrap_or(body.len());
        let mut last_end = end;
        let mut continues = continued(line);
        while continues && last_end < text.len() {
            let next_end = line_end_inclusive(text, last_end);
            let next = text[last_end..next_end].trim();
            last_end = next_end;
            if !next.is_empty() && !next.starts_with('#') {
                continues = continued(next);
            }
        }
        let args_end = last_end - (text[..last_end].len() - text[..last_end].trim_end_matches(['\n', '\r']).len());
        let gap = text[keyword_end..args_end].len() - text[keyword_end..args_end].trim_start_matches([' ', '\t']).len();
        found.push(Instruction {
            keyword: range(keyword_start, keyword_end),
            args: range(keyword_end + gap, args_end),
            lines: range(at, last_end),
        });
        at = last_end;
    }
    found
}

fn continued(line: &str) -> bool {
    line.trim_end().ends_with('\\')
}
