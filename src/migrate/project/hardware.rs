//! What a launch script, Dockerfile, job spec or dependency list says about the hardware
//! torch_xla runs on (TPU713 for files other than Python). torch_xla also drove AWS Neuron and
//! CUDA GPUs: such a file, and the project it belongs to when nothing in it selects a TPU, is
//! left alone with one finding, as a Python file that selects that hardware is.

use ruff_text_size::{TextRange, TextSize};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::rules::{Builtin, RuleSet};

/// Devices a `PJRT_DEVICE` value may name (upper case).
const DEVICES: &[&str] = &["TPU", "CPU", "CUDA", "GPU", "ROCM", "NEURON", "TT", "XPU"];

/// Words that only a vendor's torch_xla stack uses, and its hardware.
const VENDOR_WORDS: &[(&str, &str)] = &[
    ("neuron_parallel_compile", "NEURON"),
    ("torch-neuronx", "NEURON"),
    ("torch_neuronx", "NEURON"),
    ("neuronx-cc", "NEURON"),
    ("neuronx_distributed", "NEURON"),
    ("neuronx-distributed", "NEURON"),
    ("NEURON_CC_FLAGS", "NEURON"),
    ("NEURON_RT_", "NEURON"),
    ("aws-neuronx", "NEURON"),
    // torch_xla's GPU builds: the wheel bucket's `wheels/cuda/`, the `[cuda]` extra.
    ("/wheels/cuda/", "CUDA"),
    ("torch_xla[cuda]", "CUDA"),
    ("torch-xla[cuda]", "CUDA"),
];

/// Words that say the project runs on a TPU: it may support other hardware too, but it is a TPU
/// project, and its files are migrated one by one.
const TPU_WORDS: &[&str] = &["torch_xla[tpu]", "torch-xla[tpu]", "libtpu", "_tpuvm", "tpu-vm"];

/// The first place `text` selects hardware other than a TPU (outside comments): its offset and the
/// device. `PJRT_DEVICE=CUDA` (and `ENV PJRT_DEVICE CUDA`, a job spec's `value:`), a vendor's
/// tools and packages, a torch_xla CUDA image (`…/xla:nightly_3.10_cuda_12.1`) or wheel.
pub fn other_hardware(text: &str) -> Option<(usize, &'static str)> {
    selections(text).find(|(_, device)| !crate::migrate::target::TPU_OR_HOST.contains(device))
}

/// Whether `text` selects a TPU (outside comments): `PJRT_DEVICE=TPU`, a `torch_xla[tpu]`
/// requirement, libtpu, a TPU VM image or command.
pub fn selects_tpu(text: &str) -> bool {
    selections(text).any(|(_, device)| device == "TPU")
        || code_lines(text).any(|(_, line)| {
            let lower = line.to_ascii_lowercase();
            TPU_WORDS.iter().any(|w| lower.contains(w))
        })
}

/// The lines of `text` that are not comments, with their offsets.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = at;
        at += line.len();
        (!line.trim_start().starts_with('#')).then_some((start, line))
    })
}

/// Every device `text` selects, in order.
fn selections(text: &str) -> impl Iterator<Item = (usize, &'static str)> + '_ {
    code_lines(text).flat_map(move |(start, line)| {
        let mut found: Vec<(usize, &'static str)> = Vec::new();
        for (at, _) in line.match_indices("PJRT_DEVICE") {
            // `$PJRT_DEVICE` reads it; `PJRT_DEVICE=…`, `PJRT_DEVICE: …`, `ENV PJRT_DEVICE …` set it.
            if line[..at].ends_with(['$', '{']) {
                continue;
            }
            if let Some(device) = assigned_device(&text[start + at + "PJRT_DEVICE".len()..]) {
                found.push((start + at, device));
            }
        }
        for (word, device) in VENDOR_WORDS {
            found.extend(line.find(word).map(|at| (start + at, *device)));
        }
        // A torch_xla image built for CUDA: `xla:nightly_3.10_cuda_12.1`, `xla:r2.1.0_3.10_cuda_12.1`.
        for (at, _) in line.match_indices("xla:") {
            let tag = line[at..].split(|c: char| c.is_whitespace() || c == '"' || c == '\'').next().unwrap_or("");
            if tag.to_ascii_lowercase().contains("cuda") {
                found.push((start + at, "CUDA"));
            }
        }
        found.sort_unstable();
        found
    })
}

/// The device a `PJRT_DEVICE` assignment gives, from the text right after the name.
fn assigned_device(after: &str) -> Option<&'static str> {
    let separators = |c: char| matches!(c, ' ' | '\t' | '"' | '\'' | '=' | ':');
    let rest = after.trim_start_matches(separators);
    let rest = match rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\r\n")) {
        // A job spec's `- name: PJRT_DEVICE` then `value: CUDA` on the next line.
        Some(next) => next.trim_start().strip_prefix("value:")?.trim_start_matches(separators),
        None if rest.len() == after.len() => return None, // `PJRT_DEVICES`, `PJRT_DEVICE_x`
        None => rest,
    };
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_uppercase();
    DEVICES.iter().find(|d| **d == word).copied()
}

/// Replace a file's findings by one TPU713 finding when it selects other hardware itself, or when
/// the run does and selects a TPU nowhere. A file with nothing of torch_xla in it is not ours to speak about (a config that mentions
/// torch-neuronx in a string).
pub fn leave_alone(text: &str, rules: &RuleSet, run: Option<&RunFacts>, diagnostics: &mut Vec<Diagnostic>) {
    let Some(rule) = rules.builtin(Builtin::OtherHardware) else { return };
    if diagnostics.is_empty() {
        return;
    }
    let kept = diagnostics.len();
    let left = (kept > 0)
        .then(|| format!("{kept} torch_xla use{} in this file left as they are", if kept == 1 { "" } else { "s" }));
    let (range, device, note) = match other_hardware(text) {
        Some((at, device)) => (TextRange::empty(offset(at)), device.to_string(), left),
        None => {
            let Some((place, device)) = run.and_then(|r| r.other_hardware()) else { return };
            let Some(first) = diagnostics.iter().map(|d| d.range).min_by_key(|r| r.start()) else { return };
            let note = format!(
                "`{place}` selects it for the whole project, and no file of the run selects a TPU; {}",
                left.unwrap_or_default()
            );
            (first, device.to_string(), Some(note))
        }
    };
    let message = rules.rules[rule].message.replace("{name}", &device);
    diagnostics.clear();
    diagnostics.push(Diagnostic { rule, range, message, note, fix: None });
}

fn offset(at: usize) -> TextSize {
    TextSize::try_from(at).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_hardware_is_found_in_every_form_a_project_writes_it() {
        for (text, device) in [
            ("export PJRT_DEVICE=NEURON\n", "NEURON"),
            ("ENV PJRT_DEVICE CUDA\n", "CUDA"),
            ("docker run -e PJRT_DEVICE='gpu' img\n", "GPU"),
            ("env:\n  - name: PJRT_DEVICE\n    value: \"CUDA\"\n", "CUDA"),
            ("neuron_parallel_compile torchrun train.py\n", "NEURON"),
            ("torch-neuronx==2.1.0\n", "NEURON"),
            ("FROM us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:nightly_3.10_cuda_12.1\n", "CUDA"),
            (
                "RUN pip install https://storage.googleapis.com/pytorch-xla-releases/wheels/cuda/12.1/torch_xla-2.3.0-cp310-cp310-manylinux_2_28_x86_64.whl\n",
                "CUDA",
            ),
        ] {
            assert_eq!(other_hardware(text).map(|(_, d)| d), Some(device), "{text}");
            assert!(!selects_tpu(text), "{text}");
        }
        for text in [
            "export PJRT_DEVICE=TPU\n",
            "# export PJRT_DEVICE=CUDA\n",
            "echo $PJRT_DEVICE\nCUDA=1\n",
            "unset PJRT_DEVICE\npython train.py\n",
            "export PJRT_DEVICE=$DEVICE\n",
            "FROM us-central1-docker.pkg.dev/tpu-pytorch-releases/docker/xla:r2.9.0_3.11_tpuvm\n",
            "torch_xla[tpu]==2.5.0\n",
        ] {
            assert_eq!(other_hardware(text), None, "{text}");
        }
        assert!(selects_tpu("export PJRT_DEVICE=TPU\n") && selects_tpu("torch_xla[tpu]\n"));
        assert!(selects_tpu("FROM gcr.io/tpu-pytorch/xla:r2.1_3.10_tpuvm\n") && !selects_tpu("# libtpu\n"));
    }
}
