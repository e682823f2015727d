//! The server connection of an exchange as the fetches see it: its
//! addresses (`bc_src`, `bc_dst`...), its error (`bc_err`), its HTTP
//! version on the wire (`bc_http_major`), its TLS (`ssl_bc*`, and the
//! server's certificate for `ssl_s_*` in `x509.rs`).
//!
//! [`ServerFacts`] is taken from the connection when the response's head
//! is in (or when the connection failed), kept with the exchange's record
//! for the response's rules and the log line, and only when a
//! configuration reads them (`fetch::server_read`): an exchange of one
//! that does not pays nothing.

use std::net::SocketAddr;

use super::arg::ArgSpec;
use super::fetch::{FetchDef, def, ip};
use super::stage::{Src, Uses};
use super::value::{Sample, SmpType as T};

/// HAProxy's connection error codes sluice can have on a server
/// connection (`bc_err`; the text is `bc_err_str`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnErr {
    /// 0, "Success".
    None,
    /// 24: the server closed during the handshake.
    TlsClosed,
    /// 26: `timeout connect` struck during the handshake.
    TlsTimeout,
    /// 34: the handshake failed.
    TlsFailed,
}

impl ConnErr {
    fn code(self) -> i64 {
        match self {
            ConnErr::None => 0,
            ConnErr::TlsClosed => 24,
            ConnErr::TlsTimeout => 26,
            ConnErr::TlsFailed => 34,
        }
    }

    fn text(self) -> &'static str {
        match self {
            ConnErr::None => "Success",
            ConnErr::TlsClosed => "Connection closed during SSL handshake",
            ConnErr::TlsTimeout => "Timeout during SSL handshake",
            ConnErr::TlsFailed => "SSL handshake failure",
        }
    }
}

/// What an exchange's server connection was.
#[derive(Debug, Default)]
pub(crate) struct ServerFacts {
    /// The address sluice connected from (None on a connection that
    /// failed: HAProxy shows the unconnected socket's there).
    pub(crate) src: Option<SocketAddr>,
    /// The server's address.
    pub(crate) dst: Option<SocketAddr>,
    /// 2 for an HTTP/2 server, else 1.
    pub(crate) http_major: u8,
    /// The connection's error; None where HAProxy has none (a TCP
    /// connection that failed).
    pub(crate) err: Option<ConnErr>,
    /// TLS was used (or tried) with the server (`ssl_bc`).
    pub(crate) ssl: bool,
    /// The handshake's facts, once it succeeded.
    pub(crate) tls: Option<crate::tls::TlsFacts>,
}

impl ServerFacts {
    /// The facts of an established connection.
    pub(crate) fn of(stream: &crate::tls::Stream) -> ServerFacts {
        use crate::tls::Stream;
        let (src, dst) = match stream {
            Stream::Pipe(p) => (p.local, p.peer),
            s => (s.local_addr().ok(), s.peer_addr().ok()),
        };
        let tls = match stream {
            Stream::Tls(t) => match &**t {
                tokio_rustls::TlsStream::Client(c) => {
                    Some(crate::tls::TlsFacts::of_server(c.get_ref().1))
                }
                tokio_rustls::TlsStream::Server(_) => None,
            },
            _ => None,
        };
        ServerFacts {
            src,
            dst,
            http_major: if matches!(stream, Stream::Pipe(_)) {
                2
            } else {
                1
            },
            err: Some(ConnErr::None),
            ssl: tls.is_some(),
            tls,
        }
    }

    /// A connection to `dst` that could not be made: `err` what HAProxy
    /// would say of it, `ssl` whether TLS was tried.
    pub(crate) fn failed(dst: Option<SocketAddr>, err: Option<ConnErr>, ssl: bool) -> ServerFacts {
        ServerFacts {
            src: None,
            dst,
            http_major: 1,
            err,
            ssl,
            tls: None,
        }
    }
}

const L4SRV: Uses = Uses::of(&[Src::L4srv]);
const L5SRV: Uses = Uses::of(&[Src::L5srv]);

/// The server connection's fetches (HAProxy's sections 7.3.3 and 7.3.4).
pub(crate) static FETCHES: &[FetchDef] = &[
    def("bc_src", L4SRV, ArgSpec::NONE, T::Ipv4, |_, cx| {
        Some(ip(cx.server_conn?.src?.ip()))
    }),
    def("bc_src_port", L4SRV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(cx.server_conn?.src?.port())))
    }),
    def("bc_dst", L4SRV, ArgSpec::NONE, T::Ipv4, |_, cx| {
        Some(ip(cx.server_conn?.dst?.ip()))
    }),
    def("bc_dst_port", L4SRV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(cx.server_conn?.dst?.port())))
    }),
    def("bc_err", L4SRV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(cx.server_conn?.err?.code()))
    }),
    def("bc_err_str", L4SRV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(cx.server_conn?.err?.text().as_bytes()))
    }),
    def("bc_http_major", L4SRV, ArgSpec::NONE, T::Sint, |_, cx| {
        Some(Sample::Sint(i64::from(cx.server_conn?.http_major)))
    }),
    def("ssl_bc", L5SRV, ArgSpec::NONE, T::Bool, |_, cx| {
        Some(Sample::Bool(cx.server_conn.is_some_and(|s| s.ssl)))
    }),
    def(
        "ssl_bc_alg_keysize",
        L5SRV,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| Some(Sample::Sint(server_tls(cx)?.keysize)),
    ),
    def(
        "ssl_bc_use_keysize",
        L5SRV,
        ArgSpec::NONE,
        T::Sint,
        |_, cx| Some(Sample::Sint(server_tls(cx)?.keysize)),
    ),
    def("ssl_bc_alpn", L5SRV, ArgSpec::NONE, T::Str, |_, cx| {
        server_tls(cx)?.alpn.as_deref().map(Sample::str)
    }),
    def("ssl_bc_cipher", L5SRV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(server_tls(cx)?.cipher.as_bytes()))
    }),
    def("ssl_bc_protocol", L5SRV, ArgSpec::NONE, T::Str, |_, cx| {
        Some(Sample::str(server_tls(cx)?.protocol.as_bytes()))
    }),
    def(
        "ssl_bc_is_resumed",
        L5SRV,
        ArgSpec::NONE,
        T::Bool,
        |_, cx| Some(Sample::Bool(server_tls(cx).is_some_and(|t| t.resumed))),
    ),
    // OpenSSL's error of the handshake: 0 once it succeeded (a failed
    // one's code is OpenSSL's own, which rustls has no equivalent of: no
    // sample then), and no text for 0, as HAProxy.
    def("ssl_bc_err", L5SRV, ArgSpec::NONE, T::Sint, |_, cx| {
        server_tls(cx).map(|_| Sample::Sint(0))
    }),
    def("ssl_bc_err_str", L5SRV, ArgSpec::NONE, T::Str, |_, _| None),
    // sluice offers no NPN (rustls has none; `npn` is refused on server
    // lines): none negotiated, as HAProxy without it.
    def("ssl_bc_npn", L5SRV, ArgSpec::NONE, T::Str, |_, _| None),
];

fn server_tls<'a>(cx: &super::fetch::Ctx<'a>) -> Option<&'a crate::tls::TlsFacts> {
    cx.server_conn?.tls.as_ref()
}
