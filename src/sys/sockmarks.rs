//! The client socket's IP TOS and netfilter mark, as the `set-tos` and
//! `set-mark` actions of the HTTP and TCP rules ask for them.

use std::net::SocketAddr;

/// What `set-tos` and `set-mark` rules ask of the client connection's
/// socket, the last of each kept.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SockMarks {
    pub(crate) tos: Option<u32>,
    pub(crate) mark: Option<u32>,
}

impl SockMarks {
    /// `other`'s marks in place of these, each where it has one.
    pub(crate) fn merge(&mut self, other: SockMarks) {
        self.tos = other.tos.or(self.tos);
        self.mark = other.mark.or(self.mark);
    }

    /// Whether there is a mark to set.
    pub(crate) fn any(&self) -> bool {
        self.tos.is_some() || self.mark.is_some()
    }

    /// Sets them on `tcp` (the IPv6 traffic class for an IPv6 socket). A
    /// refusal (no `CAP_NET_ADMIN` for a mark) is ignored, as in HAProxy.
    pub(crate) fn apply(self, tcp: std::os::fd::BorrowedFd<'_>) {
        let sock = socket2::SockRef::from(&tcp);
        if let Some(tos) = self.tos {
            let _ = match sock.local_addr().ok().and_then(|a| a.as_socket()) {
                Some(SocketAddr::V6(a)) if a.ip().to_ipv4_mapped().is_none() => {
                    sock.set_tclass_v6(tos)
                }
                _ => sock.set_tos_v4(tos),
            };
        }
        if let Some(mark) = self.mark {
            let _ = sock.set_mark(mark);
        }
    }
}
