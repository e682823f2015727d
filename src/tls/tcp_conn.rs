//! A TCP connection that joins its worker's reactor only when it first
//! has to wait.
//!
//! Registering a socket with the reactor is an `epoll_ctl(ADD)`, and
//! dropping a registered one an `epoll_ctl(DEL)`: two system calls per
//! connection, about 5 % of the CPU of a request on its own connection
//! (`Connection: close`, measured with `perf record` under `wrk`). A client
//! connection is accepted when its request is usually already there, read
//! and answered without waiting, then closed: HAProxy reads it first and
//! polls only a socket that said "would block" (0.01 `epoll_ctl` per such
//! request, against sluice's 2.37 before this type). So does this one: its
//! reads and writes go straight to the socket, and the first that would
//! block registers it and waits as any tokio socket; a connection that
//! never waited closes without either call.

use std::io::{self, IoSlice, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

#[derive(Debug)]
pub(crate) struct TcpConn(State);

#[derive(Debug)]
enum State {
    /// Not registered: non-blocking, read and written directly.
    Raw(std::net::TcpStream),
    Registered(TcpStream),
    /// Registration failed: the socket was closed with the error.
    Closed,
}

impl From<TcpStream> for TcpConn {
    fn from(s: TcpStream) -> Self {
        TcpConn(State::Registered(s))
    }
}

impl TcpConn {
    /// A socket just accepted, non-blocking already (`accept4` with
    /// `SOCK_NONBLOCK`). It must be used from within a tokio runtime, which
    /// it joins when it first waits.
    pub(crate) fn unregistered(s: std::net::TcpStream) -> Self {
        TcpConn(State::Raw(s))
    }

    /// The socket as a tokio one, registering it first if it was not: for
    /// the waits (readiness, splice, parking).
    pub(crate) fn reactor(&mut self) -> io::Result<&mut TcpStream> {
        self.register()?;
        match &mut self.0 {
            State::Registered(s) => Ok(s),
            State::Raw(_) | State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Whether it is registered already.
    #[cfg(test)]
    fn registered(&self) -> Option<&TcpStream> {
        match &self.0 {
            State::Registered(s) => Some(s),
            State::Raw(_) | State::Closed => None,
        }
    }

    /// The tokio socket, registered.
    pub(crate) fn into_reactor(self) -> io::Result<TcpStream> {
        match self.0 {
            State::Registered(s) => Ok(s),
            State::Raw(s) => TcpStream::from_std(s),
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    fn register(&mut self) -> io::Result<()> {
        if matches!(self.0, State::Raw(_)) {
            let State::Raw(s) = std::mem::replace(&mut self.0, State::Closed) else {
                unreachable!("matched just above");
            };
            self.0 = State::Registered(TcpStream::from_std(s)?);
        }
        Ok(())
    }

    /// The descriptor, for socket options and peeks (None once closed).
    pub(crate) fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.0 {
            State::Raw(s) => Some(s.as_fd()),
            State::Registered(s) => Some(s.as_fd()),
            State::Closed => None,
        }
    }

    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.0 {
            State::Raw(s) => s.peer_addr(),
            State::Registered(s) => s.peer_addr(),
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.0 {
            State::Raw(s) => s.local_addr(),
            State::Registered(s) => s.local_addr(),
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Non-blocking read into `buf`'s spare capacity.
    pub(crate) fn try_read_buf(&self, buf: &mut bytes::BytesMut) -> io::Result<usize> {
        match &self.0 {
            State::Registered(s) => s.try_read_buf(buf),
            State::Raw(s) => {
                use bytes::BufMut;
                if !buf.has_remaining_mut() {
                    buf.reserve(64);
                }
                let spare = buf.chunk_mut();
                // SAFETY: `recv` writes at most `spare.len()` bytes into
                // the spare capacity and reports how many; only those are
                // marked initialised.
                let n = unsafe {
                    libc::recv(
                        s.as_raw_fd(),
                        spare.as_mut_ptr().cast(),
                        spare.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                if n < 0 {
                    return Err(io::Error::last_os_error());
                }
                let n = n as usize;
                // SAFETY: the kernel initialised those `n` bytes.
                unsafe { buf.advance_mut(n) };
                Ok(n)
            }
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    pub(crate) fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        match &self.0 {
            State::Registered(s) => s.try_write(data),
            State::Raw(s) => (&*s).write(data),
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    pub(crate) fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match &self.0 {
            State::Registered(s) => s.try_write_vectored(bufs),
            State::Raw(s) => (&*s).write_vectored(bufs),
            State::Closed => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

impl AsRawFd for TcpConn {
    /// -1 once closed, which every system call refuses (`EBADF`).
    fn as_raw_fd(&self) -> RawFd {
        match &self.0 {
            State::Raw(s) => s.as_raw_fd(),
            State::Registered(s) => s.as_raw_fd(),
            State::Closed => -1,
        }
    }
}

/// Whether a direct read or write found the socket not ready: then it
/// registers, and the registered socket's own poll arms the wake-up.
fn would_block<T>(r: &io::Result<T>) -> bool {
    matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

impl AsyncRead for TcpConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let State::Raw(s) = &this.0 {
            // SAFETY: `recv` writes at most the unfilled length into it
            // and reports how many bytes; only those are marked filled.
            let unfilled = unsafe { buf.unfilled_mut() };
            let n = unsafe {
                libc::recv(
                    s.as_raw_fd(),
                    unfilled.as_mut_ptr().cast(),
                    unfilled.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            let r = if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            };
            if !would_block(&r) {
                return Poll::Ready(r.map(|n| {
                    // SAFETY: the kernel initialised those `n` bytes.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                }));
            }
            this.register()?;
        }
        match &mut this.0 {
            State::Registered(s) => Pin::new(s).poll_read(cx, buf),
            State::Raw(_) | State::Closed => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
    }
}

impl AsyncWrite for TcpConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let State::Raw(s) = &this.0 {
            let r = (&*s).write(data);
            if !would_block(&r) {
                return Poll::Ready(r);
            }
            this.register()?;
        }
        match &mut this.0 {
            State::Registered(s) => Pin::new(s).poll_write(cx, data),
            State::Raw(_) | State::Closed => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let State::Raw(s) = &this.0 {
            let r = (&*s).write_vectored(bufs);
            if !would_block(&r) {
                return Poll::Ready(r);
            }
            this.register()?;
        }
        match &mut this.0 {
            State::Registered(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            State::Raw(_) | State::Closed => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            State::Raw(s) => Poll::Ready(s.shutdown(std::net::Shutdown::Write)),
            State::Registered(s) => Pin::new(s).poll_shutdown(cx),
            State::Closed => Poll::Ready(Ok(())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Served without waiting, the socket never joins the reactor; the
    /// first read that would block registers it, and the read completes
    /// when the bytes come.
    #[tokio::test]
    async fn registers_only_when_it_must_wait() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().unwrap();
        accepted.set_nonblocking(true).unwrap();
        let mut conn = TcpConn::unregistered(accepted);

        client.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        // The bytes may take a moment on loopback: a would-block read
        // registers and waits, which is the other half of the test.
        conn.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        conn.write_all(b"pong").await.unwrap();
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");

        // Nothing pending: this read must wait, so the socket registers.
        let waiting = tokio::spawn(async move {
            let mut b = [0u8; 3];
            conn.read_exact(&mut b)
                .await
                .map(|_| (b, conn.registered().is_some()))
        });
        tokio::task::yield_now().await;
        client.write_all(b"end").await.unwrap();
        let (b, registered) = waiting.await.unwrap().unwrap();
        assert_eq!(&b, b"end");
        assert!(registered);
    }
}
