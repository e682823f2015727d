//! One `peers` section at run time: its remote peers, the connection
//! kept to each (made by this process, or taken from the peer), the
//! listener of the local peer, and the section's resynchronisation on
//! start (HAProxy's sync task).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use super::codec::{self, status};
use super::session;
use crate::config::model::PeersSection;
use crate::state::table::Table;

/// HAProxy's delay before connecting again to a peer (and the time a
/// silent peer is given before its session is closed).
pub(super) const RECONNECT: Duration = Duration::from_millis(5000);
/// How long a new process waits for a peer to teach it its tables.
const RESYNC: Duration = Duration::from_millis(5000);
/// HAProxy's connect timeout for peers.
const CONNECT: Duration = Duration::from_millis(1000);
/// How long the handshake may take (HAProxy's client and server
/// timeouts for peers).
const HANDSHAKE: Duration = Duration::from_millis(5000);

/// What a session reads and writes: TCP or TLS.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub(crate) struct Section {
    pub(crate) name: String,
    pub(crate) local: String,
    /// The local peer's address (its `peer` line's, else the `bind`'s).
    pub(crate) local_addr: Option<SocketAddr>,
    /// Every peer's name, the local one's too, in the section's order.
    pub(crate) names: Vec<String>,
    pub(crate) peers: Vec<Arc<Peer>>,
    /// The shared tables; a table's number on the wire is its place + 1.
    pub(crate) tables: Vec<Arc<Table>>,
    /// Woken by the tables' local updates.
    pub(super) wake: Arc<Notify>,
    pub(super) resync: Mutex<Resync>,
    pub(crate) last_change: SystemTime,
    /// The connectors' wake-ups (HAProxy's sync task's calls).
    calls: AtomicU32,
    stopped: AtomicBool,
    stop: Notify,
}

/// The section's resynchronisation from a peer (HAProxy's
/// `PEERS_F_RESYNC_*` flags): wanted until a peer taught the tables, or
/// none could within [`RESYNC`].
#[derive(Debug)]
pub(crate) struct Resync {
    pub(crate) finished: bool,
    /// A peer's session was given the lesson to ask.
    pub(crate) assigned: bool,
    pub(crate) deadline: Instant,
    /// HAProxy's record of how it went (`PEERS_F_RESYNC_REMOTE*`).
    pub(crate) flags: u32,
}

/// [`Resync::flags`]: the lesson asked of the peer given it, a lesson's
/// wait ran out, a session that had the
/// lesson ended, a peer taught the tables fully or partially, a peer was
/// given the lesson.
pub(super) const RESYNC_PROCESS: u32 = 0x8;
pub(super) const RESYNC_TIMEOUT: u32 = 0x20;
pub(super) const RESYNC_ABORT: u32 = 0x80;
pub(super) const RESYNC_FINISHED: u32 = 0x200;
pub(super) const RESYNC_PARTIAL: u32 = 0x800;
pub(super) const RESYNC_ASSIGNED: u32 = 0x2000;
/// A peer asked this process for a lesson.
pub(super) const RESYNC_REQUESTED: u32 = 0x4000;

/// A remote peer of the section.
pub(crate) struct Peer {
    pub(crate) name: String,
    pub(crate) addr: Option<SocketAddr>,
    tls: Option<Arc<crate::tls::upstream::UpstreamTls>>,
    pub(crate) state: Mutex<PeerState>,
    /// Wakes the connector when the session it waits on ends.
    ended: Notify,
}

/// What `show peers` shows of a peer, and what its sessions share.
#[derive(Debug, Default)]
pub(crate) struct PeerState {
    /// The last handshake status (HAProxy's `statuscode`).
    pub(crate) status: u32,
    /// The session in force, its number and its kill switch.
    pub(crate) session: Option<(u64, Arc<Notify>)>,
    next_session: u64,
    pub(crate) last_hdshk: Option<Instant>,
    pub(crate) reconnect: Option<Instant>,
    pub(crate) heartbeat: Option<Instant>,
    pub(crate) confirm: u32,
    pub(crate) tx_hbt: u32,
    pub(crate) rx_hbt: u32,
    pub(crate) no_hbt: u32,
    pub(crate) new_conn: u32,
    pub(crate) proto_err: u32,
    pub(crate) coll: u32,
    /// Per shared table, the last of this process's updates the peer
    /// acknowledged (HAProxy's `st->update`), kept across sessions.
    pub(crate) acked: Vec<u32>,
    /// The peer's last resynchronisation was partial: ask another.
    pub(crate) not_up_to_date: bool,
    /// The session's addresses and the cursors of its tables, for `show
    /// peers`.
    pub(crate) conn: Option<session::ConnView>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Section {
    pub(super) fn start(s: &PeersSection, local: &str, tables: Vec<Arc<Table>>) -> Arc<Section> {
        let wake = Arc::new(Notify::new());
        for t in &tables {
            t.set_waker(Some(wake.clone()));
        }
        let local_line = s.peers.iter().find(|p| p.name == local);
        let peers: Vec<Arc<Peer>> = s
            .peers
            .iter()
            .filter(|p| p.name != local)
            .map(|p| {
                Arc::new(Peer {
                    name: p.name.clone(),
                    addr: p.sockaddr,
                    tls: p.tls.clone(),
                    state: Mutex::new(PeerState {
                        acked: vec![0; tables.len()],
                        ..Default::default()
                    }),
                    ended: Notify::new(),
                })
            })
            .collect();
        let section = Arc::new(Section {
            name: s.name.clone(),
            local: local.to_string(),
            local_addr: local_line
                .and_then(|p| p.sockaddr)
                .or(s.listen.as_ref().map(|l| l.addr)),
            resync: Mutex::new(Resync {
                // Nothing to learn from when alone.
                finished: peers.is_empty(),
                assigned: false,
                deadline: Instant::now() + RESYNC,
                flags: 0,
            }),
            names: s.peers.iter().map(|p| p.name.clone()).collect(),
            calls: AtomicU32::new(0),
            peers,
            tables,
            wake,
            last_change: SystemTime::now(),
            stopped: AtomicBool::new(false),
            stop: Notify::new(),
        });
        if let Some(l) = &s.listen {
            let tls = l.tls.clone();
            let addr = l.addr;
            let sec = section.clone();
            tokio::spawn(async move {
                // The section this one replaces (a reload) may hold the
                // address a little longer, until its listener task ends.
                let mut tries = 0;
                let prebound = super::take_bound(addr).and_then(|l| TcpListener::from_std(l).ok());
                let listener = loop {
                    if let Some(l) = prebound {
                        break l;
                    }
                    match bind(addr).and_then(TcpListener::from_std) {
                        Ok(l) => break l,
                        Err(e) if tries >= 50 || sec.stopped() => {
                            tracing::warn!(
                                "Proxy '{}': cannot bind peers listener [{addr}]: {e}",
                                sec.local
                            );
                            return;
                        }
                        Err(_) => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                };
                sec.accept_loop(listener, tls).await;
            });
        }
        for p in &section.peers {
            if p.addr.is_some() {
                tokio::spawn(section.clone().connect_loop(p.clone()));
            }
        }
        section
    }

    /// A section of `local` with the remote peers `peers` (no address:
    /// nothing is connected or listened to) over `tables`, for the
    /// sessions' tests.
    #[cfg(test)]
    pub(super) fn for_test(local: &str, peers: &[&str], tables: Vec<Arc<Table>>) -> Arc<Section> {
        let here = crate::loc::Loc {
            file: "t.cfg".into(),
            line: 1,
        };
        let s = PeersSection {
            name: "p".into(),
            loc: here.clone(),
            disabled: false,
            peers: std::iter::once(local)
                .chain(peers.iter().copied())
                .map(|n| crate::config::model::PeerLine {
                    name: n.to_string(),
                    addr: None,
                    sockaddr: None,
                    server: false,
                    tls: None,
                    loc: here.clone(),
                })
                .collect(),
            listen: None,
            tables: Vec::new(),
        };
        Section::start(&s, local, tables)
    }

    /// Stops the listener, the connectors and the sessions (a reload
    /// that removed or changed the section).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Relaxed);
        self.stop.notify_waiters();
        for p in &self.peers {
            if let Some((_, kill)) = &lock(&p.state).session {
                kill.notify_one();
            }
            p.ended.notify_waiters();
        }
        for t in &self.tables {
            t.set_waker(None);
        }
    }

    pub(super) fn calls(&self) -> u32 {
        self.calls.load(Relaxed)
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Relaxed)
    }

    /// Resolves once the section is stopped (at once if it is).
    async fn stopping(&self) {
        loop {
            let n = self.stop.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.stopped() {
                return;
            }
            n.await;
        }
    }

    /// Whether a resynchronisation is still wanted (its time is up when
    /// no peer is teaching and [`RESYNC`] passed).
    pub(super) fn resync_wanted(&self) -> bool {
        let mut r = lock(&self.resync);
        if !r.finished && !r.assigned && Instant::now() >= r.deadline {
            r.finished = true;
            r.flags |= RESYNC_TIMEOUT;
        }
        !r.finished
    }

    /// Makes an accepted connection the session of `peer`, killing any
    /// other (the newest connection wins, as in HAProxy, whose incoming
    /// connection replaces the one it has).
    fn register_incoming(&self, peer: &Peer) -> (u64, Arc<Notify>) {
        let mut st = lock(&peer.state);
        if let Some((_, old)) = st.session.take() {
            old.notify_one();
            st.coll += 1;
            // Both sides may do the same: apart at random.
            let jitter = 50 + crate::sample::random::next_u64() % 2000;
            st.reconnect = Some(Instant::now() + Duration::from_millis(jitter));
        }
        st.next_session += 1;
        let kill = Arc::new(Notify::new());
        st.session = Some((st.next_session, kill.clone()));
        (st.next_session, kill)
    }

    /// Makes a connection attempt the session of `peer`, unless one is
    /// in force already (taken from the peer since the connector looked).
    fn register_outgoing(&self, peer: &Peer) -> Option<(u64, Arc<Notify>)> {
        let mut st = lock(&peer.state);
        if st.session.is_some() {
            return None;
        }
        st.next_session += 1;
        let kill = Arc::new(Notify::new());
        st.session = Some((st.next_session, kill.clone()));
        st.status = status::CONNECTING;
        st.reconnect = Some(Instant::now() + RECONNECT);
        st.heartbeat = None;
        st.last_hdshk = Some(Instant::now());
        st.new_conn += 1;
        Some((st.next_session, kill))
    }

    /// Forgets session `id` of `peer` if it is still the one in force.
    fn release(&self, peer: &Peer, id: u64) {
        let mut st = lock(&peer.state);
        if st.session.as_ref().is_some_and(|(i, _)| *i == id) {
            st.session = None;
            st.conn = None;
            st.heartbeat = None;
        }
        drop(st);
        peer.ended.notify_waiters();
    }

    /// The connector of one remote peer: connects when no session is in
    /// force, at once on start, then [`RECONNECT`] after a failure.
    async fn connect_loop(self: Arc<Self>, peer: Arc<Peer>) {
        let Some(addr) = peer.addr else { return };
        loop {
            if self.stopped() {
                return;
            }
            self.calls.fetch_add(1, Relaxed);
            // Wait for the session in force to end, and for the time to
            // connect again.
            let ended = peer.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let (busy, at) = {
                let st = lock(&peer.state);
                (st.session.is_some(), st.reconnect)
            };
            if busy {
                tokio::select! {
                    _ = ended => {}
                    _ = self.stopping() => return,
                }
                continue;
            }
            if let Some(at) = at.filter(|at| *at > Instant::now()) {
                tokio::select! {
                    _ = tokio::time::sleep_until(at.into()) => {}
                    _ = ended => {}
                    _ = self.stopping() => return,
                }
                continue;
            }
            // A session the peer opened meanwhile stays: no attempt.
            let Some((id, kill)) = self.register_outgoing(&peer) else {
                continue;
            };
            let attempt = self.clone().connect_once(peer.clone(), addr);
            tokio::select! {
                _ = attempt => {}
                _ = kill.notified() => {}
                _ = self.stopping() => {}
            }
            self.release(&peer, id);
        }
    }

    /// One outgoing session: connect, hello, status, then messages.
    async fn connect_once(self: Arc<Self>, peer: Arc<Peer>, addr: SocketAddr) {
        let Ok(Ok(tcp)) = tokio::time::timeout(CONNECT, TcpStream::connect(addr)).await else {
            return;
        };
        let _ = tcp.set_nodelay(true);
        lock(&peer.state).status = status::CONNECTED;
        let io: Box<dyn Io> = match &peer.tls {
            Some(tls) => match tls.handshake(tcp, addr, None).await {
                Ok(s) => Box::new(s),
                Err(_) => return,
            },
            None => Box::new(tcp),
        };
        let mut io = BufReader::new(io);
        let hello = codec::hello(&peer.name, &self.local, std::process::id(), 1);
        let code = tokio::time::timeout(HANDSHAKE, async {
            io.write_all(hello.as_bytes()).await.ok()?;
            let mut line = Vec::new();
            io.read_until(b'\n', &mut line).await.ok()?;
            line.ends_with(b"\n").then(|| codec::status_code(&line))
        })
        .await;
        let Ok(Some(code)) = code else { return };
        {
            let mut st = lock(&peer.state);
            st.status = code;
            st.last_hdshk = Some(Instant::now());
        }
        if code != status::SUCCESS {
            return;
        }
        session::run(&self, &peer, io, false, session::ConnView::default()).await;
    }

    /// Takes the connections of the other peers.
    async fn accept_loop(
        self: Arc<Self>,
        listener: TcpListener,
        tls: Option<Arc<crate::tls::ListenTls>>,
    ) {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = self.stopping() => return,
            };
            let Ok((tcp, from)) = accepted else {
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let view = session::ConnView {
                accepted: tcp.local_addr().ok().map(|l| (from, l, tls.is_some())),
                ..Default::default()
            };
            let sec = self.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let io: Box<dyn Io> = match tls {
                    Some(t) => {
                        let acceptor = tokio_rustls::TlsAcceptor::from(t.config.clone());
                        match tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await {
                            Ok(Ok(s)) => Box::new(s),
                            _ => return,
                        }
                    }
                    None => Box::new(tcp),
                };
                sec.serve_incoming(io, view).await;
            });
        }
    }

    /// An incoming connection: the hello read and answered, then the
    /// session if it is a peer of the section.
    async fn serve_incoming(self: Arc<Self>, io: Box<dyn Io>, view: session::ConnView) {
        let mut io = BufReader::new(io);
        let hello = tokio::time::timeout(HANDSHAKE, async {
            let mut lines = Vec::new();
            for _ in 0..3 {
                let mut line = Vec::new();
                io.read_until(b'\n', &mut line).await.ok()?;
                if line.pop() != Some(b'\n') {
                    return None;
                }
                lines.push(line);
                // A wrong first or second line is answered at once.
                if self.check_hello(&lines).is_err() {
                    break;
                }
            }
            Some(lines)
        })
        .await;
        let Ok(Some(lines)) = hello else { return };
        let peer = match self.check_hello(&lines) {
            Ok(Some(p)) => p,
            Ok(None) => return,
            Err(code) => {
                let _ = io.write_all(format!("{code}\n").as_bytes()).await;
                return;
            }
        };
        // A peer that speaks 2.0 takes no expiry in the updates.
        let downgraded = lines
            .first()
            .is_some_and(|l| codec::hello_version(l) == Ok(0));
        let (id, kill) = self.register_incoming(&peer);
        {
            let mut st = lock(&peer.state);
            // HAProxy counts the connections it makes only.
            st.status = status::SUCCESS;
            st.last_hdshk = Some(Instant::now());
            st.reconnect = Some(Instant::now() + RECONNECT);
        }
        if io.write_all(b"200\n").await.is_err() {
            self.release(&peer, id);
            return;
        }
        tokio::select! {
            _ = session::run(&self, &peer, io, downgraded, view) => {}
            _ = kill.notified() => {}
            _ = self.stopping() => {}
        }
        self.release(&peer, id);
    }

    /// The hello's lines read so far: Err with the status to answer, Ok
    /// with the peer once the three lines are good (None before).
    fn check_hello(&self, lines: &[Vec<u8>]) -> Result<Option<Arc<Peer>>, u32> {
        if let Some(v) = lines.first() {
            codec::hello_version(v)?;
        }
        if let Some(host) = lines.get(1)
            && host.as_slice() != self.local.as_bytes()
        {
            return Err(status::HOST);
        }
        let Some(last) = lines.get(2) else {
            return Ok(None);
        };
        let Some(sp) = memchr::memchr(b' ', last) else {
            return Err(status::PROTOCOL);
        };
        let name = &last[..sp];
        self.peers
            .iter()
            .find(|p| p.name.as_bytes() == name)
            .cloned()
            .map(Some)
            .ok_or(status::PEER)
    }
}

/// The local peer's listening socket, bound as HAProxy binds (the
/// address may be held by a process that does not listen on it).
pub(super) fn bind(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    sock.listen(1024)?;
    Ok(sock.into())
}
