//! Unix sockets: who the peer is, sending without `SIGPIPE`, and receiving
//! passed descriptors close-on-exec.
//!
//! - peer: `SO_PEERCRED` on Linux, `getpeereid` on macOS (both the
//!   effective uid of the process that connected); its pid on Linux only;
//! - sending: `MSG_NOSIGNAL` on each send on Linux; macOS has no such
//!   flag, so `SO_NOSIGPIPE` is set on the socket before sending;
//! - receiving descriptors (`SCM_RIGHTS`): `MSG_CMSG_CLOEXEC` on Linux;
//!   macOS has none, so `FD_CLOEXEC` is set on each right after.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer};
use rustix::net::{SendAncillaryMessage, SendFlags};

/// The effective uid of the process at the other end of `stream`.
#[cfg(target_os = "linux")]
pub fn peer_uid(stream: &UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .map(|cred| cred.uid.as_raw())
}

/// The effective uid of the process at the other end of `stream`.
#[cfg(not(target_os = "linux"))]
pub fn peer_uid(stream: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let (mut uid, mut gid) = (0, 0);
    // SAFETY: `uid` and `gid` are valid for writes; the descriptor is
    // open for as long as `stream` is borrowed.
    let rc = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    (rc == 0).then_some(uid)
}

/// The pid of the process at the other end of `stream` (`SO_PEERCRED`),
/// for naming a host that does not answer.
#[cfg(target_os = "linux")]
pub fn peer_pid(stream: &UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream)
        .ok()
        .and_then(|cred| u32::try_from(cred.pid.as_raw_nonzero().get()).ok())
}

/// The pid of the process at the other end of `stream`: not asked for
/// here (macOS has `LOCAL_PEERPID`; unused until it can be run), so a
/// host that does not answer is named without its pid.
#[cfg(not(target_os = "linux"))]
pub fn peer_pid(_stream: &UnixStream) -> Option<u32> {
    None
}

/// Whether the peer of `stream` is the user this process runs as.
pub fn peer_is_this_user(stream: &UnixStream) -> bool {
    peer_uid(stream) == Some(rustix::process::geteuid().as_raw())
}

/// Sends as much of `bytes` as one `sendmsg` takes, passing `fd` along
/// (`SCM_RIGHTS`), never raising `SIGPIPE` when the peer is gone (the
/// error is `EPIPE` instead). Interrupted sends are retried.
pub fn send_with_fd(stream: &UnixStream, bytes: &[u8], fd: BorrowedFd<'_>) -> io::Result<usize> {
    let flags = no_sigpipe(stream)?;
    let fds = [fd];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    loop {
        match rustix::net::sendmsg(stream, &[io::IoSlice::new(bytes)], &mut control, flags) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sends as much of `bytes` as the socket takes now, without waiting
/// (`MSG_DONTWAIT`): `Ok(0)` when it takes nothing, never raising
/// `SIGPIPE` when the peer is gone (the error is `EPIPE` instead).
/// Interrupted sends are retried.
pub fn send_nonblocking(stream: &UnixStream, bytes: &[u8]) -> io::Result<usize> {
    let flags = no_sigpipe(stream)? | SendFlags::DONTWAIT;
    loop {
        match rustix::net::send(stream, bytes, flags) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::AGAIN) => return Ok(0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(target_os = "linux")]
fn no_sigpipe(_stream: &UnixStream) -> io::Result<SendFlags> {
    Ok(SendFlags::NOSIGNAL)
}

#[cfg(not(target_os = "linux"))]
fn no_sigpipe(stream: &UnixStream) -> io::Result<SendFlags> {
    rustix::net::sockopt::set_socket_nosigpipe(stream, true)?;
    Ok(SendFlags::empty())
}

/// Reads into `buf` (one `recvmsg`), appending the descriptors passed
/// along (up to four a call) to `fds`, each close-on-exec.
pub fn recv_with_fds(
    stream: &UnixStream,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
) -> io::Result<usize> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = rustix::net::recvmsg(
        stream,
        &mut [io::IoSliceMut::new(buf)],
        &mut control,
        recv_flags(),
    )?;
    let first = fds.len();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = message {
            fds.extend(passed);
        }
    }
    after_recv(&fds[first..])?;
    Ok(msg.bytes)
}

#[cfg(target_os = "linux")]
fn recv_flags() -> RecvFlags {
    RecvFlags::CMSG_CLOEXEC
}

#[cfg(target_os = "linux")]
fn after_recv(_fds: &[OwnedFd]) -> io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn recv_flags() -> RecvFlags {
    RecvFlags::empty()
}

#[cfg(not(target_os = "linux"))]
fn after_recv(fds: &[OwnedFd]) -> io::Result<()> {
    fds.iter().try_for_each(super::pipe::set_cloexec)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_socket_pair_is_this_user_and_passes_descriptors_close_on_exec() {
        let (a, b) = UnixStream::pair().unwrap();
        assert!(super::peer_is_this_user(&a));
        let (read, mut write) = {
            let (r, w) = super::super::pipe::cloexec().unwrap();
            (r, std::fs::File::from(w))
        };
        // Passed without close-on-exec: the receiver must set it.
        let plain = rustix::io::dup(&read).unwrap();
        assert!(!rustix::io::fcntl_getfd(&plain)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC));
        assert_eq!(super::send_with_fd(&a, b"hi", plain.as_fd()).unwrap(), 2);
        let mut buf = [0u8; 8];
        let mut fds = Vec::new();
        assert_eq!(super::recv_with_fds(&b, &mut buf, &mut fds).unwrap(), 2);
        assert_eq!(&buf[..2], b"hi");
        assert_eq!(fds.len(), 1);
        assert!(rustix::io::fcntl_getfd(&fds[0])
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC));
        write.write_all(b"z").unwrap();
        let mut got = [0u8; 1];
        rustix::io::read(&fds[0], &mut got).unwrap();
        assert_eq!(&got, b"z", "the passed descriptor is the pipe's read end");
        // The peer gone: an error, not SIGPIPE (which would end the test).
        drop(b);
        assert!(super::send_with_fd(&a, b"x", plain.as_fd()).is_err());
    }
}
