//! An SPMD program (`xr.use_spmd()`) ran as one process driving every chip, so it was started
//! with plain `python`. Migrated, it is one process per chip and must be started by torchrun;
//! where no launch script of the run starts it (TPU925 converts those), the report says so.

use ruff_text_size::Ranged;

use super::{Checker, Diagnostic};
use crate::migrate::facts::{SPMD_HELPER_NAME, USE_SPMD};
use crate::migrate::rules::Builtin;

impl Checker<'_> {
    /// TPU926 at the program's first `use_spmd()` (or, migrated, the call TPU216 made of it),
    /// unless a launch script of the run starts an SPMD program.
    pub(super) fn report_unlaunched_spmd(&self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(rule) = self.rules.builtin(Builtin::SpmdUnlaunched) else { return };
        let last = USE_SPMD.rsplit('.').next().unwrap_or(USE_SPMD);
        if !self.text.contains(last) && !self.text.contains(SPMD_HELPER_NAME) {
            return;
        }
        if self.run.is_some_and(|run| run.launches_spmd_program()) {
            return;
        }
        // Not the calls inside the rules' helpers (`torchtpu_device_mesh` makes the process one of
        // the job's too): the program's own.
        let helpers: Vec<_> = self
            .inventory
            .defs
            .values()
            .filter(|d| self.rules.is_shared_helper(d.name.as_str()))
            .map(|d| d.range())
            .collect();
        let calls = self.inventory.calls_of(self.sem, &[USE_SPMD, SPMD_HELPER_NAME]);
        let Some(call) = calls.into_iter().find(|c| !helpers.iter().any(|h| h.contains_range(c.range()))) else {
            return;
        };
        let message = self.message(rule, &self.text[call.func.range()]);
        diagnostics.push(Diagnostic { rule, range: call.range(), message, note: None, fix: None });
    }
}

