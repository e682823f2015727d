//! Connections to servers on UNIX stream sockets (`server s /path`,
//! `unix@path`) and Linux abstract sockets (`abns@name`).

use std::io;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::time::Duration;

use tokio::net::TcpStream;

use crate::config::model::UnixName;

/// Connects to `name`, within `timeout`. The socket is carried as a
/// `TcpStream`, as a UNIX client's is (see `frontend::listener`): reads,
/// writes, readiness, shutdown and splice are the same system calls, so
/// pooling, relaying and checks need no second arm.
pub(crate) async fn connect(name: &UnixName, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let attempt = async {
        match name {
            UnixName::Path(p) => tokio::net::UnixStream::connect(p).await?.into_std(),
            // Connecting a UNIX socket does not wait for the peer: it is
            // accepted into the backlog or refused at once.
            UnixName::Abns(n) => {
                let s = std::os::unix::net::UnixStream::connect_addr(&crate::sys::abns::addr(n)?)?;
                s.set_nonblocking(true)?;
                Ok(s)
            }
        }
    };
    let std = match timeout {
        Some(t) => tokio::time::timeout(t, attempt)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "connect timeout")))?,
        None => attempt.await?,
    };
    std.set_nonblocking(true)?;
    // SAFETY: the descriptor is a connected stream socket that
    // `into_raw_fd` gave up; the TcpStream owns it from here.
    TcpStream::from_std(unsafe { std::net::TcpStream::from_raw_fd(std.into_raw_fd()) })
}
