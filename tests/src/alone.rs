//! Which tests run side by side. The end-to-end tests are one test binary
//! (`tests/tests/main.rs`), so every test shares its process with all the
//! others, `cargo test`'s threads (one per core) running any of them side
//! by side. Most do not mind; the few that measure the machine (rates,
//! republish times) or load it heavily run *alone*: [`alone`] waits until
//! no other test is running, and no other test starts until it is done.
//!
//! "Running" means holding a test environment: every environment's
//! constructor ([`crate::TestEnv::new`], the session tests' `Env::new`)
//! calls [`beside_others`]. What a test holds, it holds until its thread
//! ends (libtest runs each test on its own thread), so a test that makes
//! two environments, or drops one early, still counts once.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long [`alone`] waits for the tests beside it to end before it fails:
/// longer than any one test takes, so only a stuck test (a thread left
/// behind by a timed-out test, still holding its environment) trips it.
const ALONE_WAIT: Duration = Duration::from_secs(20 * 60);

struct Running {
    /// Tests holding an environment beside others.
    beside: usize,
    /// Whether a test runs alone now.
    alone: bool,
}

static RUNNING: Mutex<Running> = Mutex::new(Running {
    beside: 0,
    alone: false,
});
static CHANGED: Condvar = Condvar::new();

fn running() -> MutexGuard<'static, Running> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// What this thread's test holds; released when the thread ends.
enum Held {
    Beside,
    Alone,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut running = running();
        match self {
            Held::Beside => running.beside -= 1,
            Held::Alone => running.alone = false,
        }
        CHANGED.notify_all();
    }
}

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Counts the calling test as running (once per test): waits while a test
/// runs alone. Every test environment's constructor calls it.
///
/// It never waits for a test that only *asks* to run alone, so a test whose
/// helper thread makes a second environment cannot deadlock with it; [`alone`]
/// gets its turn when the running tests end, before the next one starts.
pub fn beside_others() {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.is_some() {
            return;
        }
        let mut running = running();
        while running.alone {
            running = CHANGED.wait(running).unwrap_or_else(|e| e.into_inner());
        }
        running.beside += 1;
        *held = Some(Held::Beside);
    });
}

/// Runs the calling test alone: waits until no other test holds an
/// environment, and keeps every other test from starting until this one
/// ends. Call it first, before the test makes its environment, and make
/// that environment on the test's own thread.
///
/// # Panics
///
/// When the test already made an environment (it would wait for itself),
/// or when the other tests do not end within 20 minutes.
pub fn alone() {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        match *held {
            Some(Held::Alone) => return,
            Some(Held::Beside) => {
                panic!("owt_e2e::alone() must come before the test makes its environment")
            }
            None => {}
        }
        let running = running();
        let (mut running, waited) = CHANGED
            .wait_timeout_while(running, ALONE_WAIT, |r| r.alone || r.beside > 0)
            .unwrap_or_else(|e| e.into_inner());
        assert!(
            !waited.timed_out(),
            "waited {ALONE_WAIT:?} for the other tests to end ({} still hold an environment: a stuck one?)",
            running.beside
        );
        running.alone = true;
        *held = Some(Held::Alone);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_that_asks_to_run_alone_after_making_its_environment_fails_instead_of_waiting_for_itself(
    ) {
        let outcome = std::thread::spawn(|| {
            beside_others();
            let asked = std::panic::catch_unwind(alone);
            (asked.is_err(), running().beside)
        })
        .join()
        .unwrap();
        assert_eq!(outcome, (true, 1));
        // The thread ended: what it held is released.
        assert_eq!(running().beside, 0);
        assert!(!running().alone);
    }
}
