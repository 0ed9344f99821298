//! The program under `xla2tpu run` runs in its own process group, so that it and everything it
//! starts (spawned ranks, torchrun's workers, a data loader's processes) can be signalled and
//! stopped as one: a SIGTERM, SIGINT or SIGHUP that reaches xla2tpu (a CI step's timeout) is
//! passed on to the group, `--timeout` stops the group, and whatever of the group outlives the
//! program is stopped when it ends. On a terminal the group is made the foreground one, so the
//! program reads its input (`input()`, pdb) and gets Ctrl-C itself, as without xla2tpu.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How a run ended.
pub enum Ended {
    Exited(ExitStatus),
    /// `--timeout` passed; the group was stopped.
    TimedOut,
    /// xla2tpu got this signal; the group got it too, then was stopped.
    Signalled(i32),
}

/// How long a group gets to exit after SIGTERM (or the forwarded signal) before SIGKILL.
const GRACE: Duration = Duration::from_secs(10);
/// How long what is left of the group after the program exits gets before SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(20);
const FORWARDED: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The first forwarded signal xla2tpu received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: i32) {
    // Only an atomic store: all an async-signal handler may safely do here.
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

pub fn run_group(mut command: Command, timeout: Option<Duration>) -> std::io::Result<Ended> {
    // SAFETY: `isatty` only queries a descriptor.
    let terminal = unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() };
    command.process_group(0);
    // SAFETY: the closure calls only async-signal-safe functions (signal, tcsetpgrp, getpid).
    unsafe {
        command.pre_exec(move || {
            if terminal {
                // The child's own group takes the terminal; SIGTTOU would stop it otherwise.
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
            // Restore what a program expects if our parent ignored them (nohup, some CI).
            for s in FORWARDED {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    RECEIVED.store(0, Ordering::SeqCst);
    let previous: Vec<(i32, libc::sighandler_t)> = FORWARDED
        .iter()
        // SAFETY: `record` is async-signal-safe; the previous handlers are restored below.
        .map(|&s| (s, unsafe { libc::signal(s, record as *const () as libc::sighandler_t) }))
        .collect();
    let spawned = command.spawn();
    let restore = || {
        for (s, h) in &previous {
            // SAFETY: putting back the handler that was there before.
            unsafe { libc::signal(*s, *h) };
        }
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            restore();
            return Err(e);
        }
    };
    let group = child.id() as i32;
    if terminal {
        // Also from this side: whichever runs first, the group has the terminal before it reads.
        // SAFETY: plain calls on descriptor 0; SIGTTOU ignored while we are not in the foreground.
        unsafe {
            let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, group);
            libc::signal(libc::SIGTTOU, old);
        }
    }
    let started = Instant::now();
    let mut stopping: Option<(Instant, Ended)> = None;
    let ended = loop {
        if let Some(status) = child.try_wait()? {
            break match stopping {
                Some((_, why)) => why,
                None => Ended::Exited(status),
            };
        }
        if stopping.is_none() {
            let received = RECEIVED.load(Ordering::SeqCst);
            if received != 0 {
                signal_group(group, received);
                stopping = Some((Instant::now(), Ended::Signalled(received)));
            } else if timeout.is_some_and(|t| started.elapsed() >= t) {
                signal_group(group, libc::SIGTERM);
                stopping = Some((Instant::now(), Ended::TimedOut));
            }
        } else if let Some((since, _)) = &stopping
            && since.elapsed() >= GRACE
        {
            signal_group(group, libc::SIGKILL);
        }
        std::thread::sleep(POLL);
    };
    stop_leftovers(group);
    if terminal {
        // SAFETY: as above; the terminal goes back to our own group.
        unsafe {
            let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, libc::getpgrp());
            libc::signal(libc::SIGTTOU, old);
        }
    }
    restore();
    Ok(ended)
}

fn signal_group(group: i32, signal: i32) -> bool {
    // SAFETY: a negative pid names the process group the child leads.
    unsafe { libc::kill(-group, signal) == 0 }
}

/// Processes of the group still running once the program ended (a worker it did not wait for):
/// SIGTERM, a moment, then SIGKILL.
fn stop_leftovers(group: i32) {
    if !signal_group(group, libc::SIGTERM) {
        return; // nobody left
    }
    let since = Instant::now();
    while since.elapsed() < LEFTOVER_GRACE {
        if !signal_group(group, 0) {
            return;
        }
        std::thread::sleep(POLL);
    }
    signal_group(group, libc::SIGKILL);
}
