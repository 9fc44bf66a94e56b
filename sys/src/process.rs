//! Processes: signalling a process or a process group, starting a child
//! in a session of its own (daemonising), ignoring the signals a daemon
//! must survive, a flag set on Ctrl-C, sockets a terminal's signals
//! wake, and the system's limit on a new program's arguments.
//!
//! Signals are rustix's [`Signal`] (the same numbers on Linux and macOS
//! for the ones owt sends: `SIGHUP`, `SIGTERM`, `SIGKILL`).

use std::io;
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rustix::process::Pid;
pub use rustix::process::Signal;

/// Sends `signal` to every process of group `pgid` (`kill(-pgid, …)`).
/// Groups 0 and 1 (this process's own group, init's) are never signalled:
/// `false` then, and when the group is gone.
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    match i32::try_from(pgid)
        .ok()
        .filter(|&p| p > 1)
        .and_then(Pid::from_raw)
    {
        Some(pid) => rustix::process::kill_process_group(pid, signal).is_ok(),
        None => false,
    }
}

/// Sends `signal` to process `pid` alone; `false` when it is gone (or
/// `pid` is 0, which would name this process's group).
pub fn signal_process(pid: u32, signal: Signal) -> bool {
    match i32::try_from(pid).ok().and_then(Pid::from_raw) {
        Some(pid) => rustix::process::kill_process(pid, signal).is_ok(),
        None => false,
    }
}

/// Whether process `pid` exists (`kill(pid, 0)`: one of another user's
/// counts too, a zombie too); `false` for 0 (this process's group).
pub fn process_exists(pid: u32) -> bool {
    match i32::try_from(pid).ok().and_then(Pid::from_raw) {
        Some(pid) => matches!(
            rustix::process::test_kill_process(pid),
            Ok(()) | Err(rustix::io::Errno::PERM)
        ),
        None => false,
    }
}

/// Whether process `pid` is alive: it exists ([`process_exists`]) and is
/// not a zombie (its state in `/proc/PID/stat`, where there is one; a
/// process whose state cannot be read counts as alive).
pub fn is_alive(pid: u32) -> bool {
    if !process_exists(pid) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// The kernel's clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit
/// of the process times in `/proc/PID/stat`.
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// The name of the signals owt tells apart in an exit status
/// (`SIGHUP`, `SIGINT`, `SIGKILL`, `SIGTERM`, `SIGSEGV`, `SIGPIPE`) by
/// number; `None` for any other.
pub fn signal_name(raw: i32) -> Option<&'static str> {
    [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::KILL, "SIGKILL"),
        (Signal::TERM, "SIGTERM"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::PIPE, "SIGPIPE"),
    ]
    .into_iter()
    .find(|(s, _)| s.as_raw() == raw)
    .map(|(_, name)| name)
}

/// Makes `cmd`'s child start a session of its own (`setsid` between fork
/// and exec): no controlling terminal, its own process group, so it
/// outlives the terminal and the process group that started it. With
/// `pass = Some((fd, at))`, descriptor `fd` of this process is also handed
/// to the child as number `at`, inherited across exec (`dup2`, or
/// clearing close-on-exec when `fd == at`).
pub fn new_session_on_exec(cmd: &mut Command, pass: Option<(RawFd, RawFd)>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `pre_exec` runs between fork and exec, where only
    // async-signal-safe calls are allowed: setsid, fcntl and dup2 are,
    // and the closure neither allocates nor takes a lock. The descriptor
    // numbers are the caller's, open in the parent when it forks (the
    // child has copies of them); a wrong number makes dup2 or fcntl fail
    // with EBADF, which fails the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            let rc = match pass {
                Some((fd, at)) if fd == at => libc::fcntl(at, libc::F_SETFD, 0),
                Some((fd, at)) => libc::dup2(fd, at),
                None => 0,
            };
            if rc == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Ignores `SIGPIPE` (a write to a gone reader fails with `EPIPE`
/// instead of ending the process) and, with `hangup`, `SIGHUP` too (a
/// daemon outlives the terminal that started it).
pub fn ignore_pipe_signals(hangup: bool) {
    let mut signals = vec![libc::SIGPIPE];
    if hangup {
        signals.push(libc::SIGHUP);
    }
    for signal in signals {
        // SAFETY: SIG_IGN installs no handler, so nothing ever runs in
        // signal context; `signal` is a valid signal number. rustix offers
        // no safe way to set a disposition.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

/// Sets `flag` when `SIGINT` or `SIGTERM` arrives (instead of ending the
/// process), for a loop that stops cleanly.
pub fn flag_on_interrupt(flag: &Arc<AtomicBool>) -> io::Result<()> {
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, flag.clone())?;
    }
    Ok(())
}

/// The terminal signals an attached client handles, each waking its input
/// loop by making a socket readable (signal-hook's self-pipe: the handler
/// only writes a byte). Dropped, the handlers are removed.
pub struct TerminalSignals {
    /// Readable after a window-size change (`SIGWINCH`).
    pub window: UnixStream,
    /// Readable after a hang-up, termination or quit (`SIGHUP`, `SIGTERM`,
    /// `SIGQUIT`): time to detach.
    pub quit: UnixStream,
    ids: Vec<signal_hook::SigId>,
}

impl TerminalSignals {
    /// Installs the handlers; both sockets are non-blocking.
    pub fn register() -> io::Result<TerminalSignals> {
        use signal_hook::consts::{SIGHUP, SIGQUIT, SIGTERM, SIGWINCH};
        let (window, window_tx) = UnixStream::pair()?;
        let (quit, quit_tx) = UnixStream::pair()?;
        window.set_nonblocking(true)?;
        quit.set_nonblocking(true)?;
        let mut ids = vec![signal_hook::low_level::pipe::register(SIGWINCH, window_tx)?];
        for signal in [SIGHUP, SIGTERM, SIGQUIT] {
            ids.push(signal_hook::low_level::pipe::register(
                signal,
                quit_tx.try_clone()?,
            )?);
        }
        Ok(TerminalSignals { window, quit, ids })
    }
}

impl Drop for TerminalSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// The system's limit on a new program's arguments and environment
/// together, in bytes (`ARG_MAX`); `None` when it says none.
pub fn arg_max() -> Option<usize> {
    // SAFETY: sysconf reads a system setting; it has no preconditions.
    let max = unsafe { libc::sysconf(libc::_SC_ARG_MAX) };
    usize::try_from(max).ok().filter(|&m| m > 0)
}

/// Lowers this process's scheduling priority to `nice` (0 normal, 19 the
/// lowest), for background work nobody waits on; what it starts inherits
/// it. Raising it back is not allowed to ordinary users.
pub fn lower_priority(nice: i32) -> io::Result<()> {
    Ok(rustix::process::setpriority_process(None, nice)?)
}
