//! The fuzz targets of `fuzz/` on the stable toolchain, for a fixed time budget, so that CI
//! fuzzes on every run (cargo-fuzz needs nightly): seeded random mutations of notebook cells and
//! requirement strings through the properties of `tests/support/properties.rs`
//! (`check_notebook_cell`, `check_requirement`: the inputs that found issue 42's items 1 and 2),
//! Each target runs `XLA2TPU_FUZZ_SECONDS` (default 15) from a fixed seed
//! (`XLA2TPU_FUZZ_SEED=N` or `random` for another draw); a failing input is written to
//! `target/fuzz-failures/` and printed.

#[path = "support/properties.rs"]
mod properties;

use std::time::{Duration, Instant};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

const CELLS: &[&str] = &[
    "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nprint(device)\n",
    "%%writefile train.py\nimport torch_xla\n\ndef f():\n    return 1\n",
    "print \"python 2\"\n\nprint \"again\"\n",
    "!pip install torch_xla[tpu] -f https://storage.googleapis.com/libtpu-releases/index.html\n",
    "%%bash\nexport PJRT_DEVICE=TPU\ncat > a.sh <<'EOF'\nexport XLA_USE_BF16=1\nEOF\npython train.py\n",
    "%env PJRT_DEVICE=TPU\nimport os\nos.environ['XLA_USE_BF16'] = '1'\n",
    "%%time\nfor i in range(3):\n    xm.mark_step()\n",
    "def f(x):\n    return x\n\n\nclass A:\n    pass\n",
];

const REQUIREMENTS: &[&str] = &[
    "torch_xla[tpu]==2.1.0",
    "torch~=2.5.0",
    "torch>=2.0,<2.6",
    "libtpu-nightly==0.1.dev20240101",
    "torch-xla @ https://example.com/torch_xla-2.1-cp310-linux_x86_64.whl",
    "optimum-tpu>=0.2; python_version > '3.8'",
    "jax[tpu]",
    "numpy",
    "-f https://storage.googleapis.com/libtpu-releases/index.html",
];

/// Pieces real files are made of, for insertion.
const TOKENS: &[&str] = &[
    ")",
    "(",
    ".",
    "[",
    "]",
    "-",
    "_",
    "\"",
    "'",
    "\n",
    "\n\n",
    "    ",
    "\t",
    ",",
    ";",
    "@",
    "==",
    "~=",
    ">=",
    "!",
    "%",
    "%%writefile x.py\n",
    "%%bash\n",
    "print \"x\"\n",
    "!pip install ",
    "<<EOF\n",
    "\nEOF\n",
    "\\\n",
    "torch_xla",
    "torch",
    "xm.mark_step()",
    "import torch_xla\n",
    "#",
    " ",
    "[tpu]",
    "\u{e9}",
    "\r\n",
    "\r",
];

fn mutate(rng: &mut Rng, seeds: &[&str]) -> Vec<u8> {
    let mut b = seeds[rng.below(seeds.len())].as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(6) {
            0 | 1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            2 if !b.is_empty() => {
                let end = (at + 1 + rng.below(8)).min(b.len());
                b.drain(at.min(end)..end);
            }
            3 if !b.is_empty() => {
                let start = rng.below(b.len());
                let end = (start + 1 + rng.below(16)).min(b.len());
                let piece = b[start..end].to_vec();
                b.splice(at..at, piece);
            }
            4 => {
                let other = seeds[rng.below(seeds.len())].as_bytes();
                let from = rng.below(other.len() + 1);
                b.splice(at..at, other[from..].iter().copied());
            }
            _ => {
                if let Some(byte) = b.get_mut(at) {
                    *byte = (rng.next() & 0x7f) as u8;
                }
            }
        }
    }
    b
}

/// Run `property` on mutants of `seeds` (and the seeds themselves) for the budget.
fn fuzz(name: &str, seeds: &[&str], property: fn(&[u8])) {
    let budget =
        Duration::from_secs(std::env::var("XLA2TPU_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15));
    // Fixed by default, so that CI is reproducible (a faster machine goes further down the same
    // sequence); `XLA2TPU_FUZZ_SEED=random` explores.
    let seed = match std::env::var("XLA2TPU_FUZZ_SEED").ok().as_deref() {
        Some("random") => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        }
        Some(n) => n.parse().expect("XLA2TPU_FUZZ_SEED is a number or `random`"),
        None => 0x5eed_f022_2026,
    };
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut runs = 0u64;
    let mut inputs: Vec<Vec<u8>> = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    while started.elapsed() < budget {
        let input = inputs.pop().unwrap_or_else(|| mutate(&mut rng, seeds));
        runs += 1;
        if let Err(panic) = std::panic::catch_unwind(|| property(&input)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-{seed}-{runs}"));
            let _ = std::fs::write(&file, &input);
            panic!(
                "{name}: input {:?} breaks a property (XLA2TPU_FUZZ_SEED={seed}, saved as {}): {message}",
                String::from_utf8_lossy(&input),
                file.display()
            );
        }
    }
    println!("{name}: {runs} inputs in {:.1?} (XLA2TPU_FUZZ_SEED={seed})", started.elapsed());
}

#[test]
fn notebook_cells() {
    fuzz("notebook_cell", CELLS, properties::check_notebook_cell);
}

#[test]
fn requirement_strings() {
    fuzz("requirement", REQUIREMENTS, properties::check_requirement);
}
