//! `tcp-request connection|content` rules at run time. The fetches on
//! buffered request bytes they (and `use_backend`) may use in `mode tcp`,
//! `req.ssl_hello_type` and `req.ssl_sni`, read a ClientHello parsed by
//! `wire::client_hello`.

use std::net::SocketAddr;

use crate::acl::eval::{AclSet, RequestView};
use crate::config::model::TcpAction;
use crate::snapshot::TcpRules;

/// What a TCP rule can look at: the client address and the bytes
/// buffered so far.
pub(crate) struct View<'a> {
    /// None for a client on a UNIX socket.
    pub(crate) src: Option<SocketAddr>,
    /// The address the client connected to (`dst`, `dst_port`).
    pub(crate) local: Option<SocketAddr>,
    pub(crate) payload: &'a [u8],
    /// The client connection's TLS, once its handshake is done.
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`).
    pub(crate) client: Option<&'a crate::sample::conn::ClientFacts>,
}

impl RequestView for View<'_> {
    fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
        crate::sample::Ctx {
            src: self.src.map(|a| a.ip()),
            src_port: self.src.map(|a| a.port()),
            local: self.local,
            payload: Some(self.payload),
            tls: self.tls,
            client: self.client,
            ..Default::default()
        }
    }
}

/// Runs `rules` in order: the first accept or reject that applies
/// decides, variable rules run and go on; none deciding accepts (HAProxy's
/// default). `vars` are the connection's (None where only `proc` ones
/// exist yet: `tcp-request connection`).
pub(crate) fn allowed(
    rules: &TcpRules,
    acls: &AclSet,
    view: &View<'_>,
    vars: Option<&crate::sample::vars::Vars<'_>>,
) -> bool {
    for (action, cond) in rules {
        if cond.as_ref().is_none_or(|c| acls.eval(c, view)) {
            match action {
                TcpAction::Accept => return true,
                TcpAction::Reject => return false,
                TcpAction::Var(rule) => {
                    // Stored silently or not at all, as in HAProxy.
                    rule.run(&crate::sample::Ctx {
                        vars,
                        ..view.sample_ctx()
                    });
                }
            }
        }
    }
    true
}

/// `tcp-request connection` rules of `fe` for a client at `peer` (before
/// any byte is read: only `src` means anything).
pub(crate) fn connection_allowed(
    fe: &crate::snapshot::FrontendRt,
    peer: crate::sys::peer::Peer,
    client: &crate::sample::conn::ClientFacts,
) -> bool {
    // Before any byte: no content, and the local address only as the
    // listener knows it (not looked up here).
    let view = View {
        src: peer.inet(),
        local: None,
        payload: b"",
        tls: None,
        client: Some(client),
    };
    allowed(&fe.tcp_connection, &fe.acls, &view, None)
}
