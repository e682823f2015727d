//! The client connection as the fetches see it beyond the client's
//! address: the socket's own addresses, which a PROXY header hides from
//! `src` and `dst` (`fc_src`, `fc_dst`...), what that header's TLVs said
//! (`fc_pp_authority`, `fc_pp_unique_id`), the listener it came in on
//! (`so_id`, `so_name`, `dst_conn`), and its HTTP version on the wire
//! (`fc_http_major`).
//!
//! [`ClientFacts`] is kept by the connection's record from accept to
//! close, and read by reference: nothing is asked of the kernel or copied
//! until a fetch wants it, so a configuration without these fetches pays
//! nothing per connection or request for them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering::Relaxed};

/// A listening socket as the fetches name and count it: its frontend,
/// its id (`bind ... id`, else HAProxy's automatic numbering), its
/// `name`, and the connections it holds now (`dst_conn`). One per
/// listening address of a configuration's generation: the connections of
/// a reloaded listener are counted afresh, as a new HAProxy process counts
/// its own.
#[derive(Debug)]
pub(crate) struct Listener {
    frontend: Arc<str>,
    id: i64,
    name: Option<Box<str>>,
    conns: AtomicI64,
}

impl Listener {
    pub(crate) fn new(frontend: Arc<str>, id: i64, name: Option<&str>) -> Listener {
        Listener {
            frontend,
            id,
            name: name.map(Into::into),
            conns: AtomicI64::new(0),
        }
    }

    /// The frontend whose connections it accepts.
    pub(crate) fn frontend(&self) -> &Arc<str> {
        &self.frontend
    }

    /// `so_id`, and the listener's number in its frontend's logs.
    pub(crate) fn id(&self) -> i64 {
        self.id
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The connections accepted on it and not closed yet.
    pub(crate) fn conns(&self) -> i64 {
        self.conns.load(Relaxed)
    }
}

/// A connection counted on its listener until dropped.
#[derive(Debug)]
pub(crate) struct Counted(Arc<Listener>);

impl Counted {
    pub(crate) fn new(l: Arc<Listener>) -> Counted {
        l.conns.fetch_add(1, Relaxed);
        Counted(l)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.conns.fetch_sub(1, Relaxed);
    }
}

/// What a PROXY protocol header said of the connection: the address the
/// client reached, and its TLVs; and the socket's peer it replaced as the
/// client's address (`fc_src`).
#[derive(Debug, Default)]
pub(crate) struct Proxied {
    pub(crate) dst: Option<SocketAddr>,
    pub(crate) tlvs: crate::wire::proxy_proto::PpTlvs,
    pub(crate) socket_peer: Option<SocketAddr>,
}

/// The client connection's facts for the fetches.
///
/// Kept small (every idle connection holds one): the listener is a
/// pointer the connection needs anyway (it names its frontend), what a
/// PROXY header said is boxed.
#[derive(Debug)]
pub(crate) struct ClientFacts {
    /// The client socket (-1: none, a test's connection, or closed): its
    /// own address is asked of the kernel when `fc_dst` wants it. (Its
    /// peer is the client's address unless a PROXY header replaced it,
    /// and then it is kept: once closed, a socket has none.)
    fd: AtomicI32,
    listener: Counted,
    /// Boxed: most connections have no PROXY header.
    proxied: Option<Box<Proxied>>,
    /// A PROXY header was received, a LOCAL one included
    /// (`fc_rcvd_proxy`).
    rcvd_proxy: bool,
    /// 2 once the connection speaks HTTP/2, else 1.
    http_major: u8,
}

impl ClientFacts {
    /// A connection accepted on socket `fd` (-1: none) of `listener`,
    /// counted on it.
    pub(crate) fn new(fd: i32, listener: Arc<Listener>) -> ClientFacts {
        ClientFacts {
            fd: AtomicI32::new(fd),
            listener: Counted::new(listener),
            proxied: None,
            rcvd_proxy: false,
            http_major: 1,
        }
    }

    /// A PROXY header was read: `dst` its destination and `socket_peer`
    /// the socket's peer it replaced as the client (None for a LOCAL one,
    /// whose addresses are the socket's), `tlvs` what it carried.
    pub(crate) fn set_proxied(
        &mut self,
        dst: Option<SocketAddr>,
        socket_peer: Option<SocketAddr>,
        tlvs: crate::wire::proxy_proto::PpTlvs,
    ) {
        self.rcvd_proxy = true;
        if dst.is_some() || tlvs != Default::default() {
            self.proxied = Some(Box::new(Proxied {
                dst,
                tlvs,
                socket_peer,
            }));
        }
    }

    /// A rule's `set-dst`: the address the client connected to from then
    /// on.
    pub(crate) fn set_dst(&mut self, dst: SocketAddr) {
        match &mut self.proxied {
            Some(p) => p.dst = Some(dst),
            None => {
                self.proxied = Some(Box::new(Proxied {
                    dst: Some(dst),
                    tlvs: Default::default(),
                    socket_peer: None,
                }))
            }
        }
    }

    /// The connection is not HTTP (`mode tcp`): no `fc_http_major`.
    pub(crate) fn set_raw(&mut self) {
        self.http_major = 0;
    }

    /// The socket is about to close while requests of the connection may
    /// still end (HTTP/2 streams): its number may be another's from then
    /// on, so its address is no longer asked.
    pub(crate) fn forget_socket(&self) {
        self.fd.store(-1, Relaxed);
    }

    /// The connection speaks HTTP/2.
    pub(crate) fn set_h2(&mut self) {
        self.http_major = 2;
    }

    /// The address the client connected to, when a PROXY header said it.
    pub(crate) fn dst(&self) -> Option<SocketAddr> {
        self.proxied.as_ref()?.dst
    }

    pub(crate) fn tlvs(&self) -> Option<&crate::wire::proxy_proto::PpTlvs> {
        self.proxied.as_deref().map(|p| &p.tlvs)
    }

    pub(crate) fn rcvd_proxy(&self) -> bool {
        self.rcvd_proxy
    }

    /// 1 or 2; None for a connection that is not HTTP.
    pub(crate) fn http_major(&self) -> Option<u8> {
        (self.http_major > 0).then_some(self.http_major)
    }

    pub(crate) fn listener(&self) -> &Listener {
        &self.listener.0
    }

    /// The socket's peer a PROXY header replaced as the client's
    /// address, if one did (else the socket's peer is the client).
    pub(crate) fn proxied_peer(&self) -> Option<SocketAddr> {
        self.proxied.as_ref()?.socket_peer
    }

    /// The socket's own address (`fc_dst`); None on a UNIX socket.
    pub(crate) fn socket_local(&self) -> Option<SocketAddr> {
        let fd = self.fd.load(Relaxed);
        (fd >= 0)
            .then(|| crate::sys::peer::socket_local(fd))
            .flatten()
    }
}

use super::arg::ArgSpec;
use super::fetch::{CONST, Ctx, FetchDef, L4CLI, LISTN, def, ip, is_local};
use super::value::{Sample, SmpType as T};

/// The connection's fetches (HAProxy's sections 7.3.2 and 7.3.3).
pub(crate) static FETCHES: &[FetchDef] = &[
    def("fc_src", L4CLI, ArgSpec::NONE, T::Ipv4, |_, cx| {
        Some(ip(socket_peer(cx)?.0))
    }),
    def("fc_src_port", L4CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(socket_peer(cx)?.1?)))
    }),
    def("fc_src_is_local", L4CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(is_local(socket_peer(cx)?.0)))
    }),
    def("fc_dst", L4CLI, ArgSpec::NONE, T::Ipv4, |_, cx| {
        Some(ip(cx.client?.socket_local()?.ip()))
    }),
    def("fc_dst_port", L4CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(cx.client?.socket_local()?.port())))
    }),
    def("fc_dst_is_local", L4CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(is_local(cx.client?.socket_local()?.ip())))
    }),
    // The HTTP version on the wire: 2 for an HTTP/2 connection, else 1
    // (a `mode tcp` one too).
    def("fc_http_major", L4CLI, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(cx.client?.http_major()?)))
    }),
    def("fc_pp_authority", L4CLI, ArgSpec::NONE, T::Str, |_, cx| {
        pp_tlv(cx, |t| t.authority.as_deref())
    }),
    def("fc_pp_unique_id", L4CLI, ArgSpec::NONE, T::Str, |_, cx| {
        pp_tlv(cx, |t| t.unique_id.as_deref())
    }),
    def("fc_rcvd_proxy", L4CLI, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.client?.rcvd_proxy()))
    }),
    def("so_id", LISTN, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(cx.client?.listener().id()))
    }),
    def("so_name", LISTN, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.client?.listener().name()?.as_bytes()))
    }),
    def("dst_conn", LISTN, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(cx.client?.listener().conns()))
    }),
    // The worker thread running the stream, from 0.
    def("thread", CONST, ArgSpec::NONE, T::Sint, |_, _| {
        Some(Sample::Sint(
            crate::sys::workers::current().unwrap_or(0) as i64
        ))
    }),
];

/// The client socket's peer: the one a PROXY header replaced, else the
/// client's address (and port, where the context has it).
fn socket_peer(cx: &Ctx<'_>) -> Option<(std::net::IpAddr, Option<u16>)> {
    match cx.client?.proxied_peer() {
        Some(a) => Some((a.ip(), Some(a.port()))),
        None => Some((cx.src?, cx.src_port)),
    }
}

fn pp_tlv<'a>(
    cx: &Ctx<'a>,
    f: impl FnOnce(&'a crate::wire::proxy_proto::PpTlvs) -> Option<&'a [u8]>,
) -> Option<Sample<'a>> {
    f(cx.client?.tlvs()?).map(Sample::str)
}
