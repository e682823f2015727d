//! Between accept and service: the `tcp-request connection` rules (on the
//! real peer, before any byte is read) and the PROXY protocol header of a
//! `bind ... accept-proxy` listener. A connection refused here is counted
//! in `conn_tot` (and `dcon` for a rule) but never becomes a session, as in
//! HAProxy 2.6.

use std::time::SystemTime;

use tokio::net::TcpStream;

use crate::config::model::ListenAddr;
use crate::snapshot::FrontendRt;
use crate::snapshot::client::ClientConn;
use crate::state::table::track::{Level, StickView};
use crate::sys::peer::Peer;
use crate::tcp::rules::Verdict;
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
        if !accept_proxy && fe.tcp_connection.is_empty() && fe.tcp_session.is_empty() {
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
        let (verdict, fx) = rules(
            fe,
            &snap.tables,
            &mut client,
            (peer, &stream),
            Rules::Connection,
        );
        if verdict != Verdict::Accept {
            refuse(fe, &stream, verdict, |c| &c.dcon);
            return;
        }
        moved(&mut client, &mut peer, &fx);
        (fe.timeouts.client, fx.expect_proxy)
    };
    let (limit, expect_proxy) = limit;
    // `tcp-request connection expect-proxy layer4` asks for the header
    // as `accept-proxy` does.
    if screen.accept_proxy || expect_proxy {
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
        let (verdict, fx) = rules(
            fe,
            &snap.tables,
            &mut client,
            (peer, &stream),
            Rules::Session,
        );
        if verdict != Verdict::Accept {
            refuse(fe, &stream, verdict, |c| &c.dses);
            return;
        }
        moved(&mut client, &mut peer, &fx);
        client.start_session(fe.state.clone());
        // A new session on the counters the connection tracks.
        if let Some(t) = client.trackers() {
            crate::state::table::track::session(t);
        }
    }
    crate::frontend::listener::spawn_accepted(client, stream.into(), peer, serving, tls)
}

/// Which of a frontend's rules run before the session starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rules {
    /// `tcp-request connection`: at accept, on the real peer.
    Connection,
    /// `tcp-request session`: once the PROXY header is read.
    Session,
}

/// Runs a frontend's `tcp-request connection` or `session` rules for a
/// client at `peer` (before any byte of the request: only the addresses,
/// and the counters tracked so far, mean anything); their `track-sc*`
/// actions track on the connection's counters; `set-tos` and `set-mark`
/// mark `stream`.
fn rules(
    fe: &FrontendRt,
    tables: &crate::state::table::registry::Tables,
    client: &mut ClientConn,
    (peer, stream): (Peer, &TcpStream),
    which: Rules,
) -> (Verdict, crate::tcp::rules::Effects) {
    let set = match which {
        Rules::Connection => &fe.tcp_connection,
        Rules::Session => &fe.tcp_session,
    };
    if set.is_empty() {
        return (Verdict::Accept, Default::default());
    }
    let local = match which {
        Rules::Connection => None,
        Rules::Session => client.dst(),
    };
    // The counters are made only for rules that track.
    let tracks = set.iter().any(|(a, _)| {
        matches!(
            a,
            crate::config::model::TcpAction::Table(crate::config::model::TableAction::Track(_))
        )
    });
    if tracks {
        client.trackers_mut();
    }
    let sess = client.trackers();
    let sv = StickView {
        tables,
        sess,
        strm: None,
    };
    let view = crate::tcp::rules::View {
        src: peer.inet(),
        local,
        payload: b"",
        res_payload: None,
        tls: None,
        client: Some(&client.facts),
        stick: Some(&sv),
    };
    let mut fx = crate::tcp::rules::Effects::default();
    let verdict = crate::tcp::rules::run(set, &fe.acls, &view, None, Level::Session, &mut fx);
    fx.mark(Some(std::os::fd::AsFd::as_fd(stream)));
    (verdict, fx)
}

/// The addresses `set-src`, `set-dst` and their ports gave the
/// connection: the client's from then on, as a PROXY header's would be.
fn moved(client: &mut ClientConn, peer: &mut Peer, fx: &crate::tcp::rules::Effects) {
    if let Some(src) = fx.src {
        *peer = Peer::Ip(src);
        client.stream.entry().set_peer(*peer);
    }
    if let Some(dst) = fx.dst {
        client.facts.set_dst(dst);
    }
}

/// A connection the rules refused: reset (`reject`, counted in `denied`:
/// `dcon` for a connection rule, `dses` for a session rule), or dropped
/// without a word (`silent-drop`, counted in `dreq` as HAProxy does).
fn refuse(
    fe: &FrontendRt,
    stream: &TcpStream,
    verdict: Verdict,
    denied: impl Fn(&crate::state::counters::ClientAdds) -> &crate::state::counters::Count,
) {
    if verdict == Verdict::SilentDrop {
        fe.state.counters.local().dreq.inc();
        crate::tcp::rules::silent_drop(stream);
    } else {
        denied(fe.state.client.local()).inc();
    }
    // As HAProxy: the refused connection is reset, not closed.
    let _ = socket2::SockRef::from(stream).set_linger(Some(std::time::Duration::ZERO));
}
