//! Launch scripts, Dockerfiles and YAML job specs: environment variables torch_xla read
//! (TPU5xx), torch_xla launchers and framework configs that select torch_xla (TPU92x).
//!
//! Each kind is read with just enough structure to edit the original text by byte ranges:
//! shell commands split into words ([`shell`], also Dockerfile `RUN` and notebook `!` lines),
//! Dockerfile instructions ([`dockerfile`]), YAML block lines whose meaning yaml_serde confirms
//! ([`yaml`]). Nothing else in a file is touched, comments included.

pub(crate) mod dockerfile;
mod findings;
pub(crate) mod shell;
pub mod yaml;

use ruff_text_size::TextRange;

use findings::{EnvSite, Findings, range};

use crate::migrate::diagnostic::Diagnostic;
use crate::migrate::facts::RunFacts;
use crate::migrate::fix::Edit;
use crate::migrate::rules::{Builtin, RuleSet};
use crate::migrate::target::{Kind, Magic, MagicKind};
use crate::source::line_end_inclusive;

/// The findings of a `Kind::Shell`, `Dockerfile` or `Yaml` file.
pub fn check(kind: Kind, text: &str, rules: &RuleSet, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let mut found = Findings { text, rules, run, diagnostics: Vec::new() };
    match kind {
        Kind::Shell => shell::scan(&mut found, shell::Region::script(text)),
        Kind::Dockerfile => dockerfile::check(&mut found),
        Kind::Yaml => yaml::check(&mut found),
        _ => {}
    }
    found.deleted_variables_read();
    found.diagnostics
}

/// The findings of a notebook's shell and `%env` lines (ranges in the notebook's checked text).
pub fn check_magics(text: &str, magics: &[Magic], rules: &RuleSet, run: Option<&RunFacts>) -> Vec<Diagnostic> {
    let mut found = Findings { text, rules, run, diagnostics: Vec::new() };
    for magic in magics {
        // The magic's line with its newline: what goes when nothing is left of it.
        let line = range(magic.range.start().into(), line_end_inclusive(text, magic.range.end().into()));
        match magic.kind {
            MagicKind::Shell { command } => {
                let command = TextRange::new(command.min(magic.range.end()), magic.range.end());
                shell::scan(&mut found, shell::Region::whole(command, line));
            }
            MagicKind::Env { name } => found.env(EnvSite { name, removal: Ok(Edit::delete(line)) }),
        }
    }
    // A notebook that selects other hardware in these lines (`%env PJRT_DEVICE=NEURON`), or whose
    // run does, is left alone.
    let own = magics.iter().find_map(|m| Some((m.range, super::hardware::other_hardware(&text[m.range])?.1)));
    match (own, rules.builtin(Builtin::OtherHardware)) {
        (Some((range, device)), Some(rule)) if !found.diagnostics.is_empty() => {
            let message = rules.rules[rule].message.replace("{name}", device);
            found.diagnostics = vec![Diagnostic { rule, range, message, note: None, fix: None }];
        }
        _ => super::hardware::leave_alone("", rules, run, &mut found.diagnostics),
    }
    found.diagnostics
}

#[cfg(test)]
mod tests {
    use super::super::testing::{migrated, rules};
    use super::super::{lint, migrate};
    use super::*;
    use crate::migrate::selection::Selection;
    use crate::migrate::target::{Kind, Magic, MagicKind};
    use findings::offset;

    fn codes(kind: Kind, text: &str) -> Vec<String> {
        let found = lint(kind, text, rules(), &Selection::default()).expect("loads");
        found.iter().map(|d| rules().rules[d.rule].code.clone()).collect()
    }

    #[test]
    fn shell_assignments_are_removed_and_the_rest_of_the_line_kept() {
        let cases = [
            ("export PJRT_DEVICE=TPU\npython train.py\n", "python train.py\n"),
            ("export PJRT_DEVICE=TPU HF_HOME=/data  # both\n", "export HF_HOME=/data  # both\n"),
            ("export HF_HOME=/data PJRT_DEVICE=TPU\n", "export HF_HOME=/data\n"),
            (
                "export PJRT_DEVICE=TPU XLA_PERSISTENT_CACHE_PATH=/c # torch_xla\nrun\n",
                "export TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/c # torch_xla\nrun\n",
            ),
            ("export PJRT_DEVICE=TPU PJRT_DEVICE=TPU # twice\nrun\n", "run\n"),
            ("PJRT_DEVICE=TPU python train.py\n", "python train.py\n"),
            ("PJRT_DEVICE=\"TPU\" HF_HOME='/a b' python train.py\n", "HF_HOME='/a b' python train.py\n"),
            ("env PJRT_DEVICE=TPU python train.py\n", "env python train.py\n"),
            ("cd /src && export PJRT_DEVICE=TPU && python t.py\n", "cd /src && python t.py\n"),
            ("cd /src; export PJRT_DEVICE=TPU\n", "cd /src\n"),
            ("  export PJRT_DEVICE=TPU;\n  run\n", "  run\n"),
            ("if true; then\n  export PJRT_DEVICE=TPU\nfi\n", "if true; then\n  :\nfi\n"),
            (
                "export XLA_PERSISTENT_CACHE_PATH=/c\nmkdir -p \"${XLA_PERSISTENT_CACHE_PATH}\" $XLA_PERSISTENT_CACHE_PATH\n",
                "export TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/c\nmkdir -p \"${TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT}\" $TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT\n",
            ),
            (
                "docker run -e PJRT_DEVICE=TPU --env=PJRT_DEVICE=TPU -e XRT_TPU_CONFIG=x -e TPU_NAME=t img\n",
                "docker run -e TPU_NAME=t img\n",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(migrated(Kind::Shell, input), expected, "{input:?}");
        }
    }

    #[test]
    fn crlf_continuations_and_non_ascii_text_are_kept() {
        let input = "# é ü 日本\r\nexport PJRT_DEVICE=TPU \\\r\n  NAME=\"é\"\r\necho \"日本\" # ü\r\n";
        assert_eq!(migrated(Kind::Shell, input), "# é ü 日本\r\nexport NAME=\"é\"\r\necho \"日本\" # ü\r\n");
        let input = "python run.py \\\n  --x=é \\\n  && PJRT_DEVICE=TPU python b.py\n";
        assert_eq!(migrated(Kind::Shell, input), "python run.py \\\n  --x=é \\\n  && python b.py\n");
    }

    #[test]
    fn quoted_text_comments_heredocs_and_pipelines_are_not_assignments() {
        for text in [
            "echo 'export PJRT_DEVICE=TPU'\n",
            "echo 'export PJRT_DEVICE=TPU' | tee\n",
            "# export PJRT_DEVICE=TPU\n",
            "cat > env.sh <<EOF\nexport PJRT_DEVICE=TPU\nEOF\n",
            "cat <<-'END'\n\tPJRT_DEVICE=TPU\n\tEND\n",
        ] {
            assert_eq!(codes(Kind::Shell, text), Vec::<String>::new(), "{text:?}");
        }
        // Reported, but deleting a pipeline's stage changes what the pipeline does.
        let text = "export PJRT_DEVICE=TPU | cat\n";
        assert_eq!(codes(Kind::Shell, text), ["TPU501"]);
        assert_eq!(migrated(Kind::Shell, text), text);
        // Reported with the rule's help, not changed.
        assert_eq!(codes(Kind::Shell, "export XLA_USE_BF16=1\n"), ["TPU502"]);
        // A read of a variable that fixes delete is torch_xla logic: reported, never changed.
        for text in ["echo $PJRT_DEVICE\n", "[ \"${PJRT_DEVICE}\" = TPU ] && run\n"] {
            assert_eq!(codes(Kind::Shell, text), ["TPU501"], "{text:?}");
            assert_eq!(migrated(Kind::Shell, text), text);
        }
        assert_eq!(codes(Kind::Shell, "echo $PJRT_DEVICES $XPJRT_DEVICE\n"), Vec::<String>::new());
    }

    #[test]
    fn assignments_of_a_variable_the_project_reads_stay() {
        // The script's own read: deleting the export would change what the test sees.
        let text = "export PJRT_DEVICE=TPU\nif [ -n \"$PJRT_DEVICE\" ]; then python train.py; fi\n";
        assert_eq!(migrated(Kind::Shell, text), text);
        let found = lint(Kind::Shell, text, rules(), &Selection::default()).unwrap();
        assert!(
            found[0].note.as_deref().is_some_and(|n| n.starts_with("kept: line 2 of this file reads")),
            "{found:?}"
        );
        // Another file of the run reads it (the application's `os.environ.get`): every kind of
        // assignment stays, reported with that file; a variable nobody reads still goes.
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app.py");
        std::fs::write(&app, "import os\n\nif os.environ.get('PJRT_DEVICE'):\n    print('accelerator')\n").unwrap();
        let run = std::sync::Arc::new(RunFacts::new(crate::migrate::reader::Reader, move || vec![app.clone()]));
        let selection = Selection { unsafe_fixes: true, run: Some(run), ..Selection::default() };
        for (kind, text) in [
            (Kind::Shell, "export PJRT_DEVICE=TPU XRT_TPU_CONFIG=x\npython app.py\n"),
            (Kind::Dockerfile, "FROM python:3.11\nENV PJRT_DEVICE=TPU XRT_TPU_CONFIG=x\n"),
            (Kind::Yaml, "env:\n  - name: PJRT_DEVICE\n    value: TPU\n  - name: XRT_TPU_CONFIG\n    value: x\n"),
        ] {
            let m = migrate(kind, text, rules(), &selection);
            assert!(m.output.contains("PJRT_DEVICE") && !m.output.contains("XRT_TPU_CONFIG"), "{}", m.output);
            let kept = m.remaining.iter().find(|d| rules().rules[d.rule].code == "TPU501").expect("reported");
            let note = kept.note.as_deref().unwrap_or_default();
            assert!(note.contains("`") && note.contains("app.py:3` reads `PJRT_DEVICE`"), "{note}");
        }
    }

    #[test]
    fn jax_tpu_installed_by_another_line_of_a_script_than_torch_xla_is_reported() {
        let text = "pip install torch_xla[tpu]==2.5.0\npip install \"jax[tpu]==0.4.30\"\n";
        let found = codes(Kind::Shell, text);
        assert!(found.contains(&"TPU907".to_string()), "{found:?}");
        assert_eq!(codes(Kind::Shell, "pip install \"jax[tpu]==0.4.30\"\n"), Vec::<String>::new());
    }

    #[test]
    fn env_vars_an_echo_writes_into_a_file_are_reported_not_edited() {
        for text in ["echo 'export PJRT_DEVICE=TPU' >> ~/.bashrc\n", "echo \"export XRT_TPU_CONFIG=x\" > env.sh\n"] {
            assert_eq!(codes(Kind::Shell, text).len(), 1, "{text:?}");
            assert_eq!(migrated(Kind::Shell, text), text);
        }
        // A rename is still right inside the text written (the next shell reads the new name).
        let text = "echo 'export XLA_PERSISTENT_CACHE_PATH=/c' >> ~/.bashrc\n";
        assert_eq!(
            migrated(Kind::Shell, text),
            "echo 'export TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/c' >> ~/.bashrc\n"
        );
    }

    #[test]
    fn env_vars_inside_quoted_commands_count() {
        let input =
            "gcloud compute tpus tpu-vm ssh v4 --worker=all --command=\"cd t && PJRT_DEVICE=TPU python3 train.py\"\n";
        let expected = "gcloud compute tpus tpu-vm ssh v4 --worker=all --command=\"cd t && python3 train.py\"\n";
        assert_eq!(migrated(Kind::Shell, input), expected);
        let input = "bash -c 'export PJRT_DEVICE=TPU; python3 t.py'\n";
        assert_eq!(migrated(Kind::Shell, input), "bash -c 'python3 t.py'\n");
    }

    #[test]
    fn xla_spawn_becomes_torchrun_and_xla_dist_is_reported() {
        let input = "cd examples\n  nohup python xla_spawn.py --num_cores 8 \\\n    run_glue.py --do_train > log &\n";
        let expected = "cd examples\n  eval \"$(python -m torch.tpu.distributed | sed 's/^/export /')\"\n  nohup torchrun --nproc_per_node=\"$WORLD_SIZE\" \\\n    run_glue.py --do_train > log &\n";
        assert_eq!(migrated(Kind::Shell, input), expected);
        let input = "cd x && python3 -m torch_xla.distributed.xla_multiprocessing t.py\n";
        let expected = "cd x && eval \"$(python -m torch.tpu.distributed | sed 's/^/export /')\" && torchrun --nproc_per_node=\"$WORLD_SIZE\" t.py\n";
        assert_eq!(migrated(Kind::Shell, input), expected);
        for blocked in [
            "sudo python xla_spawn.py --num_cores=8 t.py\n",
            "python -u xla_spawn.py t.py\n",
            "bash -c 'python xla_spawn.py t.py'\n",
        ] {
            assert_eq!(codes(Kind::Shell, blocked), ["TPU921"], "{blocked:?}");
            assert_eq!(migrated(Kind::Shell, blocked), blocked);
        }
        let pod = "python -m torch_xla.distributed.xla_dist --tpu=pod --restart-tpuvm-pod-server -- python train.py\n";
        assert_eq!(codes(Kind::Shell, pod), ["TPU920"]);
        assert_eq!(migrated(Kind::Shell, pod), pod);
    }

    #[test]
    fn accelerate_tpu_flags_are_reported() {
        assert_eq!(codes(Kind::Shell, "accelerate launch --tpu --num_processes 8 train.py\n"), ["TPU923"]);
        assert_eq!(codes(Kind::Shell, "accelerate launch --tpu-use-sudo train.py\n"), ["TPU923"]);
        assert_eq!(codes(Kind::Shell, "accelerate launch --multi_gpu train.py\n"), Vec::<String>::new());
    }

    #[test]
    fn accelerate_tpu_launches_become_its_torchrun_launcher_after_the_topology() {
        let eval = r#"eval "$(python -m torch.tpu.distributed | sed 's/^/export /')""#;
        // accelerate refuses `--multi_gpu` for one process: a host of one chip runs one.
        let multi = r#"$([ "$WORLD_SIZE" -gt 1 ] && echo --multi_gpu)"#;
        let cases = [
            (
                "accelerate launch --tpu --num_processes 8 --config_file c.yaml train.py --tpu\n",
                format!(
                    "{eval}\naccelerate launch {multi} --num_processes=\"$WORLD_SIZE\" --config_file c.yaml train.py --tpu\n"
                ),
            ),
            (
                "cd x && accelerate launch --num-processes=4 --downcast_bf16 --tpu train.py\n",
                format!("cd x && {eval} && accelerate launch {multi} --num_processes=\"$WORLD_SIZE\" train.py\n"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(migrated(Kind::Shell, text), want, "{text:?}");
            assert_eq!(migrated(Kind::Shell, &want), want, "a second run changes nothing: {want:?}");
        }
        // A pod, sudo (drops the exported topology), a quoted command: reported, unchanged.
        for text in [
            "accelerate launch --tpu --tpu_cluster train.py\n",
            "sudo accelerate launch --tpu train.py\n",
            "bash -c \"accelerate launch --tpu train.py\"\n",
        ] {
            assert_eq!(migrated(Kind::Shell, text), text);
            assert_eq!(codes(Kind::Shell, text), ["TPU923"], "{text:?}");
        }
    }

    #[test]
    fn dockerfile_env_forms_and_run_chains() {
        let cases = [
            ("FROM x\nENV PJRT_DEVICE=TPU\nRUN a\n", "FROM x\nRUN a\n"),
            ("FROM x\nENV PJRT_DEVICE TPU\n", "FROM x\n"),
            ("FROM x\nENV A=1 PJRT_DEVICE=TPU \\\n    B=\"2 3\"\n", "FROM x\nENV A=1 B=\"2 3\"\n"),
            ("FROM x\nENV PJRT_DEVICE=TPU \\\n    # kept by nobody\n    B=2\n", "FROM x\nENV B=2\n"),
            ("FROM x\nRUN export PJRT_DEVICE=TPU && \\\n    pip list\n", "FROM x\nRUN pip list\n"),
            ("FROM x\nRUN export PJRT_DEVICE=TPU\nCMD [\"python\"]\n", "FROM x\nCMD [\"python\"]\n"),
            ("FROM x\nENV XLA_PERSISTENT_CACHE_PATH=/c\n", "FROM x\nENV TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT=/c\n"),
        ];
        for (input, expected) in cases {
            assert_eq!(migrated(Kind::Dockerfile, input), expected, "{input:?}");
        }
    }

    #[test]
    fn yaml_env_lists_and_maps() {
        let only = "spec:\n  containers:\n  - name: t\n    env:\n    - name: PJRT_DEVICE\n      value: \"TPU\"\n    image: x\n";
        assert_eq!(migrated(Kind::Yaml, only), "spec:\n  containers:\n  - name: t\n    image: x\n");
        let two = "env:\n  # device\n  - name: PJRT_DEVICE\n    value: TPU\n  - {name: HF_HOME, value: /d}\n";
        assert_eq!(migrated(Kind::Yaml, two), "env:\n  # device\n  - {name: HF_HOME, value: /d}\n");
        let flow = "env:\n- {name: PJRT_DEVICE, value: \"TPU\"}\n- name: A\n  value: b\n";
        assert_eq!(migrated(Kind::Yaml, flow), "env:\n- name: A\n  value: b\n");
        let compose = "services:\n  t:\n    environment:\n      PJRT_DEVICE: TPU\n      XLA_PERSISTENT_CACHE_PATH: /c\n    command: x\n";
        let expected =
            "services:\n  t:\n    environment:\n      TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT: /c\n    command: x\n";
        assert_eq!(migrated(Kind::Yaml, compose), expected);
        let list = "environment:\r\n  - PJRT_DEVICE=TPU\r\n  - \"HF_HOME=/é\"\r\n";
        assert_eq!(migrated(Kind::Yaml, list), "environment:\r\n  - \"HF_HOME=/é\"\r\n");
        let k8s_ref = "env:\n- name: XLA_PERSISTENT_CACHE_PATH\n  value: /c\n- name: B\n  value: $(XLA_PERSISTENT_CACHE_PATH)/x\n";
        let expected = "env:\n- name: TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT\n  value: /c\n- name: B\n  value: $(TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT)/x\n";
        assert_eq!(migrated(Kind::Yaml, k8s_ref), expected);
    }

    #[test]
    fn unrelated_yaml_and_text_in_block_scalars_produce_nothing() {
        for text in [
            "name: PJRT_DEVICE\nvalue: TPU\nitems:\n- PJRT_DEVICE=TPU\n",
            "script: |\n  env:\n  - name: PJRT_DEVICE\n    value: TPU\n",
            "distributed_type: XLA\n",
            "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\ndowncast_bf16: 'no'\ntpu_env: []\n",
            "trainer:\n  accelerator: gpu\n",
            "a: [unclosed\n",
            "",
        ] {
            assert_eq!(check(Kind::Yaml, text, rules(), None).len(), 0, "{text:?}");
        }
    }

    #[test]
    fn accelerate_and_lightning_configs_are_reported() {
        let accelerate =
            "compute_environment: LOCAL_MACHINE\ndistributed_type: XLA\ndowncast_bf16: 'no'\ntpu_name: v4\n";
        assert_eq!(codes(Kind::Yaml, accelerate), ["TPU922"]);
        assert_eq!(
            migrated(Kind::Yaml, accelerate),
            "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\ndowncast_bf16: 'no'\ntpu_name: v4\n"
        );
        let quoted = "distributed_type: 'TPU'  # XLA\nnum_processes: 8\n";
        assert_eq!(migrated(Kind::Yaml, quoted), "distributed_type: MULTI_GPU  # XLA\nnum_processes: 8\n");
        let lightning = "trainer:\n  accelerator: tpu\n  strategy: xla\n  devices: 8\nmodel:\n  accelerator: tpu\n";
        assert_eq!(codes(Kind::Yaml, lightning), ["TPU924", "TPU924"]);
    }

    #[test]
    fn notebook_magics() {
        let text = "!PJRT_DEVICE=TPU python train.py\n%env PJRT_DEVICE=TPU\n%pip install x\n!export PJRT_DEVICE=TPU\n";
        let line = |n: usize| {
            let start: usize = text.split_inclusive('\n').take(n).map(str::len).sum();
            let len = text.split_inclusive('\n').nth(n).map_or(0, |l| l.len() - 1);
            range(start, start + len)
        };
        let magics = [
            Magic { range: line(0), kind: MagicKind::Shell { command: line(0).start() + offset(1) } },
            Magic {
                range: line(1),
                kind: MagicKind::Env {
                    name: range(usize::from(line(1).start()) + 5, usize::from(line(1).start()) + 16),
                },
            },
            Magic { range: line(2), kind: MagicKind::Shell { command: line(2).start() + offset(1) } },
            Magic { range: line(3), kind: MagicKind::Shell { command: line(3).start() + offset(1) } },
        ];
        let found = check_magics(text, &magics, rules(), None);
        let mut edits: Vec<Edit> = found.iter().flat_map(|d| d.fix.as_ref().expect("fixable").edits.clone()).collect();
        let out = crate::migrate::fix::apply(text, &mut edits).expect("no overlap");
        assert_eq!(out, "!python train.py\n%pip install x\n");
    }

    #[test]
    fn no_input_panics() {
        let pieces = [
            "export ",
            "PJRT_DEVICE=",
            "\"",
            "'",
            "\\",
            "\n",
            "\r\n",
            "$(",
            "${",
            ")",
            "<<",
            "EOF",
            "é",
            "#",
            ";",
            "&&",
            "|",
            "-e ",
            "- name: ",
            "env:",
            "  ",
            "ENV ",
            "RUN ",
            "python xla_spawn.py ",
            "--command=",
            "bash -c ",
            "`",
        ];
        let mut state = 7u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..(state % 12) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            for kind in [Kind::Shell, Kind::Dockerfile, Kind::Yaml] {
                let _ = migrate(kind, &text, rules(), &Selection { unsafe_fixes: true, ..Selection::default() });
            }
        }
    }
}
