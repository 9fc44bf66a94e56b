//! What the kernel says about processes and the machine's memory, read
//! from `/proc` (Linux): the processes there are, each one's command name,
//! working folder, environment, command line, start time, open files,
//! children and resident memory; the machine's memory and its memory
//! pressure. Where there is no `/proc` (macOS) every function finds
//! nothing (empty, `None`): callers report less (docs/platforms.md). Reads
//! only; nothing here signals a process.

use std::path::PathBuf;

/// The ids of the processes there are now (empty without `/proc`).
pub fn pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Process `pid`'s command name (`/proc/PID/comm`, trimmed).
pub fn command_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Process `pid`'s working folder (`/proc/PID/cwd`; `None` for another
/// user's process).
pub fn working_folder(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Process `pid`'s environment as it started, `NAME=value` entries each
/// ended by a NUL (`/proc/PID/environ`; `None` for another user's
/// process).
pub fn environment(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// Process `pid`'s arguments, each ended by a NUL (`/proc/PID/cmdline`).
pub fn command_line(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// When process `pid` started, in clock ticks after boot (field 22 of
/// `/proc/PID/stat`).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Counted after the `)` that ends the command name.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// When the machine booted, in Unix milliseconds (`btime` in
/// `/proc/stat`).
pub fn boot_time_ms() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let secs: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(secs * 1000)
}

/// What process `pid`'s descriptors are open on (the targets of
/// `/proc/PID/fd/*`; `None` for another user's process).
pub fn open_files(pid: u32) -> Option<Vec<PathBuf>> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .collect(),
    )
}

/// The children of every thread of process `pid`
/// (`/proc/PID/task/*/children`); `None` when `pid` is gone.
pub fn children(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        out.extend(
            children
                .split_ascii_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    Some(out)
}

/// Process `pid`'s resident pages (the second field of
/// `/proc/PID/statm`).
pub fn resident_pages(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    statm.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The text of `/proc/meminfo` (the machine's memory).
pub fn meminfo() -> Option<String> {
    std::fs::read_to_string("/proc/meminfo").ok()
}

/// The text of `/proc/pressure/memory` (the kernel's memory pressure,
/// PSI; `None` where the kernel has none).
pub fn memory_pressure() -> Option<String> {
    std::fs::read_to_string("/proc/pressure/memory").ok()
}
