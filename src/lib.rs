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
