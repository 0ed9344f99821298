//! One requirement string (setup.py, requirements, pyproject) through the property
//! `check_requirement` of `tests/support/properties.rs` (shared with `tests/fuzz_budget.rs`, which runs
//! it on the stable toolchain for a fixed time in every `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| {
    properties::check_requirement(data);
});
