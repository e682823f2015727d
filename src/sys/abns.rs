//! Linux abstract UNIX socket addresses (`abns@<name>`).

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::SocketAddr;

/// The longest name: `sun_path` holds 108 bytes, the first one the NUL
/// that marks an abstract address.
pub(crate) const MAX_NAME: usize = 107;

/// The address of `abns@<name>` as HAProxy 2.6 binds and connects it: the
/// name padded with NULs to the whole of `sun_path`. The kernel compares
/// abstract names with their length, so only this spelling meets HAProxy's
/// own sockets (`socat ABSTRACT-CONNECT:<name>,unix-tightsocklen=0`).
pub(crate) fn addr(name: &str) -> io::Result<SocketAddr> {
    if name.len() > MAX_NAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("abstract socket name longer than {MAX_NAME} bytes"),
        ));
    }
    let mut padded = [0u8; MAX_NAME];
    padded[..name.len()].copy_from_slice(name.as_bytes());
    SocketAddr::from_abstract_name(padded)
}
