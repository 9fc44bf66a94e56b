//! How much memory agents use, and how much the machine has left: the
//! resident memory of an agent's whole process tree (sampled by its
//! session host and recorded as a `memory` fact), `/proc/meminfo`, and
//! the kernel's memory pressure (`/proc/pressure/memory`, PSI).
//!
//! Invariant: reads `/proc` (through `platform::procs`) only; never
//! signals a process.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::status::MemoryFact;

/// The pids of `root` and every process below it (children of any of its
/// threads, recursively), `root` first. Empty when `root` is gone.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Some(children) = crate::platform::procs::children(pid) else {
            continue;
        };
        out.push(pid);
        todo.extend(children);
    }
    out
}

/// Resident memory of one process, in bytes (`/proc/<pid>/statm`).
pub fn process_rss(pid: u32) -> Option<u64> {
    Some(crate::platform::procs::resident_pages(pid)? * page_size())
}

/// Resident memory of `root`'s whole process tree, in bytes (`None` when
/// `root` is gone). Pages two processes share count for each.
pub fn tree_rss(root: u32) -> Option<u64> {
    let pids = process_tree(root);
    if pids.is_empty() {
        return None;
    }
    Some(pids.into_iter().filter_map(process_rss).sum())
}

fn page_size() -> u64 {
    crate::platform::allocator::page_size() as u64
}

/// What `/proc/meminfo` says about the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineMemory {
    pub total: u64,
    /// What can be given to programs without swapping (`MemAvailable`).
    pub available: u64,
}

/// The machine's memory now (`None` where `/proc/meminfo` is missing).
pub fn machine_memory() -> Option<MachineMemory> {
    parse_meminfo(&crate::platform::procs::meminfo()?)
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text (pure).
pub fn parse_meminfo(text: &str) -> Option<MachineMemory> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim_start_matches(':')
            .split_ascii_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some(MachineMemory {
        total: field("MemTotal")?,
        available: field("MemAvailable")?,
    })
}

/// The kernel's memory pressure (PSI): the share of the last 10 seconds
/// in which some tasks (`some`), or all of them (`full`), waited for
/// memory, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pressure {
    pub some_avg10: f64,
    pub full_avg10: f64,
}

/// `/proc/pressure/memory` now (`None` where the kernel has no PSI).
pub fn memory_pressure() -> Option<Pressure> {
    parse_pressure(&crate::platform::procs::memory_pressure()?)
}

/// The `avg10` figures of a PSI text (pure).
pub fn parse_pressure(text: &str) -> Option<Pressure> {
    let avg10 = |kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        line.split_ascii_whitespace()
            .find_map(|w| w.strip_prefix("avg10="))?
            .parse()
            .ok()
    };
    Some(Pressure {
        some_avg10: avg10("some")?,
        full_avg10: avg10("full").unwrap_or(0.0),
    })
}

/// When the machine is close to running out of memory, the sentence that
/// says so (pure): less than `min_free` available, or the kernel's
/// pressure stall information shows tasks waiting for memory (some ≥ 10%
/// or full ≥ 1% of the last 10 s) while less than [`STALL_ROOM`] ×
/// `min_free` is available — what comes before the OOM killer picks a
/// process, and agents are the largest. Stalls with more than that
/// available are the kernel taking back file cache under heavy disk
/// traffic, not a coming OOM kill: no warning. `agents` are (name,
/// resident bytes), largest named first.
pub fn pressure_warning(
    memory: Option<MachineMemory>,
    pressure: Option<Pressure>,
    min_free: u64,
    agents: &[(String, u64)],
) -> Option<String> {
    use crate::config::human_bytes;
    let low = memory.filter(|m| m.available < min_free);
    let short = memory.is_none_or(|m| m.available < min_free.saturating_mul(STALL_ROOM));
    let stalled = pressure
        .filter(|p| p.some_avg10 >= 10.0 || p.full_avg10 >= 1.0)
        .filter(|_| short);
    if low.is_none() && stalled.is_none() {
        return None;
    }
    let mut why = Vec::new();
    if let Some(m) = memory {
        why.push(format!(
            "{} of {} available",
            human_bytes(m.available),
            human_bytes(m.total)
        ));
    }
    if let Some(p) = stalled {
        why.push(format!(
            "tasks waited for memory {:.0}% of the last 10 s",
            p.some_avg10.max(p.full_avg10)
        ));
    }
    let mut largest: Vec<&(String, u64)> = agents.iter().filter(|(_, rss)| *rss > 0).collect();
    largest.sort_by_key(|a| std::cmp::Reverse(a.1));
    let named: Vec<String> = largest
        .iter()
        .take(3)
        .map(|(name, rss)| format!("{name} {}", human_bytes(*rss)))
        .collect();
    let agents_text = if named.is_empty() {
        String::new()
    } else {
        format!(" Largest agents: {}.", named.join(", "))
    };
    Some(format!(
        "memory is running out ({}): the kernel may soon kill a process, likely an agent.{agents_text} Stop one (`owt delete NAME`) or close other programs; queued sessions wait until there is room.",
        why.join("; ")
    ))
}

/// Below this many times `min_free_memory` available, the kernel's
/// memory stalls count as a coming shortage ([`pressure_warning`]).
pub const STALL_ROOM: u64 = 4;

/// How often a host samples its agent's memory.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(2);

/// A host's view of its agent's memory: samples the process tree now and
/// then and says when the `memory` fact should be recorded again (the
/// resident size moved by a tenth, or a new peak), and when the agent
/// gave back a lot of memory (queued sessions may fit now).
#[derive(Debug)]
pub struct Sampler {
    agent_pid: u32,
    next: Instant,
    recorded: Option<MemoryFact>,
    peak: u64,
    /// The resident size when the queue was last told about freed memory.
    high_water: u64,
}

/// What a sample found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Record this as the `memory` fact.
    pub record: Option<MemoryFact>,
    /// The agent gave back at least [`FREED_ENOUGH`] since it was largest.
    pub freed: bool,
}

/// Memory an agent must give back before queued sessions are looked at.
pub const FREED_ENOUGH: u64 = 256 * 1024 * 1024;

impl Sampler {
    pub fn new(agent_pid: u32) -> Sampler {
        Sampler {
            agent_pid,
            next: Instant::now(),
            recorded: None,
            peak: 0,
            high_water: 0,
        }
    }

    /// Samples when due; `None` when not due or the agent is gone.
    pub fn poll(&mut self) -> Option<Sample> {
        if Instant::now() < self.next {
            return None;
        }
        self.next = Instant::now() + SAMPLE_EVERY;
        let rss = tree_rss(self.agent_pid)?;
        Some(self.observe(rss))
    }

    /// What a resident size of `rss` means (pure apart from the state).
    pub fn observe(&mut self, rss: u64) -> Sample {
        self.peak = self.peak.max(rss);
        self.high_water = self.high_water.max(rss);
        let fact = MemoryFact {
            rss_bytes: rss,
            peak_bytes: self.peak,
        };
        let moved = |then: u64, now: u64| now.abs_diff(then) * 10 > then.max(1);
        let record = match self.recorded {
            None => true,
            Some(last) => moved(last.rss_bytes, rss) || self.peak > last.peak_bytes * 11 / 10,
        };
        if record {
            self.recorded = Some(fact);
        }
        let freed = self.high_water.saturating_sub(rss) >= FREED_ENOUGH;
        if freed {
            self.high_water = rss;
        }
        Sample {
            record: record.then_some(fact),
            freed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_pressure_are_read() {
        let meminfo =
            "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   12288000 kB\n";
        assert_eq!(
            parse_meminfo(meminfo),
            Some(MachineMemory {
                total: 24_576_000 * 1024,
                available: 12_288_000 * 1024
            })
        );
        let psi = "some avg10=12.50 avg60=3.00 avg300=0.10 total=123\nfull avg10=1.25 avg60=0.00 avg300=0.00 total=45\n";
        assert_eq!(
            parse_pressure(psi),
            Some(Pressure {
                some_avg10: 12.5,
                full_avg10: 1.25
            })
        );
        assert_eq!(parse_pressure("nonsense"), None);
    }

    #[test]
    fn a_warning_comes_before_the_oom_killer() {
        const GIB: u64 = 1024 * 1024 * 1024;
        let machine = |available| {
            Some(MachineMemory {
                total: 16 * GIB,
                available,
            })
        };
        let calm = Pressure {
            some_avg10: 0.5,
            full_avg10: 0.0,
        };
        let agents = vec![
            ("small".to_string(), GIB / 4),
            ("big".to_string(), 3 * GIB),
            ("queued".to_string(), 0),
        ];
        assert_eq!(
            pressure_warning(machine(8 * GIB), Some(calm), GIB, &agents),
            None
        );
        let low = pressure_warning(machine(GIB / 2), Some(calm), GIB, &agents).unwrap();
        assert!(low.contains("512 MiB of 16 GiB available"), "{low}");
        assert!(
            low.contains("Largest agents: big 3 GiB, small 256 MiB."),
            "{low}"
        );
        let stalled = Pressure {
            some_avg10: 23.4,
            full_avg10: 2.0,
        };
        let text = pressure_warning(machine(3 * GIB), Some(stalled), GIB, &[]).unwrap();
        assert!(
            text.contains(
                "3 GiB of 16 GiB available; tasks waited for memory 23% of the last 10 s"
            ),
            "{text}"
        );
        assert!(!text.contains("Largest"), "{text}");
        // Stalls with half the machine available: the kernel reclaiming
        // file cache under disk traffic, not a coming OOM kill.
        assert_eq!(
            pressure_warning(machine(8 * GIB), Some(stalled), GIB, &agents),
            None
        );
        let unknown = pressure_warning(None, Some(stalled), GIB, &[]).unwrap();
        assert!(unknown.contains("waited for memory 23%"), "{unknown}");
        assert_eq!(pressure_warning(None, None, GIB, &agents), None);
    }

    #[test]
    fn this_process_tree_is_found_and_measured() {
        let me = std::process::id();
        assert_eq!(process_tree(me)[0], me);
        // A shell waiting on its child: two idle processes whose memory
        // holds still (this test process's does not: other tests allocate
        // and `memory::drop_clean_code_pages` unmaps code between reads).
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 30; :"])
            .spawn()
            .unwrap();
        let root = shell.id();
        assert!(process_tree(me).contains(&root));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // The child must have become `sleep`: between fork and exec it is a
        // copy of the shell whose memory changes under the reads.
        let tree = loop {
            let tree = process_tree(root);
            let comm = |pid: &u32| crate::platform::procs::command_name(*pid);
            if tree.len() == 2 && comm(&tree[1]).is_some_and(|c| c == "sleep") {
                break tree;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the shell's sleep never appeared: {tree:?}"
            );
            std::thread::yield_now();
        };
        assert_eq!(tree[0], root);
        // Equal but for a page or two the kernel may fault in between reads
        // (the exec'd `sleep` may still be faulting its pages in: read again
        // until two readings agree, or fail at the deadline).
        loop {
            let parts = process_rss(tree[0]).unwrap() + process_rss(tree[1]).unwrap();
            let whole = tree_rss(root).unwrap();
            if whole.abs_diff(parts) <= 64 * 1024 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{whole} vs {parts}");
            std::thread::yield_now();
        }
        let _ = std::process::Command::new("kill")
            .arg(tree[1].to_string())
            .status();
        shell.kill().unwrap();
        shell.wait().unwrap();
        assert_eq!(tree_rss(u32::MAX), None);
    }

    #[test]
    fn the_sampler_records_moves_and_peaks_and_says_when_memory_is_freed() {
        const MIB: u64 = 1024 * 1024;
        let mut s = Sampler::new(1);
        let first = s.observe(100 * MIB);
        assert_eq!(first.record.map(|f| f.rss_bytes), Some(100 * MIB));
        assert_eq!(s.observe(105 * MIB).record, None, "5% is not worth a fact");
        let grown = s.observe(500 * MIB).record.unwrap();
        assert_eq!((grown.rss_bytes, grown.peak_bytes), (500 * MIB, 500 * MIB));
        let shrunk = s.observe(200 * MIB);
        assert_eq!(shrunk.record.map(|f| f.peak_bytes), Some(500 * MIB));
        assert!(shrunk.freed, "300 MiB given back");
        assert!(!s.observe(150 * MIB).freed, "measured from the last notice");
    }
}
