//! Bytes → decode → parse → check → migrate (safe and unsafe fixes) → migrate again, asserting
//! the properties of `tests/support/properties.rs` (shared with `tests/fuzz_corpus.rs` and
//! `tests/mutation.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/properties.rs"]
mod properties;

fuzz_target!(|data: &[u8]| {
    properties::check_bytes(data);
});
