//! The byte stream of a connection: plain TCP, TLS over TCP, the
//! in-process pipe a request to an HTTP/2 server goes through (see
//! `crate::upstream::h2`), or none at all for an HTTP/2 client's stream,
//! whose frames the pipeline reads and writes itself (`wire::h2_stream`).
//!
//! An enum rather than a trait object: the plain arm is the `TcpStream`
//! itself, so the plain-TCP hot path (the `try_write` fast path, reads into
//! the connection buffer) costs one predictable branch over what it did
//! before TLS existed. The TLS state is boxed so that a plain connection
//! does not carry rustls' size.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::DuplexStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsStream;

use super::tcp_conn::TcpConn;
use std::os::fd::{AsFd, BorrowedFd};

#[derive(Debug)]
pub(crate) enum Stream {
    /// Plain TCP; a client's joins the reactor when it first waits.
    Tcp(TcpConn),
    Tls(Box<TlsStream<TcpStream>>),
    /// One stream to an HTTP/2 server as the HTTP/1 pipeline sees it: the
    /// request's HTTP/1 form goes into it, the response comes out of it.
    Pipe(Box<Pipe>),
    /// A stream of an HTTP/2 client connection, served by the pipeline
    /// through its frames: reads give its request body (in its HTTP/1
    /// framing, `wire::h2_stream::H2Body`), writes fail (answers go out as
    /// frames, `wire::io::BufConn::h2`).
    Frames(Box<Frames>),
    /// A connection to a FastCGI application (`proto fcgi`), read and
    /// written in HTTP/1 (`wire::fcgi` implements it).
    Fcgi(Box<dyn Translated>),
}

/// A protocol spoken over a connection in the guise of HTTP/1: the
/// pipeline writes it requests and reads it answers as it does an HTTP/1
/// server's. A trait here, implemented in `wire`, so that the stream
/// types need nothing of the codecs.
pub(crate) trait Translated:
    AsyncRead + AsyncWrite + Send + Unpin + std::fmt::Debug
{
    /// The connection underneath.
    fn inner(&self) -> &Stream;
    fn inner_mut(&mut self) -> &mut Stream;
    /// A request starts: its first `head_len` bytes written are the
    /// protocol's own, then its body in the framing of `length` (Some:
    /// that many bytes, none for 0; None: chunked); `http10`: an HTTP/1.0
    /// request.
    fn start(&mut self, head_len: usize, length: Option<u64>, http10: bool);
}

/// What the pipeline reads of an HTTP/2 stream, and the addresses of the
/// connection it belongs to.
pub(crate) struct Frames {
    /// None for a client on a UNIX socket.
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) local: Option<SocketAddr>,
    /// The request body; None for a request without one (reads end).
    pub(crate) body: Option<Box<dyn AsyncRead + Send + Unpin>>,
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("peer", &self.peer)
            .field("local", &self.local)
            .field("body", &self.body.is_some())
            .finish()
    }
}

/// The forwarding code's end of a stream to an HTTP/2 server: the request
/// is written to `tx`, the response read from `rx` (two pipes, so that
/// either side can end on its own).
#[derive(Debug)]
pub(crate) struct Pipe {
    pub(crate) rx: DuplexStream,
    pub(crate) tx: DuplexStream,
    /// None for a client on a UNIX socket.
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) local: Option<SocketAddr>,
}

impl Stream {
    /// The TCP socket underneath, registered with the reactor for a wait
    /// on its readiness; None for a pipe or an HTTP/2 stream (or a socket
    /// that could not register).
    #[inline]
    pub(crate) fn tcp(&mut self) -> Option<&TcpStream> {
        match self {
            Stream::Tcp(s) => s.reactor().ok().map(|s| &*s),
            Stream::Tls(s) => Some(s.get_ref().0),
            Stream::Fcgi(f) => f.inner_mut().tcp(),
            Stream::Pipe(_) | Stream::Frames(_) => None,
        }
    }

    /// The TCP socket's descriptor, for its options and peeks (no
    /// registration needed).
    #[inline]
    pub(crate) fn socket(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Stream::Tcp(s) => s.fd(),
            Stream::Tls(s) => Some(s.get_ref().0.as_fd()),
            Stream::Fcgi(f) => f.inner().socket(),
            Stream::Pipe(_) | Stream::Frames(_) => None,
        }
    }

    /// The client's address as the socket sees it.
    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Stream::Pipe(p) => p.peer.ok_or_else(|| io::ErrorKind::NotConnected.into()),
            Stream::Frames(a) => a.peer.ok_or_else(|| io::ErrorKind::NotConnected.into()),
            Stream::Tcp(s) => s.peer_addr(),
            Stream::Tls(s) => s.get_ref().0.peer_addr(),
            Stream::Fcgi(f) => f.inner().peer_addr(),
        }
    }

    /// The local address the connection came in on.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Stream::Pipe(p) => p.local.ok_or_else(|| io::ErrorKind::NotConnected.into()),
            Stream::Frames(a) => a.local.ok_or_else(|| io::ErrorKind::NotConnected.into()),
            Stream::Tcp(s) => s.local_addr(),
            Stream::Tls(s) => s.get_ref().0.local_addr(),
            Stream::Fcgi(f) => f.inner().local_addr(),
        }
    }

    pub(crate) fn is_tls(&self) -> bool {
        match self {
            Stream::Fcgi(f) => f.inner().is_tls(),
            s => matches!(s, Stream::Tls(_)),
        }
    }

    /// Whether TLS has decrypted bytes buffered that the socket's readiness
    /// would not announce (always false for plain TCP).
    pub(crate) fn has_buffered_plaintext(&mut self) -> bool {
        let Stream::Tls(s) = self else { return false };
        let state = match &mut **s {
            TlsStream::Server(s) => s.get_mut().1.process_new_packets(),
            TlsStream::Client(s) => s.get_mut().1.process_new_packets(),
        };
        state.is_ok_and(|st| st.plaintext_bytes_to_read() > 0)
    }

    /// Non-blocking read of what is there (plain TCP only: a TLS stream
    /// reports `WouldBlock`, its bytes are read by the async path).
    pub(crate) fn try_read_buf(&self, buf: &mut bytes::BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read_buf(buf),
            Stream::Tls(_) | Stream::Pipe(_) | Stream::Frames(_) | Stream::Fcgi(_) => {
                Err(io::ErrorKind::WouldBlock.into())
            }
        }
    }
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
            Stream::Pipe(p) => Pin::new(&mut p.rx).poll_read(cx, buf),
            Stream::Fcgi(f) => Pin::new(&mut **f).poll_read(cx, buf),
            Stream::Frames(f) => match &mut f.body {
                Some(b) => Pin::new(&mut **b).poll_read(cx, buf),
                None => Poll::Ready(Ok(())),
            },
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
            Stream::Pipe(p) => Pin::new(&mut p.tx).poll_write(cx, buf),
            Stream::Fcgi(f) => Pin::new(&mut **f).poll_write(cx, buf),
            Stream::Frames(_) => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write_vectored(cx, bufs),
            Stream::Pipe(p) => Pin::new(&mut p.tx).poll_write_vectored(cx, bufs),
            Stream::Fcgi(f) => Pin::new(&mut **f).poll_write_vectored(cx, bufs),
            Stream::Frames(_) => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(_) => true,
            Stream::Tls(s) => s.is_write_vectored(),
            Stream::Pipe(p) => p.tx.is_write_vectored(),
            Stream::Fcgi(_) => false,
            Stream::Frames(_) => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            Stream::Pipe(p) => Pin::new(&mut p.tx).poll_flush(cx),
            Stream::Fcgi(f) => Pin::new(&mut **f).poll_flush(cx),
            Stream::Frames(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
            Stream::Pipe(p) => Pin::new(&mut p.tx).poll_shutdown(cx),
            Stream::Fcgi(f) => Pin::new(&mut **f).poll_shutdown(cx),
            Stream::Frames(_) => Poll::Ready(Ok(())),
        }
    }
}
