//! Pipes whose ends are close-on-exec (and non-blocking where asked), so a
//! child started meanwhile never inherits them. Linux makes them with the
//! flags at once (`pipe2`); macOS has no `pipe2`, so the flags are set
//! right after `pipe` (a child forked in between by another thread could
//! inherit the ends: owt's children are spawned through std, which closes
//! nothing it was not asked to, so this is documented, not prevented).

use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// A close-on-exec pipe: (read end, write end).
pub fn cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    make(false)
}

/// A close-on-exec, non-blocking pipe: (read end, write end).
pub fn cloexec_nonblocking() -> io::Result<(OwnedFd, OwnedFd)> {
    make(true)
}

/// Writes `byte` to the write end of a wake-up pipe, for the thread
/// waiting on its read end; a failure is ignored (a full non-blocking pipe
/// already holds a byte the reader will read).
pub fn send_wake(write_end: impl AsFd, byte: u8) {
    let _ = rustix::io::write(write_end, &[byte]);
}

/// Reads what waits in the read end of a non-blocking wake-up pipe, up to
/// `buf`'s length; how many bytes (0 when none, or on an error).
pub fn take_wakes(read_end: impl AsFd, buf: &mut [u8]) -> usize {
    rustix::io::read(read_end, buf).unwrap_or(0)
}

#[cfg(target_os = "linux")]
fn make(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pipe::PipeFlags;
    let flags = if nonblocking {
        PipeFlags::CLOEXEC | PipeFlags::NONBLOCK
    } else {
        PipeFlags::CLOEXEC
    };
    Ok(rustix::pipe::pipe_with(flags)?)
}

#[cfg(not(target_os = "linux"))]
fn make(nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe()?;
    for end in [&read, &write] {
        set_cloexec(end)?;
        if nonblocking {
            let flags = rustix::fs::fcntl_getfl(end)?;
            rustix::fs::fcntl_setfl(end, flags | rustix::fs::OFlags::NONBLOCK)?;
        }
    }
    Ok((read, write))
}

/// Marks `fd` close-on-exec.
#[cfg(not(target_os = "linux"))]
pub(super) fn set_cloexec(fd: impl std::os::fd::AsFd) -> io::Result<()> {
    let flags = rustix::io::fcntl_getfd(&fd)?;
    rustix::io::fcntl_setfd(&fd, flags | rustix::io::FdFlags::CLOEXEC)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    #[test]
    fn both_ends_are_close_on_exec_and_nonblocking_when_asked() {
        let (read, write) = super::cloexec_nonblocking().unwrap();
        for end in [&read, &write] {
            let fd = rustix::io::fcntl_getfd(end).unwrap();
            assert!(fd.contains(rustix::io::FdFlags::CLOEXEC));
            let fl = rustix::fs::fcntl_getfl(end).unwrap();
            assert!(fl.contains(rustix::fs::OFlags::NONBLOCK));
        }
        let mut reader = std::fs::File::from(read);
        let err = reader.read(&mut [0u8; 1]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
        std::fs::File::from(write).write_all(b"x").unwrap();
        assert_eq!(reader.read(&mut [0u8; 4]).unwrap(), 1);

        let (read, _write) = super::cloexec().unwrap();
        assert!(rustix::io::fcntl_getfd(&read)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC));
        assert!(!rustix::fs::fcntl_getfl(&read)
            .unwrap()
            .contains(rustix::fs::OFlags::NONBLOCK));
    }
}
