//! A failure in one file never takes down the run: each file's processing
//! runs under `catch`, and a panic becomes an internal error naming the file,
//! reported while every other file is processed as usual.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Inside `catch` on this thread: the panic hook records instead of printing.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What a caught panic said, and where.
#[derive(Debug, Clone)]
pub struct Panic(pub String);

impl std::fmt::Display for Panic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Run `f`; a panic inside it is returned as `Err` instead of unwinding further.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Panic> {
    install_hook();
    let was = GUARDED.with(|g| g.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    result.map_err(|payload| {
        let recorded = LAST.with(|l| l.borrow_mut().take());
        Panic(recorded.unwrap_or_else(|| payload_text(payload.as_ref())))
    })
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "panic".to_string(),
    }
}

/// Chain a hook that keeps guarded panics quiet (their message goes into the
/// file's error line) and leaves every other panic to the default hook.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                LAST.with(|l| *l.borrow_mut() = Some(format!("{}{at}", payload_text(info.payload()))));
            } else {
                default(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_location() {
        let err = catch(|| -> u32 { panic!("boom {}", 7) }).unwrap_err();
        assert!(err.0.starts_with("boom 7 at src/isolate.rs:"), "{err}");
        assert_eq!(catch(|| 5).unwrap(), 5);
    }
}
