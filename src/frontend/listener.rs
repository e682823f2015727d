//! Listening sockets (socket2: SO_REUSEADDR, a backlog) and accept loops
//! that honour `maxconn`: past the limit, new connections wait in the
//! kernel's backlog instead of being accepted and reset.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use crate::tls::TcpConn;
use arc_swap::ArcSwap;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::config::model::{BindProto, BindV6, ListenAddr, Mode, UnixBind, UnixName};
use crate::snapshot::client::ClientConn;
use crate::snapshot::runtime::Runtime;
use crate::sys::peer::Peer;
use crate::tls::Stream;

/// Accept backlog of every listener.
const BACKLOG: i32 = 1024;

/// Which frontend a listening socket serves, and that frontend's limit. A
/// reload may point an open socket at another frontend without closing it.
pub(crate) struct Binding {
    pub(crate) frontend: Arc<str>,
    pub(crate) limit: Arc<Semaphore>,
    /// `bind ... maxconn`: the listener's own limit.
    pub(crate) own: Option<Arc<Semaphore>>,
}

/// What the accept loops of a listener are to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Accepting,
    /// SIGTTOU: the socket does not listen; the loops leave the reactor.
    Paused,
    Stopped,
    /// Replaced by a reload: what waits in the backlog is taken before the
    /// socket closes (`drain`).
    Retired,
}

/// Control of a listener's accept loops (one per worker).
pub(crate) struct ListenerCtl {
    binding: ArcSwap<Binding>,
    run: tokio::sync::watch::Sender<Run>,
    /// The listening socket, valid while the accept loops run (for
    /// handing it to a new process with `-x`).
    fd: RawFd,
    addr: ListenAddr,
}

impl ListenerCtl {
    pub(crate) fn rebind(&self, b: Binding) {
        self.binding.store(Arc::new(b));
    }

    /// Stops accepting; the socket closes, open connections go on.
    pub(crate) fn stop(&self) {
        self.run.send_replace(Run::Stopped);
    }

    /// Stops accepting once what waits in the backlog is taken (a reload
    /// bound this address again: closing at once would reset what the
    /// kernel queued here). Not for a process that stops: a socket handed
    /// to a new process (`-x`) lives on there, and what waits is its.
    pub(crate) fn retire(&self) {
        self.run.send_replace(Run::Retired);
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd
    }

    /// SIGTTOU, as in HAProxy: the socket stops listening (so another
    /// process may take the port; the kernel resets what waited in the
    /// backlog) but stays bound, ready to listen again.
    pub(crate) fn pause(&self) {
        if self.set_paused(true) {
            tracing::warn!("Paused listener {} (SIGTTOU).", self.addr);
        }
    }

    /// SIGTTIN: a paused socket listens again.
    pub(crate) fn resume(&self) {
        if self.set_paused(false) {
            tracing::warn!("Resumed listener {} (SIGTTIN).", self.addr);
        }
    }

    /// Pauses the socket (`on`) or has it listen again: whether it
    /// changed (SIGTTOU and SIGTTIN for all listeners, a script's
    /// `Proxy:pause()` and `resume()` for a frontend's).
    pub(crate) fn set_paused(&self, on: bool) -> bool {
        if on {
            self.stop_listening()
        } else {
            self.listen_again()
        }
    }

    fn stop_listening(&self) -> bool {
        if *self.run.borrow() != Run::Accepting {
            return false;
        }
        // SAFETY: shutdown on the listening socket the loops own.
        if unsafe { libc::shutdown(self.fd, libc::SHUT_RD) } < 0 {
            let e = std::io::Error::last_os_error();
            tracing::error!("Listener {}: cannot pause: {e}", self.addr);
            return false;
        }
        self.run.send_replace(Run::Paused);
        true
    }

    fn listen_again(&self) -> bool {
        if *self.run.borrow() != Run::Paused {
            return false;
        }
        // SAFETY: listen on the bound socket the loops own.
        if unsafe { libc::listen(self.fd, BACKLOG) } < 0 {
            let e = std::io::Error::last_os_error();
            tracing::error!("Listener {}: cannot listen again: {e}", self.addr);
            self.run.send_replace(Run::Stopped);
            return false;
        }
        self.run.send_replace(Run::Accepting);
        true
    }

    pub(crate) fn addr(&self) -> &ListenAddr {
        &self.addr
    }

    pub(crate) fn frontend(&self) -> Arc<str> {
        self.binding.load().frontend.clone()
    }
}

/// Starts accepting on `l` (a socket from [`bind_std`] or [`bind_unix`],
/// or one inherited), listening on `addr`: one accept loop on each worker
/// (`sys::workers`), so a connection is accepted, registered and served on
/// the same thread, never handed from one to another. Every worker's
/// reactor watches the socket; a new connection wakes those that wait,
/// the first to accept it serves it, the others find nothing and wait
/// again. Before the workers start (unit tests), one loop on the calling
/// runtime.
pub(crate) fn spawn(
    rt: Arc<Runtime>,
    l: Listening,
    addr: ListenAddr,
    binding: Binding,
    global: Arc<Semaphore>,
) -> std::io::Result<Arc<ListenerCtl>> {
    let fd = l.raw_fd();
    l.set_nonblocking()?;
    // Sockets accepted on a TCP listener inherit TCP_NODELAY from it: set
    // here once (on a socket bound here, inherited or handed over alike),
    // it saves a system call on every connection.
    if let Listening::Tcp(t) = &l {
        let _ = socket2::SockRef::from(t).set_tcp_nodelay(true);
    }
    let ctl = Arc::new(ListenerCtl {
        binding: ArcSwap::from_pointee(binding),
        run: tokio::sync::watch::Sender::new(Run::Accepting),
        fd,
        addr,
    });
    let workers = crate::sys::workers::workers();
    if workers.is_empty() {
        let listener = register(l)?;
        tokio::spawn(accept_loop(rt, listener, global, ctl.clone()));
        return Ok(ctl);
    }
    // Each loop owns a descriptor of the one socket: the socket closes
    // when the last loop ends. The first keeps `fd` itself.
    let mut copies = Vec::with_capacity(workers.len());
    for _ in 1..workers.len() {
        copies.push(l.try_clone()?);
    }
    copies.insert(0, l);
    for (worker, copy) in workers.iter().zip(copies) {
        // Registered with the worker's reactor (entered here), served by
        // its loop there.
        let listener = {
            let _on = worker.enter();
            register(copy)?
        };
        worker.spawn(accept_loop(
            rt.clone(),
            listener,
            global.clone(),
            ctl.clone(),
        ));
    }
    Ok(ctl)
}

/// Accepts connections until stopped. `global` caps the whole process, the
/// binding's limit its frontend.
///
/// The loop waits for a pending connection before it takes the two slots,
/// and accepts only once it holds them: past either limit the connection
/// stays in the kernel's backlog, and an idle listener holds no slot that
/// a busy one (of the same frontend or another) could use.
async fn accept_loop(
    rt: Arc<Runtime>,
    mut listener: AsyncFd<Listening>,
    global: Arc<Semaphore>,
    ctl: Arc<ListenerCtl>,
) {
    let mut run = ctl.run.subscribe();
    loop {
        let now = *run.borrow_and_update();
        match now {
            Run::Accepting => {}
            Run::Stopped => return,
            Run::Retired => {
                drain(&rt, &listener, &global, &ctl).await;
                return;
            }
            Run::Paused => {
                match sit_out_pause(listener, &mut run, &ctl.addr).await {
                    Some(l) => listener = l,
                    None => return,
                }
                continue;
            }
        }
        let ready = tokio::select! {
            r = run.changed() => match r {
                Ok(()) => continue,
                Err(_) => return,
            },
            r = listener.readable() => r,
        };
        let Ok(mut ready) = ready else { return };
        let binding = ctl.binding.load_full();
        // `rate-limit sessions`: past the frontend's rate, connections wait
        // in the backlog until it falls back below.
        let wait = session_rate_wait(&rt, &binding.frontend);
        if !wait.is_zero() {
            drop(ready);
            tokio::select! {
                r = run.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(wait) => {}
            }
            continue;
        }
        // The frontend's slot first: waiting for it holds nothing another
        // frontend needs. Below the limits the slots are taken at once,
        // without the waiting futures (a tenth of the instructions of a
        // request on a new connection went to them).
        // (A change of the loop's orders goes first, as the wait below
        // would see it.)
        let permits = if !run.has_changed().unwrap_or(true)
            && let Some(p) = try_permits(&binding, &global)
        {
            Some(p)
        } else {
            tokio::select! {
            r = run.changed() => match r {
                Ok(()) => continue,
                Err(_) => return,
            },
            r = async {
                // The listener's own slot first, as HAProxy's listener
                // stops accepting before its frontend does.
                let own = match &binding.own {
                    Some(o) => Some(o.clone().acquire_owned().await.ok()?),
                    None => None,
                };
                let l = binding.limit.clone().acquire_owned().await.ok()?;
                let g = global.clone().acquire_owned().await.ok()?;
                Some(crate::snapshot::client::Permits::new([g, l], own))
            } => r,
            }
        };
        let Some(permits) = permits else { return };
        let (stream, peer) = match ready.try_io(|l| l.get_ref().accept_stream()) {
            Ok(Ok(x)) => x,
            // Nothing pending after all (the client left, or another
            // worker took it): wait again.
            Err(_would_block) => continue,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
            // Not listening: paused (SIGTTOU) under this loop, which may
            // not have seen the order yet. The socket leaves the reactor
            // and joins it afresh once listening again: its registration
            // from before the pause reports no new connection after it.
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => {
                drop(ready);
                match sit_out_pause(listener, &mut run, &ctl.addr).await {
                    Some(l) => listener = l,
                    None => return,
                }
                continue;
            }
            Ok(Err(e)) => {
                // EMFILE and friends: back off briefly rather than spin.
                tracing::warn!("accept on frontend {}: {e}", binding.frontend);
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        drop(ready);
        deal(&rt, &binding.frontend, permits, stream, peer, &ctl.addr);
    }
}

/// Serves a connection just accepted here, or on the worker that serves
/// the fewest connections when this one serves many more
/// (`sys::workers::deal`).
fn deal(
    rt: &Arc<Runtime>,
    frontend: &Arc<str>,
    permits: crate::snapshot::client::Permits,
    stream: std::net::TcpStream,
    peer: Option<SocketAddr>,
    local: &ListenAddr,
) {
    use crate::sys::workers;
    let Some(me) = workers::current() else {
        return serve_new(
            rt,
            frontend,
            permits,
            stream,
            peer,
            local,
            workers::Load::nowhere(),
        );
    };
    let to = workers::deal(me);
    // Counted there at once, so that the next connection of a burst sees it.
    let load = workers::Load::on(to);
    match workers::workers().get(to) {
        Some(other) if to != me => {
            let (rt, frontend, local) = (rt.clone(), frontend.clone(), local.clone());
            other.spawn(async move {
                serve_new(&rt, &frontend, permits, stream, peer, &local, load);
            });
        }
        _ => serve_new(rt, frontend, permits, stream, peer, local, load),
    }
}

/// The three slots a connection takes (the listener's own, its
/// frontend's, the process's), if all are free now; None (and none held)
/// if one is not.
fn try_permits(
    binding: &Binding,
    global: &Arc<Semaphore>,
) -> Option<crate::snapshot::client::Permits> {
    let own = match &binding.own {
        Some(o) => Some(o.clone().try_acquire_owned().ok()?),
        None => None,
    };
    let l = binding.limit.clone().try_acquire_owned().ok()?;
    let g = global.clone().try_acquire_owned().ok()?;
    Some(crate::snapshot::client::Permits::new([g, l], own))
}

/// How long the process's `maxconnrate` and `maxsessrate`, then the
/// frontend's `rate-limit sessions`, keep new connections
/// waiting (zero without a limit, or below it).
fn session_rate_wait(rt: &Runtime, frontend: &str) -> std::time::Duration {
    rt.with_snapshot(|snap| {
        // The process's `maxconnrate` and `maxsessrate` first.
        let g = &snap.global;
        let p = &rt.process;
        let process = g
            .maxconnrate
            .map(|l| p.counts.conn_rate().wait_below(l))
            .into_iter()
            .chain(g.maxsessrate.map(|l| p.counts.sess_rate().wait_below(l)))
            .max()
            .unwrap_or_default();
        if !process.is_zero() {
            return process;
        }
        snap.frontends()
            .find(|f| *f.name == *frontend)
            .and_then(|f| {
                let limit = f.extras.rate_limit_sessions?;
                Some(f.state.counters.sess_rate().wait_below(limit))
            })
            .unwrap_or_default()
    })
}

/// Serves a connection just accepted on `local` for `frontend`, on the
/// calling worker (counted there by `load`).
fn serve_new(
    rt: &Arc<Runtime>,
    frontend: &Arc<str>,
    permits: crate::snapshot::client::Permits,
    stream: std::net::TcpStream,
    peer: Option<SocketAddr>,
    local: &ListenAddr,
    load: crate::sys::workers::Load,
) {
    let (client, peer, serving, screen, tls) =
        open_client(rt, frontend, permits, &stream, peer, local, load);
    if let Some(screen) = screen {
        // Non-blocking already (accept4).
        let Ok(stream) = TcpStream::from_std(stream) else {
            // Unusable socket: dropping it closes the connection.
            return;
        };
        tokio::spawn(crate::frontend::accept::serve_screened(
            client, stream, peer, serving, screen, tls,
        ));
        return;
    }
    // Not registered with the reactor until it has to wait: a request
    // already there is read, answered and closed without `epoll_ctl`.
    spawn_accepted(client, TcpConn::unregistered(stream), peer, serving, tls);
}

/// A listener a reload replaced takes what already waits in its backlog
/// before its descriptor closes: closing a listening socket resets the
/// connections queued on it, and the kernel goes on queueing there until it closes (an IPv6
/// socket replaced by another of the same address and port stays first in
/// its lookup). Each worker's loop takes what it finds, then waits a
/// little for a connection that was on its way, until the socket has been
/// quiet that long ([`DRAIN_QUIET`]) or [`DRAIN_MAX`] has passed; the
/// socket closes with the last loop. Without a free slot the rest is
/// left, as a full frontend leaves it.
async fn drain(
    rt: &Arc<Runtime>,
    listener: &AsyncFd<Listening>,
    global: &Arc<Semaphore>,
    ctl: &Arc<ListenerCtl>,
) {
    let binding = ctl.binding.load_full();
    let until = tokio::time::Instant::now() + DRAIN_MAX;
    // Takes what waits; false without a free slot.
    let take_all = || loop {
        let Some(permits) = try_permits(&binding, global) else {
            return false;
        };
        match listener.get_ref().accept_stream() {
            Ok((stream, peer)) => serve_new(
                rt,
                &binding.frontend,
                permits,
                stream,
                peer,
                &ctl.addr,
                crate::sys::workers::Load::here(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => {}
            // Nothing left (WouldBlock), or an error that more tries
            // would meet again.
            Err(_) => return true,
        }
    };
    loop {
        if !take_all() {
            return;
        }
        let quiet = (until - tokio::time::Instant::now()).min(DRAIN_QUIET);
        match tokio::time::timeout(quiet, listener.readable()).await {
            Ok(Ok(mut ready)) if tokio::time::Instant::now() < until => ready.clear_ready(),
            _ => {
                // Once more as the socket is about to close: a connection
                // that came while the timer's wake-up was on its way (a
                // loaded box takes milliseconds) would be reset by the
                // close. What comes after this is the kernel's to reset:
                // the window is the few instructions to the close.
                take_all();
                return;
            }
        }
    }
}

/// How long a stopping listener must stay quiet before it closes, and the
/// longest it goes on draining under a steady flow.
const DRAIN_QUIET: std::time::Duration = std::time::Duration::from_millis(20);
const DRAIN_MAX: std::time::Duration = std::time::Duration::from_millis(500);

/// How an accepted connection is served: its frontend's mode, and what the
/// listener that accepted it speaks in `mode http` (`bind ... proto`,
/// `option disable-h2-upgrade`), found by the listener itself, so a UNIX
/// socket has its own as a TCP one has.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Serving {
    pub(crate) mode: Mode,
    proto: BindProto,
}

/// Serves a connection once accepted and screened (PROXY header, `tcp-request
/// connection` rules): TLS first on a `bind ... ssl` listener. Each kind
/// gets a task of its own future: one async fn over the three would make
/// every task as big as the largest (the TLS handshake's), and an idle
/// plain connection pays for it while it waits.
pub(crate) fn spawn_accepted(
    client: ClientConn,
    stream: TcpConn,
    peer: Peer,
    serving: Serving,
    tls: Option<TlsAccept>,
) {
    // In a slot of the worker's slab (`sys::slab`): tokio moves a task's
    // future by value as it spawns it, stores it and replaces it by its
    // output, about ten copies of several KB per connection; the slot is
    // made once and the task holds its address. The future is kept small
    // besides (6.7 KB in a release build; docs/benchmarks.md, "The
    // connection's future"): the rare paths of a request run in boxed
    // futures of their own, and the common path's functions borrow what
    // they work on (an async fn keeps its by-value arguments twice).
    match (tls, serving.mode) {
        (None, Mode::Http) => {
            crate::sys::slab::spawn(move || {
                crate::http::service::serve_connection(
                    client,
                    Stream::Tcp(stream),
                    peer,
                    Some(serving.proto),
                    None,
                )
            });
        }
        (None, Mode::Tcp) => {
            crate::sys::slab::spawn(move || {
                crate::tcp::serve(client, Stream::Tcp(stream), peer, None)
            });
        }
        (Some(tls), _) => {
            let Ok(stream) = stream.into_reactor() else {
                return;
            };
            crate::sys::slab::spawn(move || tls_accept(client, stream, peer, tls, serving));
        }
    }
}

/// The TLS handshake of a client on a `bind ... ssl` listener, then the
/// connection is served as any other. A failed handshake is counted
/// (`ssl_failed_handshake`) and logged; the connection just closes.
async fn tls_accept(
    client: ClientConn,
    stream: TcpStream,
    peer: Peer,
    tls: TlsAccept,
    serving: Serving,
) {
    // `tune.ssl.capture-buffer-size`: the ClientHello's bytes are kept
    // while rustls reads them (the handshake is driven from its first
    // message, as with crt-list options).
    let mut raw_hello = Vec::new();
    let capture = tls.capture;
    let handshake = async {
        if capture > 0 {
            return accept_keeping_hello(stream, &tls.config, &mut raw_hello).await;
        }
        if tls.config.per_cert.is_none() {
            return tokio_rustls::TlsAcceptor::from(tls.config.config.clone())
                .accept(stream)
                .await;
        }
        // crt-list lines with options: the ClientHello's SNI picks the
        // line, whose configuration (versions, ALPN, verify) the
        // handshake then goes on with.
        let start =
            tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream)
                .await?;
        let config = tls.config.pick(start.client_hello().server_name());
        start.into_stream(config).await
    };
    let handshake = crate::wire::io::with_timeout(tls.handshake_timeout, handshake);
    let listen = &tls.config;
    let fe = client.frontend_state().cloned();
    let counters = fe.as_ref().map(|s| &s.counters);
    match handshake.await {
        Some(Ok(tls)) => {
            if let Some(c) = counters {
                c.local().ssl_sess.inc();
            }
            let conn = tls.get_ref().1;
            let own = listen.presented(conn.server_name());
            let mut facts = Box::new(crate::tls::TlsFacts::of(conn, own));
            if capture > 0 {
                facts.hello = crate::wire::client_hello::capture(&raw_hello, capture).map(Box::new);
            }
            let stream = Stream::Tls(Box::new(tokio_rustls::TlsStream::Server(tls)));
            match serving.mode {
                Mode::Http => {
                    let proto = Some(serving.proto);
                    crate::http::service::serve_connection(client, stream, peer, proto, Some(facts))
                        .await
                }
                Mode::Tcp => crate::tcp::serve(client, stream, peer, Some(facts)).await,
            }
        }
        failed => {
            if let Some(c) = counters {
                c.local().ssl_failed_handshake.inc();
            }
            let (reason, empty) = match failed {
                Some(Err(e)) => (e.to_string(), e.kind() == std::io::ErrorKind::UnexpectedEof),
                _ => ("timeout".to_string(), false),
            };
            crate::observe::log::emit_handshake_failure(
                &client.rt,
                client.frontend(),
                peer,
                &reason,
                empty,
            );
        }
    }
}

/// Registers a non-blocking listening socket with the reactor, for
/// readiness only (the loop accepts itself, once it holds its slots).
fn register(l: Listening) -> std::io::Result<AsyncFd<Listening>> {
    // SAFETY: the AsyncFd owns the listener, whose descriptor stays open
    // and the same until the AsyncFd is dropped or taken apart.
    unsafe { AsyncFd::register_with_interest(l, Interest::READABLE) }.map_err(|e| e.into_parts().1)
}

/// Leaves the reactor while the socket does not listen, and enters it
/// again once it listens (None: stopped meanwhile, or it cannot), so no
/// readiness seen while it was shut down lingers.
async fn sit_out_pause(
    l: AsyncFd<Listening>,
    run: &mut tokio::sync::watch::Receiver<Run>,
    addr: &ListenAddr,
) -> Option<AsyncFd<Listening>> {
    let std = l.into_inner();
    loop {
        let now = *run.borrow_and_update();
        match now {
            Run::Paused => run.changed().await.ok()?,
            Run::Stopped | Run::Retired => return None,
            Run::Accepting => break,
        }
    }
    match register(std) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!("Listener {addr}: cannot listen again: {e}");
            None
        }
    }
}

/// The TLS handshake of a listener whose ClientHellos are captured: the
/// first message is read here, its bytes kept in `raw` (up to the most a
/// ClientHello can take), then given to rustls, and the handshake goes on
/// with the configuration its SNI picks.
async fn accept_keeping_hello(
    stream: TcpStream,
    listen: &crate::tls::ListenTls,
    raw: &mut Vec<u8>,
) -> std::io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
    use std::io::{Error, ErrorKind};
    // A ClientHello is one handshake message, in records of at most
    // 2^14 + 5 bytes: none worth keeping goes beyond this.
    const KEEP: usize = 64 * 1024;
    let mut acceptor = rustls::server::Acceptor::default();
    let mut chunk = vec![0u8; 4096];
    loop {
        stream.readable().await?;
        let n = match stream.try_read(&mut chunk) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        if raw.len() < KEEP {
            raw.extend_from_slice(&chunk[..n.min(KEEP - raw.len())]);
        }
        let mut got = &chunk[..n];
        while !got.is_empty() {
            acceptor.read_tls(&mut got)?;
        }
        match acceptor.accept() {
            Ok(None) => continue,
            Ok(Some(accepted)) => {
                let config = listen.pick(accepted.client_hello().server_name());
                let start = tokio_rustls::StartHandshake::from_parts(accepted, stream);
                return start.into_stream(config).await;
            }
            Err((e, _alert)) => return Err(Error::new(ErrorKind::InvalidData, e)),
        }
    }
}

/// The TLS of a `bind ... ssl` listener, for an accepted connection.
pub(crate) struct TlsAccept {
    config: Arc<crate::tls::ListenTls>,
    /// `tune.ssl.capture-buffer-size`.
    capture: usize,
    /// The handshake's bound: `timeout client`.
    handshake_timeout: Option<std::time::Duration>,
}

/// Opens the record of a connection accepted on `frontend` (on `local`);
/// also says which mode the frontend runs in, and what has to screen the
/// connection before it is served (its session then starts later).
fn open_client(
    rt: &Arc<Runtime>,
    frontend: &Arc<str>,
    permits: crate::snapshot::client::Permits,
    stream: &std::net::TcpStream,
    peer: Option<SocketAddr>,
    local: &ListenAddr,
    load: crate::sys::workers::Load,
) -> (
    ClientConn,
    Peer,
    Serving,
    Option<crate::frontend::accept::Screen>,
    Option<TlsAccept>,
) {
    let (fe_state, mode, fe_iid, screen, tls, listener, proto) = rt.with_snapshot(
        |snap| match snap.frontends().find(|f| *f.name == **frontend) {
            Some(f) => {
                if f.tcpka {
                    crate::upstream::source::keepalive(stream, &f.extras.clitcpka);
                }
                (
                    Some(f.state.clone()),
                    f.mode,
                    f.iid,
                    crate::frontend::accept::Screen::of(f, local),
                    f.tls_binds
                        .iter()
                        .find(|(a, _)| a == local)
                        .map(|(_, c)| TlsAccept {
                            config: c.clone(),
                            capture: snap.global.ssl.capture_size as usize,
                            handshake_timeout: f.timeouts.client,
                        }),
                    // Its id and count (`so_id`, `dst_conn`); a
                    // UNIX client's address is the listener's id.
                    f.listeners
                        .iter()
                        .find(|(a, _)| a == local)
                        .map(|(_, l)| l.clone()),
                    bind_proto(f, local),
                )
            }
            None => (None, Mode::Http, 0, None, None, None, BindProto::Auto),
        },
    );
    // A listener its frontend no longer has (a reload between accept and
    // here): one of its own, numbered 1, the connection goes on to close.
    let listener = listener.unwrap_or_else(|| {
        Arc::new(crate::sample::conn::Listener::new(
            frontend.clone(),
            1,
            None,
        ))
    });
    let luid = listener.id() as u32;
    let peer = peer.map_or(Peer::Unix(luid), Peer::Ip);
    if let Some(st) = &fe_state {
        st.client.count_connection();
    }
    let fd = stream.as_raw_fd();
    let slot = crate::state::sessions::Slot::register(peer, fe_iid, fd);
    let facts = crate::sample::conn::ClientFacts::new(fd, listener);
    let mut client = ClientConn::new(rt, permits, slot, facts, load);
    if let Some(st) = fe_state
        && screen.is_none()
    {
        client.start_session(st);
    }
    (client, peer, Serving { mode, proto }, screen, tls)
}

/// What the listener on `local` speaks: its `proto`, else HTTP/1 or
/// HTTP/2 as the client starts, unless `option disable-h2-upgrade` makes
/// it HTTP/1 only.
fn bind_proto(fe: &crate::snapshot::FrontendRt, local: &ListenAddr) -> BindProto {
    match fe.bind_protos.iter().find(|(a, _)| a == local) {
        Some((_, p)) => *p,
        None if fe.disable_h2_upgrade => BindProto::H1,
        None => BindProto::Auto,
    }
}

/// Binds a UNIX stream listener without a runtime, as HAProxy does: a
/// file is bound under a temporary name beside its path, given its owner
/// and mode, then renamed over the path (a stale socket there is replaced,
/// and a process still listening on the old file keeps what it accepted);
/// an abstract name is bound as HAProxy pads it.
pub(crate) fn bind_unix(u: &UnixBind) -> std::io::Result<std::os::unix::net::UnixListener> {
    let l = match &u.name {
        UnixName::Path(path) => {
            crate::sys::unix::bind_unix_at(path, u.perms.mode, (u.perms.uid, u.perms.gid))?
        }
        UnixName::Abns(name) => {
            let addr = crate::sys::abns::addr(name)?;
            std::os::unix::net::UnixListener::bind_addr(&addr)?
        }
    };
    l.set_nonblocking(true)?;
    Ok(l)
}

/// Binds a listening socket without a runtime (before daemonizing), with
/// the `v6only`/`v4v6` choice of its `bind` line.
/// `interface` and `transparent` (SO_BINDTODEVICE, IP_TRANSPARENT) are set
/// before bind(2), as HAProxy sets them: only on a socket bound here.
pub(crate) fn bind_std(
    addr: SocketAddr,
    v6: BindV6,
    opts: &crate::config::model::BindSock,
) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if let Some(dev) = &opts.interface {
        socket.bind_device(Some(dev.as_bytes()))?;
    }
    if opts.transparent {
        if addr.is_ipv6() {
            socket.set_ip_transparent_v6(true)?;
        } else {
            socket.set_ip_transparent_v4(true)?;
        }
    }
    socket.set_reuse_address(true)?;
    // As HAProxy: a new process (`-sf`) can bind next to the old one,
    // unless `noreuseport` says otherwise.
    if !opts.noreuseport {
        set_reuse_port(&socket)?;
    }
    // Accepted sockets inherit the listener's buffer sizes.
    if let Some(n) = opts.rcvbuf {
        socket.set_recv_buffer_size(n as usize)?;
    }
    if let Some(n) = opts.sndbuf {
        socket.set_send_buffer_size(n as usize)?;
    }
    if addr.is_ipv6() {
        // As HAProxy: without either option the system's default stands
        // (`net.ipv6.bindv6only`, 0 on most systems: `:::80` takes IPv4).
        match v6 {
            BindV6::System => {}
            BindV6::V6Only => socket.set_only_v6(true)?,
            BindV6::V4V6 => socket.set_only_v6(false)?,
        }
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Sets the socket options of a `bind` line on its listening TCP socket
/// `fd` (bound here, handed over, or inherited as `fd@<n>`, as HAProxy sets
/// them on every listener): TCP_DEFER_ACCEPT, TCP_FASTOPEN, TCP_MAXSEG,
/// TCP_USER_TIMEOUT as asked, and,
/// on a socket `fresh`ly bound here, listen(2) again with the line's
/// backlog (as HAProxy, a socket that came listening keeps its queue).
/// An option the line does not give is left as the socket has it.
pub(crate) fn set_bind_options(
    fd: RawFd,
    sock: &crate::config::model::BindSock,
    fresh: bool,
) -> std::io::Result<()> {
    fn set(
        fd: RawFd,
        level: libc::c_int,
        name: libc::c_int,
        v: libc::c_int,
    ) -> std::io::Result<()> {
        // SAFETY: setsockopt with a c_int value on a socket the caller owns.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
    if fresh && (sock.backlog.is_some() || sock.maxconn.is_some()) {
        // SAFETY: listen on a bound socket the caller owns; on one that
        // listens already it changes the queue's length.
        if unsafe { libc::listen(fd, sock.backlog_or(BACKLOG)) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    if sock.defer_accept {
        // HAProxy's value: the kernel waits that many seconds for data
        // (then accepts anyway on the SYN-ACK retransmit).
        set(fd, libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, 1)?;
    }
    if sock.tfo {
        // The queue of pending Fast Open requests: the listener's backlog.
        set(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN,
            sock.backlog_or(BACKLOG),
        )?;
    }
    // A negative `mss` leaves the socket's MSS as it is: HAProxy 2.6
    // sets only a positive one on a listener.
    if let Some(mss) = sock.mss.filter(|m| *m > 0) {
        set(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss)?;
    }
    if let Some(ms) = sock.tcp_ut {
        set(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            ms.min(i32::MAX as u32) as i32,
        )?;
    }
    Ok(())
}

/// Whether the listening socket `fd` already is what `v6` asks for: a
/// reload keeps it then, else binds it again (the option cannot change
/// once a socket is bound).
pub(crate) fn v6_matches(fd: RawFd, addr: SocketAddr, v6: BindV6) -> bool {
    if !addr.is_ipv6() {
        return true;
    }
    // SAFETY: `fd` is a listening socket owned by a running accept loop;
    // the reference lives only for this call.
    let sock = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let Ok(only) = socket2::SockRef::from(&sock).only_v6() else {
        return true;
    };
    only == match v6 {
        BindV6::V6Only => true,
        BindV6::V4V6 => false,
        BindV6::System => system_v6only(),
    }
}

/// `net.ipv6.bindv6only`: what an IPv6 socket is without the option set
/// (0, Linux's default, when it cannot be read).
fn system_v6only() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only").is_ok_and(|s| s.trim() == "1")
}

fn set_reuse_port(socket: &Socket) -> std::io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on an open socket with a valid int option.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_REUSEPORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Adopts the inherited descriptor `fd` of a `bind fd@<n>` (systemd socket
/// activation, a supervisor that opened the port): it must be an open,
/// listening TCP or UNIX stream socket; its address is read from the
/// socket itself.
pub(crate) fn adopt_inherited(fd: RawFd) -> std::io::Result<(ListenAddr, Listening)> {
    inherited(fd, adopt_any(fd)?)
}

/// Takes an adopted socket for `bind fd@<fd>`, TCP or UNIX, and records
/// the address it listens on as standing for `fd@<fd>`: an IP address and
/// port, or the socket's name (a UNIX client is then shown as on a bound
/// UNIX socket, `unix:<n>`).
pub(crate) fn inherited(fd: RawFd, socket: Listening) -> std::io::Result<(ListenAddr, Listening)> {
    let addr = match &socket {
        Listening::Tcp(l) => ListenAddr::Ip(l.local_addr()?),
        Listening::Unix(l) => ListenAddr::Unix(unix_name(&l.local_addr()?)?),
    };
    crate::state::inherited::record(fd, addr.clone());
    Ok((addr, socket))
}

/// The name a UNIX listening socket is bound to: its path, or its abstract
/// name without the NUL bytes HAProxy pads it with.
fn unix_name(a: &std::os::unix::net::SocketAddr) -> std::io::Result<UnixName> {
    use std::os::linux::net::SocketAddrExt;
    if let Some(p) = a.as_pathname() {
        return Ok(UnixName::Path(p.to_path_buf()));
    }
    match a.as_abstract_name() {
        Some(n) => {
            let n = n.split(|b| *b == 0).next().unwrap_or_default();
            Ok(UnixName::Abns(String::from_utf8_lossy(n).into_owned()))
        }
        None => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "an unnamed UNIX socket",
        )),
    }
}

/// A listening socket of either family: bound here, inherited or handed
/// over.
pub(crate) enum Listening {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

impl Listening {
    pub(crate) fn raw_fd(&self) -> RawFd {
        match self {
            Listening::Tcp(l) => l.as_raw_fd(),
            Listening::Unix(l) => l.as_raw_fd(),
        }
    }

    /// Another descriptor of the same socket.
    fn try_clone(&self) -> std::io::Result<Listening> {
        Ok(match self {
            Listening::Tcp(l) => Listening::Tcp(l.try_clone()?),
            Listening::Unix(l) => Listening::Unix(l.try_clone()?),
        })
    }

    fn set_nonblocking(&self) -> std::io::Result<()> {
        match self {
            Listening::Tcp(l) => l.set_nonblocking(true),
            Listening::Unix(l) => l.set_nonblocking(true),
        }
    }

    /// Accepts one connection, with its peer's IP address (None on a UNIX
    /// socket, which has none to tell).
    ///
    /// A UNIX client is carried as a `TcpStream` too: everything the
    /// engines do with a client socket (read, write, readiness, shutdown,
    /// linger, splice, peek) is the same system call on a UNIX stream
    /// socket, so the TCP path keeps its one plain arm. What differs is
    /// the addresses, which are never asked of such a socket: the
    /// connection's `Peer` says UNIX, and TCP-only options (`TCP_NODELAY`,
    /// keep-alive) fail harmlessly where they are set.
    ///
    /// The socket comes non-blocking and close-on-exec from `accept4(2)`
    /// itself: one system call per connection where `accept` and then
    /// `FIONBIO` took two.
    fn accept_stream(&self) -> std::io::Result<(std::net::TcpStream, Option<SocketAddr>)> {
        use std::os::fd::FromRawFd;
        let fd = self.raw_fd();
        // SAFETY: accept4 writes at most `len` bytes of address into the
        // storage socket2 hands us, and the length it wrote into `len`.
        let (conn, addr) = unsafe {
            socket2::SockAddr::try_init(|storage, len| {
                match libc::accept4(
                    fd,
                    storage.cast(),
                    len,
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                ) {
                    -1 => Err(std::io::Error::last_os_error()),
                    s => Ok(s),
                }
            })?
        };
        // SAFETY: `conn` is the connected stream socket accept4 just
        // returned, owned by nothing else.
        let stream = unsafe { std::net::TcpStream::from_raw_fd(conn) };
        Ok((stream, addr.as_socket()))
    }
}

impl AsRawFd for Listening {
    fn as_raw_fd(&self) -> RawFd {
        self.raw_fd()
    }
}

/// Adopts the inherited or handed-over descriptor `fd`, whatever its
/// family: it must be an open, listening TCP or UNIX stream socket. It is
/// made non-blocking. On error the descriptor is left as it was.
pub(crate) fn adopt_any(fd: RawFd) -> std::io::Result<Listening> {
    use std::os::fd::FromRawFd;
    let family = listening_family(fd)?;
    if ![libc::AF_INET, libc::AF_INET6, libc::AF_UNIX].contains(&family) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a TCP or UNIX socket",
        ));
    }
    // SAFETY: fcntl on an open descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY (both arms): the descriptor is open, a listening socket of
    // that family, and from now on owned by the returned value.
    match family {
        libc::AF_INET | libc::AF_INET6 => Ok(Listening::Tcp(unsafe {
            std::net::TcpListener::from_raw_fd(fd)
        })),
        _ => Ok(Listening::Unix(unsafe {
            std::os::unix::net::UnixListener::from_raw_fd(fd)
        })),
    }
}

/// The address family of `fd`, which must be an open listening socket.
fn listening_family(fd: RawFd) -> std::io::Result<libc::c_int> {
    let int_opt = |opt: libc::c_int| -> std::io::Result<libc::c_int> {
        let mut val: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt with a valid int buffer; fails cleanly on a
        // descriptor that is not open or not a socket.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&mut val as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(val)
    };
    if int_opt(libc::SO_ACCEPTCONN)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a listening socket",
        ));
    }
    int_opt(libc::SO_DOMAIN)
}
