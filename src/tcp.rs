//! `mode tcp`: a frontend that relays bytes to a server chosen by the same
//! balancing, `maxconn` queueing and health checks as HTTP, with half-close
//! carried across (a side that finishes sending shuts the other side's write
//! half, and the relay ends when both directions are done).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::acl::eval::RequestView;
use crate::backend::retry::{self, Retries, Seat};
use crate::balance::{self, PickError};
use crate::listener::ClientConn;
use crate::routing::{BackendRt, FrontendRt};

/// What a TCP-mode condition can look at: the client address only.
struct View(IpAddr);

impl RequestView for View {
    fn method(&self) -> &[u8] {
        b""
    }
    fn target(&self) -> &[u8] {
        b""
    }
    fn header_values<'a>(&'a self, _: &str, _: &mut Vec<&'a [u8]>) {}
    fn src(&self) -> Option<IpAddr> {
        Some(self.0)
    }
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Relaxed);
}

fn pick_backend(fe: &FrontendRt, peer: SocketAddr) -> Option<Arc<BackendRt>> {
    let view = View(peer.ip());
    fe.switching
        .iter()
        .find(|(_, c)| fe.acls.eval(c, &view))
        .map(|(b, _)| b.clone())
        .or_else(|| fe.default_backend.clone())
}

/// Serves one TCP-mode client connection to its end.
pub async fn serve(client: ClientConn, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let snap = client.rt.snapshot();
    let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend) else {
        return;
    };
    // A TCP connection is one stream for its whole life (`show sess`).
    let entry = client.stream.entry();
    entry.begin();
    let Some(be) = pick_backend(fe, peer) else {
        return;
    };
    entry.to_backend(be.iid);
    let bc = &be.state.counters;
    let key = balance::LbKey {
        src: Some(peer.ip()),
        head: None,
    };
    let slot = match balance::acquire(&be, &key).await {
        Ok(slot) => slot,
        Err(e) => {
            if e == PickError::NoServer {
                add(&bc.econ, 1);
            }
            return;
        }
    };
    let mut seat = Seat::new(slot);
    entry.to_server(seat.server());
    bc.session_start();
    let mut tries = Retries::default();
    let mut stream = stream;
    let connected = retry::connect(&be, &key, &mut seat, &mut tries).await;
    if let Err(retry::ConnectError::Pick(PickError::NoServer)) = connected {
        add(&bc.econ, 1);
    }
    if let Ok(mut upstream) = connected {
        // The server that accepted (a redispatch may have changed it).
        let server = seat.server().clone();
        entry.to_server(&server);
        // `on-marked-down shutdown-sessions` (or an active server's
        // `on-marked-up shutdown-backup-sessions`) ends the connection.
        let killed = server.kill.notified();
        tokio::pin!(killed);
        let cuttable = server.cuttable.load(Relaxed);
        if cuttable {
            killed.as_mut().enable();
        }
        let relayed = relay(
            &mut stream,
            &mut upstream,
            fe.timeouts_for_tcp(),
            be.timeouts_for_tcp(),
        );
        let (c2s, s2c) = if cuttable {
            tokio::select! {
                r = relayed => r,
                _ = killed => {
                    // The bytes relayed so far are not counted.
                    add(&server.counters.srv_abrt, 1);
                    add(&bc.srv_abrt, 1);
                    (0, 0)
                }
            }
        } else {
            relayed.await
        };
        for c in [&fe.state.counters, bc, &server.counters] {
            add(&c.bin, c2s);
            add(&c.bout, s2c);
        }
        add(&client.rt.process.bytes_out, s2c);
    }
    bc.session_end();
    drop(seat);
}

/// Relays both ways until both directions have ended. Each direction reads
/// with its side's inactivity timeout; when one side finishes sending, the
/// other side's write half is shut down. Returns (a to b, b to a) byte
/// counts. Used for `mode tcp` and for HTTP protocol switches (101).
pub async fn relay(
    a: &mut TcpStream,
    b: &mut TcpStream,
    a_idle: Option<Duration>,
    b_idle: Option<Duration>,
) -> (u64, u64) {
    let (ar, aw) = a.split();
    let (br, bw) = b.split();
    tokio::join!(pump(ar, bw, a_idle), pump(br, aw, b_idle))
}

async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    idle: Option<Duration>,
) -> u64 {
    let mut buf = vec![0u8; 16 * 1024];
    let mut total = 0u64;
    loop {
        let read = match idle {
            Some(t) => match tokio::time::timeout(t, from.read(&mut buf)).await {
                Ok(r) => r,
                Err(_) => break,
            },
            None => from.read(&mut buf).await,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        total += n as u64;
    }
    let _ = to.shutdown().await;
    total
}

impl FrontendRt {
    /// Client-side inactivity in TCP mode: `timeout tunnel` if set (the
    /// connection is a tunnel from the start), else `timeout client`.
    pub fn timeouts_for_tcp(&self) -> Option<Duration> {
        self.timeouts.tunnel.or(self.timeouts.client)
    }
}

impl BackendRt {
    /// Server-side inactivity in TCP mode: `timeout tunnel`, else `timeout
    /// server`.
    pub fn timeouts_for_tcp(&self) -> Option<Duration> {
        self.timeouts.tunnel.or(self.timeouts.server)
    }
}
