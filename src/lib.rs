//! xla2tpu: migrate PyTorch/XLA and Optimum TPU code to TorchTPU, and check
//! Hugging Face models against TorchTPU's real operator registry.
//!
//! Data flows one way: discover files → parse → resolve names → match rules
//! → fixes → render.

pub mod checker;
pub mod cli;
pub mod commands;
pub mod discover;
pub mod engine;
pub mod fix;
pub mod ops;
pub mod render;
pub mod rules;
pub mod semantic;
pub mod source;
pub mod sweep;
