//! Guidance that more than one handler writes (the Python checker and the launch handler
//! both keep a torch_xla variable's assignments while a file of the run reads it): one wording.

/// What TorchTPU's own device test is, for notes that tell a person what to write instead.
pub const DEVICE_TEST: &str =
    "torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == \"tpu\"";

/// Why a read of a variable torch_xla used (and fixes would delete) is left for a person; `then`
/// says what to do.
pub fn read_note(var: &str, then: &str) -> String {
    format!(
        "read as a value: TorchTPU neither reads nor sets `{var}`, so it is now only the project's own switch \
         (its assignments in this run are kept for this read); {then}"
    )
}

/// What a Python read of such a variable should test instead.
pub fn python_read_advice() -> String {
    format!("to select TorchTPU, test `{DEVICE_TEST}` instead")
}

/// Why an assignment of such a variable is kept: `at` reads it.
pub fn kept_note(at: &str, var: &str) -> String {
    format!(
        "kept: {at} reads `{var}` as a value, the project's own switch, which deleting this would turn off \
         (TorchTPU itself ignores the variable); once that test is TorchTPU's device test (`{DEVICE_TEST}`), \
         delete this"
    )
}
