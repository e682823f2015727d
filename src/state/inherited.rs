//! Listening sockets inherited through `fd@<n>` binds (systemd socket
//! activation, a supervisor that opened the port, or an old process handing
//! them over with `-x`), by descriptor, with the address each was found
//! listening on. Process state that outlives snapshots: the frontend layer
//! records a socket when it adopts one, and `snapshot::compile`, reloads
//! and takeovers look the addresses up here, below all of them.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Mutex;

static INHERITED: Mutex<Vec<(RawFd, SocketAddr)>> = Mutex::new(Vec::new());

/// Records that the socket listening on `addr` stands for `bind fd@<fd>`.
pub(crate) fn record(fd: RawFd, addr: SocketAddr) {
    crate::state::lock(&INHERITED).push((fd, addr));
}

/// The `fd@<n>` a listening address was inherited as, if it was.
pub(crate) fn fd_of(addr: SocketAddr) -> Option<RawFd> {
    crate::state::lock(&INHERITED)
        .iter()
        .find(|(_, a)| *a == addr)
        .map(|(f, _)| *f)
}

/// The address of the socket inherited as `fd`, if it was adopted at start.
pub(crate) fn addr_of(fd: RawFd) -> Option<SocketAddr> {
    crate::state::lock(&INHERITED)
        .iter()
        .find(|(f, _)| *f == fd)
        .map(|(_, a)| *a)
}
