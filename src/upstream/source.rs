//! The local end of a server connection: `source <addr>[:<port>[-<port>]]
//! [usesrc ...] [interface <name>]` binds the socket before it connects,
//! and the TCP keep-alive probes' tuning (`srvtcpka-*`, `clitcpka-*`).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use tokio::net::{TcpSocket, TcpStream};

use crate::config::extras::{Source, TcpKaTuning, UseSrc};

/// Where the ports of `source` ranges start, moved on at each connection
/// so that successive connections spread over the range.
static NEXT_PORT: AtomicU32 = AtomicU32::new(0);

/// Connects to `addr` from `src`: bound to its address (and port, or the
/// next free one of its range), or with `usesrc` to the foreign address
/// the server should see (IP_TRANSPARENT, which needs CAP_NET_ADMIN and a
/// route back through this host unless the address is a local one).
/// `client`: the client's address, for `usesrc client|clientip`.
pub(crate) async fn connect_from(
    addr: SocketAddr,
    src: &Source,
    client: Option<SocketAddr>,
) -> io::Result<TcpStream> {
    let (local, transparent) = match src.usesrc {
        None => (src.addr, false),
        Some(UseSrc::Addr(a)) => (a, true),
        // Without a client address (a UNIX client), the source address.
        Some(UseSrc::Client) => (client.unwrap_or(src.addr), true),
        Some(UseSrc::ClientIp) => (
            client.map_or(src.addr, |c| SocketAddr::new(c.ip(), 0)),
            true,
        ),
    };
    let ports: Vec<u16> = match src.ports {
        Some((lo, hi)) => {
            let n = u32::from(hi - lo) + 1;
            let start = NEXT_PORT.fetch_add(1, Relaxed) % n;
            (0..n).map(|i| lo + ((start + i) % n) as u16).collect()
        }
        None => vec![local.port()],
    };
    let mut last = io::Error::new(io::ErrorKind::AddrInUse, "no free source port");
    for port in ports {
        let sock = socket_for(addr, local)?;
        let (rcv, snd) = (SERVER_BUFS[0].load(Relaxed), SERVER_BUFS[1].load(Relaxed));
        if rcv > 0 {
            sock.set_recv_buffer_size(rcv)?;
        }
        if snd > 0 {
            sock.set_send_buffer_size(snd)?;
        }
        let sref = socket2::SockRef::from(&sock);
        if let Some(name) = &src.interface {
            sref.bind_device(Some(name.as_bytes()))?;
        }
        if transparent {
            // Refused without CAP_NET_ADMIN: the bind then works for
            // local addresses only, and says so for the others.
            let _ = if local.is_ipv4() {
                sref.set_ip_transparent_v4(true)
            } else {
                sref.set_ip_transparent_v6(true)
            };
        }
        // A fixed port is reused as soon as its last connection closed.
        sock.set_reuseaddr(true)?;
        match sock.bind(SocketAddr::new(local.ip(), port)) {
            Ok(()) => return sock.connect(addr).await,
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// SO_RCVBUF and SO_SNDBUF of server sockets (`tune.rcvbuf.server`,
/// `tune.sndbuf.server`; 0: the system's), set by the configuration in
/// force.
static SERVER_BUFS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

/// Makes `rcv` and `snd` the server sockets' buffer sizes from now on.
pub(crate) fn set_server_bufs(rcv: Option<u32>, snd: Option<u32>) {
    SERVER_BUFS[0].store(rcv.unwrap_or(0), Relaxed);
    SERVER_BUFS[1].store(snd.unwrap_or(0), Relaxed);
}

/// A connection to `addr` from any local address, with the server
/// sockets' buffer sizes set before it connects (the window scale is
/// agreed on then).
pub(crate) async fn connect_plain(addr: SocketAddr, tfo: bool) -> io::Result<TcpStream> {
    let (rcv, snd) = (SERVER_BUFS[0].load(Relaxed), SERVER_BUFS[1].load(Relaxed));
    if rcv == 0 && snd == 0 && !tfo {
        return TcpStream::connect(addr).await;
    }
    let sock = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if tfo {
        set_fastopen_connect(&sock);
    }
    if rcv > 0 {
        sock.set_recv_buffer_size(rcv)?;
    }
    if snd > 0 {
        sock.set_send_buffer_size(snd)?;
    }
    sock.connect(addr).await
}

/// `server ... tfo`: TCP_FASTOPEN_CONNECT, so that the connect returns at
/// once and the first write goes with the SYN when the kernel holds a
/// Fast Open cookie for the server (a plain handshake otherwise). A
/// kernel without it connects the usual way.
fn set_fastopen_connect(sock: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a socket this process owns, with a pointer to
    // an int that lives through the call.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN_CONNECT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// A TCP socket of the family of the server's address.
fn socket_for(addr: SocketAddr, local: SocketAddr) -> io::Result<TcpSocket> {
    if addr.is_ipv4() != local.is_ipv4() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("source address {local} and server address {addr} are of different families"),
        ));
    }
    if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
}

/// SO_KEEPALIVE on `s`, with the probes' count, idle time and interval
/// `tuning` sets (the system's where it sets none).
pub(crate) fn keepalive(s: &impl std::os::fd::AsFd, tuning: &TcpKaTuning) {
    let sref = socket2::SockRef::from(s);
    let _ = sref.set_keepalive(true);
    if *tuning == TcpKaTuning::default() {
        return;
    }
    let mut ka = socket2::TcpKeepalive::new();
    if let Some(t) = tuning.idle {
        ka = ka.with_time(t);
    }
    if let Some(t) = tuning.intvl {
        ka = ka.with_interval(t);
    }
    if let Some(n) = tuning.cnt {
        ka = ka.with_retries(n);
    }
    let _ = sref.set_tcp_keepalive(&ka);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn keepalive_tuning_reaches_the_socket() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let tuning = TcpKaTuning {
            cnt: Some(4),
            idle: Some(Duration::from_secs(42)),
            intvl: Some(Duration::from_secs(7)),
        };
        keepalive(&s, &tuning);
        let r = socket2::SockRef::from(&s);
        assert!(r.keepalive().unwrap());
        assert_eq!(r.tcp_keepalive_time().unwrap(), Duration::from_secs(42));
        assert_eq!(r.tcp_keepalive_interval().unwrap(), Duration::from_secs(7));
        assert_eq!(r.tcp_keepalive_retries().unwrap(), 4);
    }

    #[tokio::test]
    async fn source_port_ranges_skip_ports_in_use() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        if port == u16::MAX {
            return;
        }
        let src = Source {
            addr: "127.0.0.2:0".parse().unwrap(),
            ports: Some((port, port + 1)),
            usesrc: None,
            interface: None,
        };
        // Whichever port the rotation starts from, the listening one is
        // skipped.
        let s = connect_from(l.local_addr().unwrap(), &src, None).await;
        let local = s.expect("connect").local_addr().unwrap();
        assert_eq!(local.ip().to_string(), "127.0.0.2");
        assert_eq!(local.port(), port + 1);
    }
}
