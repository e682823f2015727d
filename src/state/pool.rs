//! Idle keep-alive connections to one server, and what identifies the
//! peer they were made for: runtime state a server keeps across reloads.
//! New connections are made by `upstream/pool.rs`.
//!
//! A pool stands for one peer identity: the address and, for TLS, the
//! verification, CA, client certificate, ALPN and SNI settings (see
//! [`UpstreamTls::identity`]). A change of any of them gives the server a
//! new pool, so connections made under other settings are never reused.
//! With an SNI taken from the request, each idle connection also carries
//! the name it was opened for and is only reused for that name.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::net::TcpStream;

use crate::config::model::UnixName;
use crate::state::lock;
use crate::tls::Stream;
use crate::tls::upstream::{SniSpec, UpstreamTls};

/// How many idle connections one server keeps at most (shared out evenly
/// over the runtimes' lists).
const MAX_IDLE: usize = 1024;

#[derive(Debug)]
struct Idle {
    stream: Stream,
    /// The SNI it was opened with, when the SNI comes from the request.
    sni: Option<Box<str>>,
}

#[derive(Debug)]
pub(crate) struct Pool {
    /// Unique to this pool (never reused, unlike its address): a
    /// connection goes back to the pool it was relayed under, not to one a
    /// reload put in its place meanwhile.
    id: u64,
    addr: SocketAddr,
    /// A server on a UNIX stream or abstract socket (`addr` unused then).
    unix: Option<Arc<UnixName>>,
    tls: Option<Arc<UpstreamTls>>,
    /// Idle connections, one list per runtime (`workers`): a connection is
    /// registered with the reactor of the runtime that opened it, so it is
    /// only reused there (elsewhere, each of its wake-ups would cross
    /// threads).
    idle: Box<[Mutex<Vec<Idle>>]>,
    /// `proto h2`: the HTTP/2 connection all requests share (nothing is
    /// kept in `idle` then).
    h2: Option<H2Conn>,
    /// `proto fcgi`.
    fcgi: bool,
}

/// What a server speaks (`proto`): part of the peer's identity, so a
/// change gives the server a fresh pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Mux {
    #[default]
    H1,
    /// `proto h2`: one shared HTTP/2 connection.
    H2,
    /// `proto fcgi`: FastCGI (`wire::fcgi`), its connections pooled as
    /// HTTP/1 ones are.
    Fcgi,
}

/// The HTTP/2 connection a `proto h2` server's requests share, once made
/// (`upstream/h2.rs` makes it on first use and again when it broke).
#[derive(Debug, Default)]
pub(crate) struct H2Conn {
    send: tokio::sync::Mutex<Option<SendRequest<Bytes>>>,
}

impl H2Conn {
    /// The live connection's sender, if there is one.
    pub(crate) async fn current(&self) -> Option<SendRequest<Bytes>> {
        self.send.lock().await.clone()
    }

    /// The slot, locked while a new connection is made into it.
    pub(crate) async fn slot(&self) -> tokio::sync::MutexGuard<'_, Option<SendRequest<Bytes>>> {
        self.send.lock().await
    }
}

impl Pool {
    pub(crate) fn new(addr: SocketAddr, tls: Option<Arc<UpstreamTls>>, mux: Mux) -> Self {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Pool {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            addr,
            unix: None,
            tls,
            idle: (0..crate::sys::workers::count())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            h2: (mux == Mux::H2).then(Default::default),
            fcgi: mux == Mux::Fcgi,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The pool of a server on the UNIX socket `unix` (if Some).
    pub(crate) fn on_unix(mut self, unix: Option<Arc<UnixName>>) -> Self {
        self.unix = unix;
        self
    }

    /// The UNIX socket of a server at `/path`, `unix@` or `abns@`.
    pub(crate) fn unix(&self) -> Option<&Arc<UnixName>> {
        self.unix.as_ref()
    }

    /// The server speaks HTTP/2 (`proto h2`).
    pub(crate) fn is_h2(&self) -> bool {
        self.h2.is_some()
    }

    /// What the server speaks.
    pub(crate) fn mux(&self) -> Mux {
        match (self.is_h2(), self.fcgi) {
            (true, _) => Mux::H2,
            (false, true) => Mux::Fcgi,
            (false, false) => Mux::H1,
        }
    }

    /// The shared connection of a `proto h2` server.
    pub(crate) fn h2(&self) -> Option<&H2Conn> {
        self.h2.as_ref()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's address depends on each client connection: port 0
    /// (none was given) takes the port the client connected to, an
    /// unspecified IP (`0.0.0.0`, `::`) its destination IP, as HAProxy
    /// forwards for transparent and forward proxies.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.unix.is_none() && (self.addr.port() == 0 || self.addr.ip().is_unspecified())
    }

    /// Where a connection for a client that connected to `dst` goes.
    pub(crate) fn target(&self, dst: Option<SocketAddr>) -> SocketAddr {
        let Some(dst) = dst else { return self.addr };
        let ip = if self.addr.ip().is_unspecified() {
            dst.ip()
        } else {
            self.addr.ip()
        };
        let port = if self.addr.port() == 0 {
            dst.port()
        } else {
            self.addr.port()
        };
        SocketAddr::new(ip, port)
    }

    pub(crate) fn tls(&self) -> Option<&Arc<UpstreamTls>> {
        self.tls.as_ref()
    }

    /// Whether this pool stands for the same peer as (`addr`, `tls`,
    /// HTTP/2 or not).
    pub(crate) fn same_peer(
        &self,
        addr: SocketAddr,
        tls: Option<&Arc<UpstreamTls>>,
        mux: Mux,
    ) -> bool {
        self.addr == addr
            && self.mux() == mux
            && match (&self.tls, tls) {
                (None, None) => true,
                (Some(a), Some(b)) => a.identity == b.identity,
                _ => false,
            }
    }

    /// The SNI a request with Host `host` gets on this pool's connections,
    /// when it depends on the request (None otherwise).
    /// `host` is asked only then: finding the Host field is a scan of the
    /// request's fields.
    pub(crate) fn request_sni<'a>(
        &'a self,
        host: impl FnOnce() -> Option<&'a [u8]>,
    ) -> Option<&'a str> {
        let t = self.tls.as_ref()?;
        match t.sni {
            Some(SniSpec::Host) => t.sni_for(host()),
            _ => None,
        }
    }

    pub(crate) fn idle_count(&self) -> usize {
        self.idle.iter().map(|l| lock(l).len()).sum()
    }

    /// The idle list of the calling worker: None on a thread that is not
    /// one (the control runtime's connections are not kept), the one list
    /// before the workers start (unit tests run on their own runtime).
    fn list_here(&self) -> Option<usize> {
        match crate::sys::workers::current() {
            Some(n) => Some(n % self.idle.len()),
            None if crate::sys::workers::workers().is_empty() => Some(0),
            None => None,
        }
    }

    /// An idle connection that is still clean, most recently used first,
    /// opened for `sni` when the SNI depends on the request.
    ///
    /// A connection the server closed, or that holds unsolicited bytes, is
    /// dropped: a stray response read as the answer to the next request
    /// would hand one client another's response. See [`is_clean`] for how
    /// that is told without a system call in the common case. (On TLS the
    /// probe sees records, e.g. a close_notify, the same way.)
    ///
    /// The calling runtime's own list comes first; when it has none, one is
    /// taken from another runtime's list, as HAProxy's threads take idle
    /// connections from each other, and moved to this runtime's reactor.
    pub(crate) fn take(&self, sni: Option<&str>) -> Option<Stream> {
        let here = self.list_here();
        if let Some(h) = here
            && let Some(s) = self.take_from(h, sni, true)
        {
            return Some(s);
        }
        let start = here.unwrap_or(0);
        (0..self.idle.len())
            .map(|k| (start + k) % self.idle.len())
            .filter(|&i| Some(i) != here)
            .find_map(|i| {
                loop {
                    let s = self.take_from(i, sni, false)?;
                    if let Some(s) = adopt(s) {
                        break Some(s);
                    }
                }
            })
    }

    /// `here`: the list is the calling runtime's, whose reactor watches its
    /// connections; another runtime's reactor says nothing of what this
    /// thread has seen, so its connections are always probed.
    fn take_from(&self, list: usize, sni: Option<&str>, here: bool) -> Option<Stream> {
        loop {
            let mut conn = {
                let mut idle = lock(&self.idle[list]);
                let pos = idle.iter().rposition(|c| c.sni.as_deref() == sni)?;
                idle.remove(pos)
            };
            if conn
                .stream
                .tcp()
                .is_some_and(|t| (here && reactor_quiet(t)) || probe_clean(t))
            {
                return Some(conn.stream);
            }
        }
    }

    /// Closes every idle connection: the server entered maintenance, and
    /// HAProxy drops its idle connections then (`srv_icur` 0), so none
    /// outlives an operator taking the server out.
    pub(crate) fn drop_idle(&self) {
        for list in self.idle.iter() {
            lock(list).clear();
        }
    }

    /// Keeps `conn` for reuse (up to the idle limit: the process's, or
    /// the server's `pool-max-conn` when lower).
    pub(crate) fn put(&self, stream: Stream, sni: Option<&str>, max: u32) {
        // Its connections go to different places: one kept here could be
        // handed to a client that connected elsewhere.
        if self.is_dynamic() {
            return;
        }
        let Some(here) = self.list_here() else {
            return;
        };
        let max = (max as usize).min(MAX_IDLE);
        if max == 0 {
            return;
        }
        // Shared out over the lists; the last ones may take one more.
        let mut idle = lock(&self.idle[here]);
        if idle.len() < max.div_ceil(self.idle.len()) {
            idle.push(Idle {
                stream,
                sni: sni.map(Into::into),
            });
        }
    }
}

/// Moves a plain connection from another runtime's reactor to the calling
/// one's, so that its wake-ups stay on this thread (None: it was lost on
/// the way). A TLS connection stays where it is registered: it still works,
/// each wake-up just crosses threads.
fn adopt(s: Stream) -> Option<Stream> {
    match s {
        Stream::Tcp(t) => t
            .into_reactor()
            .and_then(|t| t.into_std())
            .and_then(TcpStream::from_std)
            .ok()
            .map(|t| Stream::Tcp(t.into())),
        other => Some(other),
    }
}

/// True when the reactor of the calling runtime, which `conn` is registered
/// with, has seen nothing arrive on it since it was last read: no system
/// call.
///
/// The reactor's readiness is cleared when a read comes back short (the
/// socket drained, as the last read of a response usually is) or would
/// block, and set again by any byte or FIN that arrives after. The
/// reactor's last turn also brought the client bytes the request taking
/// this connection is made of, so whatever the server sent before them is
/// seen. (HAProxy knows its idle connections through its poller the same
/// way.) A connection the reactor calls readable, e.g. one whose last read
/// filled the buffer exactly, is left to [`probe_clean`].
fn reactor_quiet(conn: &TcpStream) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    conn.poll_read_ready(&mut cx).is_pending()
}

/// True when nothing is waiting to be read and the peer has not closed, as
/// a real `recv(MSG_PEEK)` says (a system call, which cannot be fooled by
/// a reactor that has not caught up).
pub(crate) fn probe_clean(conn: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut probe = [0u8; 1];
    // SAFETY: `probe` is a valid one-byte buffer; the descriptor is open
    // for as long as `conn` lives.
    let n = unsafe {
        libc::recv(
            conn.as_raw_fd(),
            probe.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::upstream::ServerTlsOpts;

    fn tls(sni: &str) -> Arc<UpstreamTls> {
        let opts = ServerTlsOpts {
            enabled: true,
            verify_required: false,
            sni: Some(SniSpec::Fixed(sni.to_string())),
            ..Default::default()
        };
        match UpstreamTls::new(&opts, false, &mut Vec::new()) {
            Ok(t) => Arc::new(t),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_pool_stands_for_one_peer_identity() {
        let addr: SocketAddr = ([127, 0, 0, 1], 443).into();
        let other: SocketAddr = ([127, 0, 0, 1], 444).into();
        let a = tls("a.test");
        let pool = Pool::new(addr, Some(a.clone()), Mux::H1);
        assert!(pool.same_peer(addr, Some(&a), Mux::H1));
        assert!(
            pool.same_peer(addr, Some(&tls("a.test")), Mux::H1),
            "same settings"
        );
        assert!(!pool.same_peer(other, Some(&a), Mux::H1), "another address");
        assert!(!pool.same_peer(addr, None, Mux::H1), "plain TCP");
        assert!(
            !pool.same_peer(addr, Some(&tls("b.test")), Mux::H1),
            "another SNI"
        );
        assert!(!Pool::new(addr, None, Mux::H1).same_peer(addr, Some(&a), Mux::H1));
        assert!(Pool::new(addr, None, Mux::H1).same_peer(addr, None, Mux::H1));
        assert!(
            !Pool::new(addr, None, Mux::H1).same_peer(addr, None, Mux::H2),
            "HTTP/2 or not"
        );
        assert!(
            !Pool::new(addr, None, Mux::H1).same_peer(addr, None, Mux::Fcgi),
            "FastCGI or not"
        );
    }
}
