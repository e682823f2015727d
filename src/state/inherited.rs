//! Listening sockets inherited through `fd@<n>` binds (systemd socket
//! activation, a supervisor that opened the port, or an old process handing
//! them over with `-x`), by descriptor, with the address each was found
//! listening on: an IP address and port, or a UNIX socket's name. Process
//! state that outlives snapshots: the frontend layer records a socket when
//! it adopts one, and `snapshot::compile`, reloads and takeovers look the
//! addresses up here, below all of them.

use std::os::fd::RawFd;
use std::sync::Mutex;

use crate::config::model::ListenAddr;

static INHERITED: Mutex<Vec<(RawFd, ListenAddr)>> = Mutex::new(Vec::new());

/// Records that the socket listening on `addr` stands for `bind fd@<fd>`.
pub(crate) fn record(fd: RawFd, addr: ListenAddr) {
    crate::state::lock(&INHERITED).push((fd, addr));
}

/// The `fd@<n>` a listening address was inherited as, if it was.
pub(crate) fn fd_of(addr: &ListenAddr) -> Option<RawFd> {
    crate::state::lock(&INHERITED)
        .iter()
        .find(|(_, a)| a == addr)
        .map(|(f, _)| *f)
}

/// The address of the socket inherited as `fd`, if it was adopted at start.
pub(crate) fn addr_of(fd: RawFd) -> Option<ListenAddr> {
    crate::state::lock(&INHERITED)
        .iter()
        .find(|(f, _)| *f == fd)
        .map(|(_, a)| a.clone())
}
