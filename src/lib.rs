//! xla2tpu: migrate PyTorch/XLA and Optimum TPU code to TorchTPU, prove the
//! migration runs on a CPU emulation of TorchTPU, and check Hugging Face
//! models against TorchTPU's real operator registry.
//!
//! One module per capability, shared plumbing beside them:
//! - [`migrate`]: the migrate/check engine. Data flows one way: discover
//!   files → parse → resolve names → match rules → fixes → render.
//! - [`run`]: `xla2tpu run`, a program on the embedded TorchTPU emulator.
//! - [`ops`]: operator profiles and backend registries.
//! - [`sweep`]: the Hugging Face compatibility report.
//! - [`config`], [`baseline`], [`noqa`]: what a project configures (`[tool.xla2tpu]`), the
//!   findings it has accepted, and the `# noqa` comments that silence one.
//! - [`source`], [`discover`], [`write`], [`cache`], [`isolate`], [`timings`]: reading, finding
//!   and writing files, the cache, keeping one file's failure from taking down a run, and where
//!   a run's time goes; [`output`]: colour, report files and counts, the same in every command.
//!
//! Layers, bottom up: a module imports only from below it, never one that imports it back
//! (`tests/layers.rs` draws the graph from the sources and fails on a circle).
//! 1. Text and files: [`source`], [`discover`], [`write`], [`cache`], [`isolate`], [`timings`],
//!    [`output`], [`redact`], [`html`].
//! 2. What every file kind shares, in [`migrate`]: `target` (what a file is, which TorchTPU it is
//!    migrated for), `style` (how a file writes the code we insert), `fix` and `diagnostic`
//!    (edits and findings: data, nothing there knows a rule), `notes`.
//! 3. Rules as data (`migrate::rules`) and [`noqa`].
//! 4. What a run establishes: `migrate::facts` (it reads files through a `FileReader` it is
//!    handed, so it knows no checker), `migrate::selection`, the semantic model.
//! 5. Side by side, neither importing the other: the Python checker (`migrate::checker`) and the
//!    file-kind handlers (`migrate::project`: dependencies, launch files, configs, hardware).
//! 6. The pipeline: a Python file's fixpoint (`migrate` itself), the notebook handler that runs it
//!    on joined cells, `migrate::reader` (the checker's and handlers' answers to the facts),
//!    rendering and reports, [`config`] and [`baseline`].
//! 7. Commands: `migrate::commands` and [`cli`]; beside the engine, [`run`], [`ops`], [`sweep`].

pub mod baseline;
pub mod cache;
pub mod cli;
pub mod config;
pub mod discover;
pub mod html;
pub mod isolate;
pub mod migrate;
pub mod noqa;
pub mod ops;
pub mod output;
pub mod redact;
pub mod run;
pub mod source;
pub mod sweep;
pub mod timings;
pub mod write;
