//! Between accept and service: the `tcp-request connection` rules (on the
//! real peer, before any byte is read) and the PROXY protocol header of a
//! `bind ... accept-proxy` listener. A connection refused here is counted
//! in `conn_tot` (and `dcon` for a rule) but never becomes a session, as in
//! HAProxy 2.6.

use std::sync::atomic::Ordering::Relaxed;
use std::time::SystemTime;

use tokio::net::TcpStream;

use crate::config::model::{ListenAddr, Mode};
use crate::snapshot::FrontendRt;
use crate::snapshot::client::ClientConn;
use crate::sys::peer::Peer;
use crate::wire::proxy_proto::{self, Origin};

/// What screens a connection accepted on one listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Screen {
    accept_proxy: bool,
    /// The listener's number in its frontend, from 1 (HAProxy's `luid`,
    /// in connection error lines).
    luid: usize,
}

impl Screen {
    /// None when nothing screens connections on `local`.
    pub(crate) fn of(fe: &FrontendRt, local: &ListenAddr) -> Option<Screen> {
        let accept_proxy = fe.accept_proxy.contains(local);
        let http_content = fe.mode == Mode::Http && !fe.tcp_content.is_empty();
        if !accept_proxy && fe.tcp_connection.is_empty() && !http_content {
            return None;
        }
        let luid = luid(fe, local) as usize;
        Some(Screen { accept_proxy, luid })
    }
}

/// The number of the listener on `local` in its frontend (its id).
pub(crate) fn luid(fe: &FrontendRt, local: &ListenAddr) -> u32 {
    fe.listeners
        .iter()
        .find(|(a, _)| a == local)
        .map_or(1, |(_, l)| l.id() as u32)
}

/// Screens the connection, then serves it in the frontend's mode.
pub(crate) async fn serve_screened(
    mut client: ClientConn,
    mut stream: TcpStream,
    mut peer: Peer,
    serving: crate::frontend::listener::Serving,
    screen: Screen,
    tls: Option<crate::frontend::listener::TlsAccept>,
) {
    let accepted = SystemTime::now();
    let limit = {
        let snap = client.rt.snapshot();
        let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend()) else {
            return;
        };
        if !crate::tcp::rules::connection_allowed(fe, peer, &client.facts) {
            fe.state.counters.dcon.fetch_add(1, Relaxed);
            // As HAProxy: the refused connection is reset, not closed.
            let _ = socket2::SockRef::from(&stream).set_linger(Some(std::time::Duration::ZERO));
            return;
        }
        fe.timeouts.client
    };
    if screen.accept_proxy {
        match proxy_proto::read_header(&mut stream, limit).await {
            Ok((Origin::Proxied { src, dst }, tlvs)) => {
                client.facts.set_proxied(Some(dst), peer.inet(), tlvs);
                peer = Peer::Ip(src);
                client.stream.entry().set_peer(peer);
            }
            Ok((Origin::Local, tlvs)) => client.facts.set_proxied(None, None, tlvs),
            Err((e, got_bytes)) => {
                let snap = client.rt.snapshot();
                if let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend()) {
                    crate::observe::log::emit_conn_error(
                        fe,
                        peer,
                        accepted,
                        screen.luid,
                        &e,
                        got_bytes,
                    );
                }
                return;
            }
        }
    }
    {
        let snap = client.rt.snapshot();
        let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend()) else {
            return;
        };
        client.start_session(fe.state.clone());
        // In mode http, `tcp-request content` rules see no payload (HTTP
        // is parsed afterwards): they run once, on the client address.
        let view = crate::tcp::rules::View {
            src: peer.inet(),
            local: client.dst(),
            payload: b"",
            tls: None,
            client: Some(&client.facts),
        };
        if serving.mode == Mode::Http
            && !crate::tcp::rules::allowed(&fe.tcp_content, &fe.acls, &view, None)
        {
            fe.state.counters.dreq.fetch_add(1, Relaxed);
            return;
        }
    }
    crate::frontend::listener::spawn_accepted(client, stream, peer, serving, tls)
}
