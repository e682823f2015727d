//! The address of one end of an accepted connection: an IP socket
//! address, or a UNIX stream socket (a path or an abstract name), which
//! has none worth telling.

use std::net::{IpAddr, SocketAddr};

/// A client, or the listener it came in on, as logs, ACLs and `show sess`
/// see it. `Copy` and no bigger than a `SocketAddr`'s payload: it rides
/// along every request on the TCP hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Peer {
    Ip(SocketAddr),
    /// A connection on a UNIX or abstract socket listener. HAProxy 2.6
    /// shows such an address as `unix`, with the listener's number in its
    /// frontend (`luid`) where a port would be: `unix:1` in logs and
    /// `show sess`.
    Unix(u32),
}

impl Peer {
    /// The IP address, None on a UNIX socket (`src` then matches nothing,
    /// `option forwardfor` adds no header, `balance source` falls back to
    /// round robin, as in HAProxy).
    #[inline]
    pub(crate) fn ip(&self) -> Option<IpAddr> {
        match self {
            Peer::Ip(a) => Some(a.ip()),
            Peer::Unix(_) => None,
        }
    }

    /// The IP socket address, None on a UNIX socket.
    #[inline]
    pub(crate) fn inet(&self) -> Option<SocketAddr> {
        match self {
            Peer::Ip(a) => Some(*a),
            Peer::Unix(_) => None,
        }
    }

    /// What `%ci`/`%fi` print: the IP, or `unix`.
    pub(crate) fn host_text(&self) -> String {
        match self {
            Peer::Ip(a) => a.ip().to_string(),
            Peer::Unix(_) => "unix".to_string(),
        }
    }

    /// What `%cp`/`%fp` print: the port, or the listener's number.
    pub(crate) fn port_num(&self) -> u32 {
        match self {
            Peer::Ip(a) => u32::from(a.port()),
            Peer::Unix(luid) => *luid,
        }
    }
}

impl From<SocketAddr> for Peer {
    #[inline]
    fn from(a: SocketAddr) -> Peer {
        Peer::Ip(a)
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Ip(a) => a.fmt(f),
            Peer::Unix(luid) => write!(f, "unix:{luid}"),
        }
    }
}

/// The local address of the socket `fd`; None for a socket that is not
/// an IP one (a UNIX client's). `fd` must be an open descriptor for the
/// call (a connection's socket, asked while its connection lives).
pub(crate) fn socket_local(fd: i32) -> Option<SocketAddr> {
    // SAFETY: the caller's descriptor is open for the duration of the
    // call, which only reads its address.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    socket2::SockRef::from(&fd).local_addr().ok()?.as_socket()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_haproxy_prints_them() {
        let ip = Peer::from("127.0.0.1:4242".parse::<SocketAddr>().expect("addr"));
        assert_eq!(ip.to_string(), "127.0.0.1:4242");
        assert_eq!((ip.host_text(), ip.port_num()), ("127.0.0.1".into(), 4242));
        let unix = Peer::Unix(2);
        assert_eq!(unix.to_string(), "unix:2");
        assert_eq!((unix.host_text(), unix.port_num()), ("unix".into(), 2));
        assert_eq!(unix.ip(), None);
        assert!(std::mem::size_of::<Peer>() <= 32);
    }
}
