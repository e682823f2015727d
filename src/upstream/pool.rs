//! New connections to a server: TCP or a UNIX socket, then TLS, or a
//! stream of the shared HTTP/2 connection of a `proto h2` server; a
//! `proto fcgi` server's speaks FastCGI under its HTTP/1 guise. The idle
//! ones are kept by the server's pool (`state/pool.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use crate::state::Pool;
use crate::tls::Stream;
use crate::upstream::ConnectError;

/// A new connection to the server: TCP, then the TLS handshake when
/// the server has `ssl` (`host`: the request's Host, for an SNI taken
/// from it). `timeout` bounds each step (`timeout connect`);
/// `keepalive`: TCP keep-alive probes (`option srvtcpka`). For an
/// HTTP/2 server, a stream of its shared connection (made first if
/// needed), in the guise of a connection carrying one HTTP/1.1
/// exchange; `io_timeout` (`timeout server`) bounds its waits. `dst`:
/// the address the client connected to, for a dynamic (`Pool::is_dynamic`)
/// server.
pub(crate) async fn connect(
    pool: &Pool,
    timeout: Option<Duration>,
    dial: &crate::upstream::retry::Dial,
    host: Option<&[u8]>,
    io_timeout: Option<Duration>,
    dst: Option<SocketAddr>,
) -> Result<Stream, ConnectError> {
    let Some(shared) = pool.h2() else {
        let io = connect_io(pool, timeout, dial, host, dst).await?;
        if pool.mux() == crate::state::pool::Mux::Fcgi {
            return Ok(Stream::Fcgi(Box::new(crate::wire::fcgi::FcgiConn::new(io))));
        }
        return Ok(io);
    };
    let send = crate::upstream::h2::sender(shared, timeout, || {
        connect_io(pool, timeout, dial, host, dst)
    })
    .await?;
    Ok(crate::upstream::h2::bridge(
        send,
        pool.addr(),
        pool.tls().is_some(),
        io_timeout,
    ))
}

async fn connect_io(
    pool: &Pool,
    timeout: Option<Duration>,
    dial: &crate::upstream::retry::Dial,
    host: Option<&[u8]>,
    dst: Option<SocketAddr>,
) -> Result<Stream, ConnectError> {
    let addr = pool.target(dst);
    let tcp = match pool.unix() {
        Some(name) => crate::upstream::unix::connect(name, timeout).await,
        None => crate::upstream::retry::connect_once(addr, timeout, dial).await,
    }
    .map_err(ConnectError::Tcp)?;
    let Some(tls) = pool.tls() else {
        return Ok(Stream::Tcp(tcp.into()));
    };
    let sni = tls.sni_for(host);
    match crate::wire::io::with_timeout(timeout, tls.handshake(tcp, addr, sni)).await {
        None => Err(ConnectError::TlsTimeout),
        Some(Err(e)) => Err(ConnectError::Tls(e)),
        Some(Ok(s)) => Ok(s),
    }
}
