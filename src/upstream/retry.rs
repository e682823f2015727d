//! HAProxy 2.6's retry and redispatch policy (`retries`, `option
//! redispatch [<interval>]`, `retry-on`), shared by HTTP and TCP mode.
//!
//! One counter of retries per request or session (HAProxy's
//! `conn_retries`) covers connection failures and layer-7 retries alike.
//! After a failure [`Retries`] decides whether to try again and where (the
//! same server after a turn-around pause, or a redispatch through the
//! normal balancing), and counts it the way HAProxy does: `wretr` on the
//! server and backend for a retry on the same server, `wredis` on the
//! server that failed and the backend when another server takes over.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tokio::net::TcpStream;

use crate::config::model::RetryOn;
use crate::snapshot::BackendRt;
use crate::snapshot::lb::LbKey;
use crate::state::{ServerState, SlotGuard};
use crate::tls::Stream;
use crate::upstream::ConnectError;
use crate::upstream::balance::{self, PickError};

/// A server slot held for one request or TCP session, with the server's
/// current-session gauge: releasing it (or dropping it) ends the session
/// on the server and frees the slot for the queue.
#[derive(Debug)]
pub(crate) struct Seat {
    server: Arc<ServerState>,
    slot: Option<SlotGuard>,
    /// A connection was already tried or taken from the pool.
    used: bool,
}

impl Seat {
    pub(crate) fn new(slot: SlotGuard) -> Seat {
        let server = slot.server().clone();
        server.counters.session_start();
        Seat {
            server,
            slot: Some(slot),
            used: false,
        }
    }

    /// One more connection to the server for this request: HAProxy counts
    /// every attempt after the first in the server's `stot` too.
    pub(crate) fn attempt(&mut self) {
        if self.used {
            self.server.counters.local().stot.inc();
        }
        self.used = true;
    }

    /// The server of the slot (the last one held, once released).
    pub(crate) fn server(&self) -> &Arc<ServerState> {
        &self.server
    }

    /// The slot goes back before the row's `scur` drops: whoever sees the
    /// server idle in `show stat` sees it idle to load balancing too.
    fn release(&mut self) {
        if let Some(slot) = self.slot.take() {
            drop(slot);
            self.server.counters.session_end();
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.release();
    }
}

/// What to do after a failure that may be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Next {
    /// Go through load balancing again (`option redispatch`).
    pub(crate) redispatch: bool,
    /// HAProxy's turn-around timer before the attempt.
    pub(crate) pause: Option<Duration>,
}

/// The retries of one request or session.
#[derive(Debug, Default)]
pub(crate) struct Retries {
    /// Retries done (HAProxy's `conn_retries`), the log's `retries` field.
    pub(crate) done: u32,
    /// Another server took over at least once (the log shows `+N`).
    pub(crate) redispatched: bool,
}

impl Retries {
    /// After a failed connection attempt to `server` (HAProxy's
    /// `back_handle_st_cer`): None when no retry is left or `retry-on` lacks
    /// `conn-failure`. A refused connection retried on the same server
    /// waits min(`timeout connect`, 1 s) first, as does any retry when no
    /// other active server exists; a connection timeout is retried at once.
    pub(crate) fn after_conn_failure(
        &mut self,
        be: &BackendRt,
        server: &ServerState,
        refused: bool,
    ) -> Option<Next> {
        if self.done >= be.retries || !be.retry_on.has(RetryOn::CONN_FAILURE) {
            return None;
        }
        self.done += 1;
        let redispatch = self.choose_redispatch(be, server);
        let pause = (refused && (!redispatch || active_servers(be) <= 1)).then(|| {
            be.timeouts
                .connect
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1))
        });
        Some(Next { redispatch, pause })
    }

    /// After a response `retry-on` names (HAProxy's `do_l7_retry`): None
    /// when no retry is left. HAProxy counts such a retry in `wretr` once
    /// more when it picks the server again.
    pub(crate) fn after_l7_failure(
        &mut self,
        be: &BackendRt,
        server: &ServerState,
    ) -> Option<Next> {
        if self.done >= be.retries {
            return None;
        }
        self.done += 1;
        server.counters.local().wretr.inc();
        be.state.counters.local().wretr.inc();
        let redispatch = self.choose_redispatch(be, server);
        Some(Next {
            redispatch,
            pause: None,
        })
    }

    /// `stream_choose_redispatch`: with `option redispatch`, go elsewhere
    /// when the server is no longer usable, on the retries the interval
    /// names (every Pth, or the Nth before the last), or at once when the
    /// algorithm is not a hash and several active servers exist. A retry
    /// on the same server is counted here.
    fn choose_redispatch(&self, be: &BackendRt, server: &ServerState) -> bool {
        let redispatch = be.redispatch.is_some_and(|after| {
            let done = i64::from(self.done);
            let every = match after {
                a if a > 0 => i64::from(a),
                a if a < 0 => i64::from(be.retries) + 1 + i64::from(a),
                _ => 0,
            };
            !server.usable()
                || (every != 0 && done.checked_rem(every) == Some(0))
                || (!be.balance.is_hash() && active_servers(be) > 1)
        });
        if !redispatch {
            server.counters.local().wretr.inc();
            be.state.counters.local().wretr.inc();
        }
        redispatch
    }

    /// Gives up the seat's server and takes a slot through load balancing
    /// (queue and health included), avoiding that server when another
    /// one can serve. Counts `wredis` when the server changed, `wretr` when
    /// the same one came back. Returns whether the server changed.
    pub(crate) async fn redispatch(
        &mut self,
        be: &Arc<BackendRt>,
        key: &LbKey<'_>,
        seat: &mut Seat,
    ) -> Result<bool, PickError> {
        let failed = seat.server.clone();
        seat.release();
        let slot = balance::acquire_avoiding(be, key, Some(&failed)).await?;
        *seat = Seat::new(slot);
        let moved = !Arc::ptr_eq(&failed, &seat.server);
        if moved {
            self.redispatched = true;
            failed.counters.local().wredis.inc();
            be.state.counters.local().wredis.inc();
        } else {
            failed.counters.local().wretr.inc();
            be.state.counters.local().wretr.inc();
        }
        Ok(moved)
    }

    /// Waits the turn-around pause and redispatches when `next` says so.
    pub(crate) async fn apply(
        &mut self,
        next: Next,
        be: &Arc<BackendRt>,
        key: &LbKey<'_>,
        seat: &mut Seat,
    ) -> Result<(), PickError> {
        if let Some(p) = next.pause {
            tokio::time::sleep(p).await;
        }
        if next.redispatch {
            self.redispatch(be, key, seat).await?;
        }
        Ok(())
    }
}

/// Active (non-backup) servers taking load now: HAProxy's `srv_act`.
fn active_servers(be: &BackendRt) -> usize {
    be.servers
        .iter()
        .filter(|s| !s.backup && s.state.usable())
        .count()
}

/// Opens a connection to the seat's server, retrying and redispatching as
/// the policy says. Counts `connect` per attempt and `econ` (on the last
/// server and the backend) when it gives up, as HAProxy counts
/// `failed_conns`; each failure feeds `observe layer4`.
///
/// A server with `ssl` is connected over TLS (`host`: the request's Host,
/// for an SNI taken from it); a failed handshake is a failed connection,
/// also counted in `ssl_failed_handshake` and logged with its reason.
/// `dst`: the address the client connected to (a server without a port or
/// with address `0.0.0.0` takes it from there); `client`: the client's
/// own (`source ... usesrc client|clientip`). With the connection, the id
/// of the server's pool whose address it dialed.
pub(crate) async fn connect(
    be: &Arc<BackendRt>,
    key: &LbKey<'_>,
    seat: &mut Seat,
    tries: &mut Retries,
    host: Option<&[u8]>,
    dst: Option<SocketAddr>,
    client: Option<SocketAddr>,
) -> Result<(Stream, u64), ConnectError> {
    loop {
        seat.attempt();
        let server = seat.server.clone();
        server.counters.local().connect.inc();
        be.state.counters.local().connect.inc();
        let pool = server.pool.load_full();
        let (timeout, io_timeout) = (be.timeouts.connect, be.timeouts.server);
        let opts = server_opts(be, &server);
        let dial = Dial {
            keepalive: be.tcpka,
            tuning: be.extras.srvtcpka,
            source: opts.and_then(|o| o.source).or(be.extras.source),
            client,
            tfo: opts.is_some_and(|o| o.tfo),
        };
        let failed = match crate::upstream::pool::connect(
            &pool, timeout, &dial, host, io_timeout, dst,
        )
        .await
        {
            Ok(s) => {
                if s.is_tls() {
                    server.counters.local().ssl_sess.inc();
                    be.state.counters.local().ssl_sess.inc();
                }
                // With the id of the pool whose address it dialed.
                return Ok((s, pool.id()));
            }
            Err(e) => e,
        };
        if matches!(failed, ConnectError::Tls(_) | ConnectError::TlsTimeout) {
            server.counters.local().ssl_failed_handshake.inc();
            be.state.counters.local().ssl_failed_handshake.inc();
            tracing::warn!(
                "Connection to server {}/{} failed: {failed}.",
                be.name,
                server.name
            );
        }
        let timed_out = failed.timed_out();
        if server.observe.load(Relaxed) != 0 {
            crate::upstream::check::observe(be, &server, Some("Connection error"));
        }
        let Some(next) = tries.after_conn_failure(be, &server, !timed_out) else {
            server.counters.local().econ.inc();
            be.state.counters.local().econ.inc();
            return Err(ConnectError::Exhausted {
                last: Box::new(failed),
            });
        };
        tries.apply(next, be, key, seat).await?;
    }
}

/// The server's own `source`, if it has one. A scan of pointers, on the
/// path of new connections only, which a connect's system calls dwarf.
/// The configured options of `server` (None for one a snapshot no
/// longer has).
fn server_opts<'b>(
    be: &'b BackendRt,
    server: &Arc<ServerState>,
) -> Option<&'b crate::config::model::ServerOpts> {
    be.servers
        .iter()
        .find(|s| Arc::ptr_eq(&s.state, server))
        .map(|s| &s.opts)
}

/// How a new TCP connection to a server is made, beyond its address.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dial {
    /// `option srvtcpka`: TCP keep-alive probes.
    pub(crate) keepalive: bool,
    /// `srvtcpka-cnt|idle|intvl`: their tuning.
    pub(crate) tuning: crate::config::extras::TcpKaTuning,
    /// `source`: the server's, else the backend's.
    pub(crate) source: Option<crate::config::extras::Source>,
    /// The client's address, for `usesrc client|clientip`.
    pub(crate) client: Option<SocketAddr>,
    /// `tfo`: TCP Fast Open.
    pub(crate) tfo: bool,
}

/// One TCP connection attempt bounded by `timeout connect`, from the
/// `source` address `dial` names if any; with `keepalive` (`option
/// srvtcpka`), the socket sends TCP keep-alive probes.
pub(crate) async fn connect_once(
    addr: SocketAddr,
    timeout: Option<Duration>,
    dial: &Dial,
) -> std::io::Result<TcpStream> {
    let connecting = async {
        match &dial.source {
            Some(src) => crate::upstream::source::connect_from(addr, src, dial.client).await,
            None => crate::upstream::source::connect_plain(addr, dial.tfo).await,
        }
    };
    let attempt = match timeout {
        Some(t) => tokio::time::timeout(t, connecting)
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connect timeout",
                ))
            }),
        None => connecting.await,
    };
    let s = attempt?;
    let _ = s.set_nodelay(true);
    if dial.keepalive {
        crate::upstream::source::keepalive(&s, &dial.tuning);
    }
    Ok(s)
}
