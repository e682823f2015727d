//! HTTP/2 on the client side (RFC 9113), on the `h2` crate.
//!
//! A connection is served as HTTP/2 when its listener says `proto h2`,
//! when TLS negotiated `h2` by ALPN, or when a cleartext client starts
//! with the HTTP/2 preface (as HAProxy upgrades an HTTP/1 listener).
//!
//! Each stream goes through the very pipeline an HTTP/1 request goes
//! through (`service::handle_request`: rules, routing, balancing, queues,
//! retries, counters, logs, error pages), in a task of its own
//! (`stream.rs`): its request head in HTTP/1 form is what the pipeline
//! parses, its body and the answer go through the stream's frames
//! (`wire::h2_stream`), under HTTP/2 flow control both ways, trailers
//! included. An idle connection gives back its buffers after
//! `park::GRACE` (`h2::server::Connection::release_idle_memory`, a
//! change of the vendored crate).
//!
//! Limits are set explicitly (see [`Limits`]): concurrent streams, header
//! list size (which also bounds a CONTINUATION sequence), windows, and the
//! reset counters that stop a rapid-reset (CVE-2023-44487) or
//! MadeYouReset (CVE-2025-8671) flood with a GOAWAY.

pub(crate) mod stream;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::observe::log::LogRecord;
use crate::observe::outcome::{Cause, Phase};
use crate::snapshot::client::ClientConn;
use crate::snapshot::h2_limits::Limits;
use crate::tls::{Stream, TlsFacts};

/// The head an HTTP/1 parser sees of the preface: its first line and the
/// blank line after it.
pub(crate) const PREFACE_HEAD: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

/// The whole client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Streams refused by the client (RST_STREAM) before they were accepted,
/// beyond which the connection is closed with GOAWAY ENHANCE_YOUR_CALM:
/// the rapid-reset defence (h2's own default, set here so it is visible).
const MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;

/// Streams sluice had to reset because the client broke the protocol on
/// them (malformed headers, flow-control violations...), per connection,
/// beyond which the connection is closed: the MadeYouReset defence.
const MAX_LOCAL_ERROR_RESET_STREAMS: usize = 100;

/// Locally reset streams remembered (to ignore their late frames).
const MAX_CONCURRENT_RESET_STREAMS: usize = 10;
const RESET_STREAM_DURATION: Duration = Duration::from_secs(10);

/// The connection-level receive window: 2^31-1, opened as HAProxy 2.6
/// opens it, in the WINDOW_UPDATE that gives back the first DATA frame of
/// the connection (so that one says 2^31-1 less 65,535 plus the frame's
/// length): set as the `h2` crate's target at the handshake, announced by
/// the vendored crate only with that first update (vendor/h2/PATCHES.md).
/// Each stream's own window still bounds what a stream may send ahead of
/// the server; a connection window of only 64 KiB, returned by halves,
/// left a client sending many small bodies waiting for WINDOW_UPDATEs
/// HAProxy never makes it wait for. Window then goes back after every
/// DATA frame, on the stream (even one the client has ended) and on the
/// connection, as HAProxy gives it.
const CONNECTION_WINDOW: u32 = (1 << 31) - 1;

/// Response bytes buffered per stream ahead of the client's window.
const MAX_SEND_BUFFER: usize = 64 * 1024;

/// How long a closing connection (idle timeout, soft stop) is given to
/// deliver its GOAWAY and finish.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The server side of the HTTP/2 library set up with a frontend's limits.
fn builder(limits: &Limits) -> h2::server::Builder {
    let mut b = h2::server::Builder::new();
    b.max_concurrent_streams(limits.max_concurrent_streams)
        .initial_window_size(limits.initial_window_size)
        .header_table_size(limits.header_table_size)
        .max_frame_size(limits.max_frame_size)
        .max_header_list_size(limits.max_header_list_size)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESET_STREAMS))
        .max_concurrent_reset_streams(MAX_CONCURRENT_RESET_STREAMS)
        .reset_stream_duration(RESET_STREAM_DURATION)
        .max_send_buffer_size(MAX_SEND_BUFFER);
    // WebSocket over HTTP/2 (RFC 8441), announced as HAProxy 2.6
    // announces it: an extended CONNECT goes on as an HTTP/1 upgrade.
    if limits.connect_protocol {
        b.enable_connect_protocol();
    }
    b
}
/// The client connection's byte stream, with bytes already read from it
/// (the preface an HTTP/1 parser took for a request head) put back first.
struct Rewind {
    prefix: Bytes,
    inner: Stream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.prefix.has_remaining() {
            // (Emptied, the prefix lets go of the preface's read buffer,
            // 16 KiB, which would otherwise stay with the connection.)
            crate::wire::h2_stream::read_from(&mut this.prefix, buf);
            return Poll::Ready(Ok(()));
        }
        if buf.remaining() < SMALL_READ {
            // The read buffer an idle connection gave back comes again a
            // few bytes at a time (it doubles with each read that fills
            // it): what the socket holds is read in one go here, the rest
            // served from memory.
            let mut scratch = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut rb = ReadBuf::uninit(&mut scratch);
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            let got = rb.filled();
            let n = got.len().min(buf.remaining());
            buf.put_slice(&got[..n]);
            if n < got.len() {
                this.prefix = Bytes::copy_from_slice(&got[n..]);
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

/// A read into less room than this goes through a buffer of its own (see
/// `Rewind::poll_read`).
const SMALL_READ: usize = 64;

impl AsyncWrite for Rewind {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Serves an HTTP/2 client connection until it closes. `prefix` holds
/// bytes already read from `stream` (part of the preface, or empty).
pub(crate) async fn serve(
    mut client: ClientConn,
    stream: Stream,
    prefix: Bytes,
    peer: crate::sys::peer::Peer,
    tls: Option<Box<TlsFacts>>,
) {
    client.facts.set_h2();
    let Some((limits, handshake_timeout, state)) = client.rt.with_snapshot(|snap| {
        let fe = snap.frontends().find(|f| *f.name == *client.frontend())?;
        Some((
            fe.h2,
            fe.timeouts.http_request.or(fe.timeouts.client),
            fe.state.clone(),
        ))
    }) else {
        return;
    };
    let c = &state.counters;
    let client_counts = &state.client;
    // The address the client reached: a PROXY header's, else the socket's.
    let local = client.dst().or_else(|| stream.local_addr().ok());
    // The preface is read before the `h2` crate, which would send its
    // SETTINGS first: HAProxy 2.6 sends nothing until the client's preface
    // is in, and closes with nothing on bytes that are not one.
    let handshake = async {
        let (stream, prefix) = read_preface(stream, prefix).await?;
        let io = Rewind {
            prefix,
            inner: stream,
        };
        builder(&limits)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(Refused::from)
    };
    // Boxed: the task's future is then the size of what an established
    // connection holds, not of the handshake's state too.
    let handshake = Box::pin(crate::wire::io::with_timeout(handshake_timeout, handshake));
    let mut conn = match handshake.await {
        Some(Ok(conn)) => conn,
        // Not HTTP/2 (no preface), or silent: closed.
        Some(Err(e)) => {
            client_counts.local().h2_conn_protocol_errors.inc();
            // Bytes that are not the preface (HTTP/1 on a `proto h2`
            // bind), or none: HAProxy 2.6 logs a request it could not
            // parse, with no status (`0`, `PR--`, `<BADREQ>`); a client
            // that closed before any frame is taken for one that sent
            // nothing (`option dontlognull`).
            {
                client.rt.with_snapshot(|snap| {
                    let Some(fe) = snap.frontends().find(|f| *f.name == *client.frontend()) else {
                        return;
                    };
                    let mut rec = LogRecord::new(fe.log.is_some());
                    if rec.enabled() {
                        rec.set_addrs(peer, local);
                    }
                    rec.null = e.nothing();
                    rec.term(Cause::Proxy, Phase::Request);
                    rec.status = 0;
                    crate::observe::outcome::finish(fe, &client.rt.process, &mut rec, None, None);
                });
            }
            return;
        }
        None => return,
    };
    client_counts.local().h2_total_connections.inc();
    c.h2_open_connections.inc();
    let client = Arc::new(client);
    let tls: Option<Arc<TlsFacts>> = tls.map(Arc::from);
    // The connection's `sess` variables, shared by its streams.
    let sess_vars = Arc::new(crate::sample::vars::SessVars::default());
    conn.set_target_window_size(CONNECTION_WINDOW);
    // The streams in flight, each in a task of its own.
    let streams = Arc::new(Streams::default());
    let mut closing = false;
    // The connection's buffers and tables were given back (see below).
    let mut shed = false;
    loop {
        // Idle (no stream in flight): `timeout http-keep-alive`, as for an
        // HTTP/1 connection between requests.
        let idle = if streams.is_empty() && !closing {
            client
                .rt
                .with_snapshot(|snap| {
                    snap.frontends()
                        .find(|f| *f.name == *client.frontend())
                        .map(|f| f.timeouts.keep_alive())
                })
                .unwrap_or(Some(Duration::ZERO))
        } else if closing && streams.is_empty() {
            Some(CLOSE_GRACE)
        } else {
            None
        };
        tokio::select! {
            next = conn.accept() => match next {
                Some(Ok((req, respond))) => {
                    client_counts.local().h2_headers_rcvd.inc();
                    shed = false;
                    // Boxed: the task tokio moves around as it spawns,
                    // runs and ends it is then a few words.
                    let (client, tls, sess) = (client.clone(), tls.clone(), sess_vars.clone());
                    let serve = crate::sys::slab::boxed(move || {
                        stream::serve(client, req, respond, (peer, local), tls, sess)
                    });
                    let end = streams.begin();
                    tokio::spawn(async move {
                        serve.await;
                        drop(end);
                    });
                }
                Some(Err(e)) => {
                    if e.is_go_away() && !e.is_remote() {
                        // sluice closed it for a protocol violation or a
                        // flood (rapid reset, CONTINUATION, MadeYouReset).
                        client_counts.local().h2_conn_protocol_errors.inc();
                        client_counts.local().h2_goaway_resp.inc();
                    }
                    break;
                }
                None => break,
            },
            _ = streams.none_left(), if !streams.is_empty() => {}
            // Idle a little while (as an HTTP/1 connection is before it is
            // parked): the memory it needs only while frames come and go
            // is given back, a few hundred bytes left of tens of KB.
            _ = sleep(Some(crate::http::park::GRACE)), if streams.is_empty() && !shed && !closing => {
                conn.release_idle_memory();
                shed = true;
            }
            _ = sleep(idle), if idle.is_some() => {
                if closing {
                    break;
                }
                conn.graceful_shutdown();
                closing = true;
            }
            _ = crate::sys::process::stop_begun(), if !closing => {
                conn.graceful_shutdown();
                closing = true;
            }
        }
    }
    // Streams still running can no longer reach the client: their
    // pipelines see the pipe close and end as client aborts. (Nor ask the
    // closed socket its address: its number may be another's.)
    client.facts.forget_socket();
    drop(conn);
    while !streams.is_empty() {
        streams.none_left().await;
    }
    c.h2_open_connections.dec();
}

/// Why a connection was not taken as HTTP/2.
enum Refused {
    /// Bytes that are not the preface.
    NotPreface,
    /// Closed or broken before the preface was whole.
    Io,
    /// Refused by the `h2` crate's handshake.
    H2(h2::Error),
}

impl From<h2::Error> for Refused {
    fn from(e: h2::Error) -> Self {
        Refused::H2(e)
    }
}

impl Refused {
    /// The client sent no request to speak of: it closed, or its socket
    /// failed, before a frame (`option dontlognull` leaves it out).
    fn nothing(&self) -> bool {
        match self {
            Refused::NotPreface => false,
            Refused::Io => true,
            Refused::H2(e) => e.is_io(),
        }
    }
}

/// Reads from `stream` until `prefix` and what follows it hold the whole
/// preface, and gives them back with the stream; the bytes after the
/// preface (the client's first frames) stay in the prefix. Each read
/// takes what has arrived, so bytes that are not a preface are read
/// before the connection is closed (a close with unread bytes would be a
/// reset, where HAProxy closes cleanly).
async fn read_preface(mut stream: Stream, prefix: Bytes) -> Result<(Stream, Bytes), Refused> {
    use tokio::io::AsyncReadExt;
    let mut got = bytes::BytesMut::from(&prefix[..]);
    loop {
        let n = got.len().min(PREFACE.len());
        if got[..n] != PREFACE[..n] {
            return Err(Refused::NotPreface);
        }
        if n == PREFACE.len() {
            return Ok((stream, got.freeze()));
        }
        got.reserve(16 * 1024);
        match stream.read_buf(&mut got).await {
            Ok(0) | Err(_) => return Err(Refused::Io),
            Ok(_) => {}
        }
    }
}

async fn sleep(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// The streams of a connection in flight: counted as their tasks start and
/// end, the connection's task woken when the last ends (its idle timers
/// start then). Cheaper than a `JoinSet`, whose tasks' results nobody
/// needs.
#[derive(Default)]
struct Streams {
    live: std::sync::atomic::AtomicUsize,
    none_left: tokio::sync::Notify,
}

/// A stream in flight; dropped when its task ends.
struct InFlight(Arc<Streams>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.live.fetch_sub(1, Relaxed) == 1 {
            self.0.none_left.notify_one();
        }
    }
}

impl Streams {
    fn begin(self: &Arc<Self>) -> InFlight {
        self.live.fetch_add(1, Relaxed);
        InFlight(self.clone())
    }

    fn is_empty(&self) -> bool {
        self.live.load(Relaxed) == 0
    }

    /// Waits for the last stream in flight to end (at once if one ended
    /// with none left since the last wait).
    async fn none_left(&self) {
        self.none_left.notified().await
    }
}
