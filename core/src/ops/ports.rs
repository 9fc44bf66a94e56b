//! `[worktree] ports = N`: each session's own block of TCP ports, so dev
//! servers in parallel worktrees never fight over one.
//!
//! A block is N consecutive ports in [`RANGE`] that no other session holds
//! and nothing listens on when it is given (tried by binding each port).
//! It is recorded in the store, held while the session lives (restarts of
//! owt, of the host or of the machine keep it) and freed when the session
//! is removed. The agent and the setup script get `OWT_PORT` (the first
//! port) and `OWT_PORTS` (every port, separated by spaces).

use std::ops::RangeInclusive;

use anyhow::bail;

use crate::store::{SessionRow, Store};

/// Where blocks are taken from: above the usual development ports (3000,
/// 5173, 8080, …) and below Linux's ephemeral range (32768–60999), so the
/// kernel never hands one of them to an outgoing connection.
pub const RANGE: RangeInclusive<u16> = 20_000..=32_767;

/// The most ports one session may ask for.
pub const MAX_PORTS: u16 = 256;

/// Gives `session` its block of `count` ports (nothing when 0; the block
/// it has when it has one).
pub fn allocate(store: &mut Store, session: &SessionRow, count: u16) -> anyhow::Result<Vec<u16>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_PORTS {
        bail!("[worktree] ports = {count} is more than the {MAX_PORTS} ports a session may hold");
    }
    match store.allocate_ports(session.id, count, RANGE, port_is_free)? {
        Some((first, n)) => Ok((first..first + n).collect()),
        None => bail!(
            "no block of {count} free ports is left in {}-{} ({} sessions hold ports); delete sessions you no longer need, or lower [worktree] ports",
            RANGE.start(),
            RANGE.end(),
            store.port_blocks()?.len()
        ),
    }
}

/// The session's ports (empty when it has none).
pub fn of(store: &Store, session_id: i64) -> Vec<u16> {
    match store.port_block(session_id) {
        Ok(Some((first, n))) => (first..first.saturating_add(n)).collect(),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!("reading the ports of session {session_id}: {e}");
            Vec::new()
        }
    }
}

/// `OWT_PORT` and `OWT_PORTS` for `ports` (nothing when empty).
pub fn env(ports: &[u16]) -> Vec<(String, String)> {
    let Some(first) = ports.first() else {
        return Vec::new();
    };
    let all: Vec<String> = ports.iter().map(u16::to_string).collect();
    vec![
        ("OWT_PORT".to_string(), first.to_string()),
        ("OWT_PORTS".to_string(), all.join(" ")),
    ]
}

/// Whether nothing listens on `port` now: a listener on every address
/// (what a dev server binds) can be made. A server bound to one address
/// (`127.0.0.1:port`, `[::]:port`) makes it fail as well.
fn port_is_free(port: u16) -> bool {
    let v4 = std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, port)).is_ok();
    v4 && match std::net::TcpListener::bind((std::net::Ipv6Addr::UNSPECIFIED, port)) {
        Ok(_) => true,
        // No IPv6 on this machine: nothing can listen there either.
        Err(e) => {
            e.kind() == std::io::ErrorKind::AddrNotAvailable
                || crate::platform::fd::is_unsupported_family(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_the_first_port_and_all_of_them() {
        assert_eq!(
            env(&[20_000, 20_001, 20_002]),
            vec![
                ("OWT_PORT".to_string(), "20000".to_string()),
                ("OWT_PORTS".to_string(), "20000 20001 20002".to_string()),
            ]
        );
        assert!(env(&[]).is_empty());
    }

    #[test]
    fn a_port_something_listens_on_is_not_free() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(!port_is_free(port));
        drop(listener);
    }
}
