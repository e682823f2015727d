//! The stats socket's listeners: UNIX sockets bound HAProxy's way and TCP
//! ones, accept loops bounded by `stats maxconn`, and one task per
//! connection that frames lines and replies (prompt mode, timeouts).

use std::io;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::config::model::{CliLevel, StatsSocket};
use crate::snapshot::runtime::Runtime;

use crate::observe::stats::sess::CliOrigin;

use super::*;

// ---------------------------------------------------------------------------
// UNIX socket

/// Binds `sock` (a UNIX socket) like HAProxy: at `<path>.<pid>.tmp`, owner
/// (`uid`/`gid`) and `mode` applied, then renamed over `<path>`, so a
/// stale socket from an earlier run is replaced atomically and clients
/// never see a missing path. Call it before serving to report bind errors
/// at start-up.
pub(crate) fn bind_unix(sock: &StatsSocket) -> io::Result<std::os::unix::net::UnixListener> {
    let path = sock.path.to_string_lossy();
    if sock.tcp.is_some() || path.starts_with("ipv4@") || path.starts_with("ipv6@") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "TCP stats sockets are served with serve_tcp",
        ));
    }
    if sock.abns {
        // No file: nothing to rename, own or chmod.
        let addr = crate::sys::abns::addr(&path)?;
        let listener = std::os::unix::net::UnixListener::bind_addr(&addr)?;
        listener.set_nonblocking(true)?;
        return Ok(listener);
    }
    // `unix@/path` is HAProxy's explicit spelling of a UNIX path.
    let path = match path.strip_prefix("unix@") {
        Some(p) => PathBuf::from(p),
        None => sock.path.clone(),
    };
    bind_unix_at(&path, sock.mode, (sock.uid, sock.gid))
}

pub use crate::sys::unix::{SocketOwnershipError, bind_unix_at};

/// Serves a socket from [`bind_unix`] at `sock.level` (owned arguments, so
/// the future can be spawned directly).
pub(crate) async fn serve_listener(
    listener: std::os::unix::net::UnixListener,
    sock: StatsSocket,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    serve_unix_listener(listener, sock.level, rt).await
}

/// Accept loop over a bound UNIX socket: one task per connection, at most
/// [`MAX_CLI_CONNS`] at once (further clients wait in the backlog, as with
/// HAProxy's `stats maxconn`).
pub async fn serve_unix_listener(
    listener: std::os::unix::net::UnixListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(listener)?;
    let l = &listener;
    accept_loop(
        move || async move { l.accept().await.map(|(s, _)| (s, CliOrigin::Unix)) },
        level,
        rt,
    )
    .await
}

/// The same over TCP (`stats socket ipv4@host:port`).
pub(crate) async fn serve_tcp(
    listener: std::net::TcpListener,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let l = &listener;
    accept_loop(
        move || async move { l.accept().await.map(|(s, a)| (s, CliOrigin::Tcp(a))) },
        level,
        rt,
    )
    .await
}

/// One accept loop for both socket families.
async fn accept_loop<S, F>(
    accept: impl Fn() -> F,
    level: CliLevel,
    rt: Arc<Runtime>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: std::future::Future<Output = io::Result<(S, CliOrigin)>>,
{
    let slots = Arc::new(Semaphore::new(MAX_CLI_CONNS));
    loop {
        let permit = slots.clone().acquire_owned().await;
        // The process's `maxconnrate` and `maxsessrate` hold the CLI's
        // clients too, as HAProxy's.
        let wait = rt.with_snapshot(|snap| {
            let (g, p) = (&snap.global, &rt.process);
            g.maxconnrate
                .map(|l| p.counts.conn_rate().wait_below(l))
                .into_iter()
                .chain(g.maxsessrate.map(|l| p.counts.sess_rate().wait_below(l)))
                .max()
                .unwrap_or_default()
        });
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        match accept().await {
            Ok((stream, origin)) => spawn_conn(stream, origin, level, rt.clone(), permit.ok()),
            Err(e) => accept_failed(e).await,
        }
    }
}

fn spawn_conn<S>(
    stream: S,
    origin: CliOrigin,
    level: CliLevel,
    rt: Arc<Runtime>,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    count_accepted(&rt);
    tokio::spawn(async move {
        handle_conn(stream, origin, level, rt).await;
        drop(permit);
    });
}

/// HAProxy counts CLI sessions in the process totals: CumConns, ConnRate
/// and SessRate at accept (here, in the accept loop, so two readings of
/// `show info` see every earlier connection), CumReq when the session ends
/// ([`handle_conn`]); CurrConns not, its CLI listeners being unlimited.
pub(crate) fn count_accepted(rt: &Runtime) {
    rt.process.counts.count_connection();
}

async fn accept_failed(e: io::Error) {
    // Typically EMFILE: back off rather than spin, and keep serving.
    tracing::warn!(error = %e, "stats socket accept failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// `show events <ring> -w`: sends the ring's lines from number `from` on
/// as they are written, until the client sends anything (dropped, as
/// HAProxy's "any key") or goes; then the end of the response. `false`:
/// the client went.
async fn follow<S>(stream: &mut S, ring: &str, from: u64) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Some(ring) = crate::state::ring::get(ring) else {
        return stream.write_all(b"\n").await.is_ok();
    };
    let mut at = from;
    let mut chunk = [0u8; 512];
    loop {
        let woken = ring.notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let (lines, end) = ring.read_from(at);
        at = end;
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(&l);
            out.push(b'\n');
        }
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return false;
        }
        tokio::select! {
            _ = &mut woken => {}
            n = stream.read(&mut chunk) => {
                let more = matches!(n, Ok(n) if n > 0);
                return stream.write_all(b"\n").await.is_ok() && more;
            }
        }
    }
}

/// One CLI connection: reads lines, runs them, writes replies. Closes after
/// `quit`, on idle timeout (`stats timeout`), on EOF, or — when not in
/// prompt mode — as soon as every received line has been answered and
/// nothing more is buffered.
pub(crate) async fn handle_conn<S>(
    mut stream: S,
    origin: CliOrigin,
    level: CliLevel,
    rt: Arc<Runtime>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // The session counts in CumReq when it ends, however it ends (see
    // `count_accepted` for the rest).
    struct CountedSession<'a>(&'a Runtime);
    impl Drop for CountedSession<'_> {
        fn drop(&mut self) {
            self.0.count_request();
        }
    }
    let _counted = CountedSession(&rt);
    let mut idle = rt
        .snapshot()
        .global
        .stats_timeout
        .unwrap_or(DEFAULT_STATS_TIMEOUT);
    // The socket's own level: some commands read it rather than the
    // session's (`show table` entries).
    let bind_level = level;
    let mut level = level;
    let mut experimental = false;
    let mut prompt = false;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    // A command line ending with `<<` and the payload lines after it, up
    // to an empty line (HAProxy's payload syntax).
    let mut pending: Option<(String, Vec<String>)> = None;
    loop {
        let n = match tokio::time::timeout(idle, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => n,
            _ => break, // EOF, error or idle timeout
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
            let ended = match pending.as_mut() {
                // The empty line ends the payload: the command runs.
                Some(_) if line.is_empty() || line == "\r" => pending.take(),
                Some((_, lines)) => {
                    lines.push(line);
                    None
                }
                None if line.trim_end_matches('\r').ends_with("<<") => {
                    pending = Some((line, Vec::new()));
                    None
                }
                None => Some((line, Vec::new())),
            };
            let Some((line, lines)) = ended else {
                // In interactive mode each payload line is asked for.
                if prompt
                    && !matches!(
                        tokio::time::timeout(idle, stream.write_all(b"+ ")).await,
                        Ok(Ok(()))
                    )
                {
                    return;
                }
                continue;
            };
            // A command with a payload but no line in it sees the line
            // end, as HAProxy's does.
            let payload = line.trim_end_matches('\r').ends_with("<<").then(|| {
                if lines.is_empty() {
                    "\n".to_string()
                } else {
                    lines.join("\n")
                }
            });
            // The session's `show sess` pointer: its read buffer's address.
            let me = chunk.as_ptr() as usize;
            let mut reply = execute_from(
                &line,
                (level, experimental, bind_level),
                &rt,
                origin,
                me,
                payload.as_deref(),
            );
            // A `reload` is run here, where it can be awaited, then the
            // rest of the line.
            while reply
                .outputs
                .last()
                .is_some_and(|o| o.effect == Effect::Reload)
            {
                if let Some(last) = reply.outputs.last_mut() {
                    *last = commands::run_reload().await;
                }
                let rest = std::mem::take(&mut reply.rest);
                let more = execute_words(
                    rest,
                    (reply.level, reply.experimental, bind_level),
                    &rt,
                    origin,
                    me,
                    payload.as_deref(),
                );
                reply.outputs.extend(more.outputs);
                reply.level = more.level;
                reply.experimental = more.experimental;
                reply.rest = more.rest;
            }
            level = reply.level;
            experimental = reply.experimental;
            for o in &reply.outputs {
                if let Effect::SetTimeout(t) = &o.effect {
                    idle = *t;
                }
            }
            let (out, quit) = reply.render(&mut prompt);
            let wrote = tokio::time::timeout(idle, stream.write_all(out.as_bytes())).await;
            if quit || !matches!(wrote, Ok(Ok(()))) {
                return;
            }
            if let Some(Effect::Follow { ring, from }) = reply.outputs.last().map(|o| &o.effect)
                && !follow(&mut stream, ring, *from).await
            {
                return;
            }
        }
        if buf.len() > MAX_REQUEST {
            tracing::debug!("stats socket request larger than {MAX_REQUEST} bytes");
            break;
        }
        if !prompt && buf.is_empty() && pending.is_none() {
            break;
        }
    }
    let _ = tokio::time::timeout(idle, stream.shutdown()).await;
}
