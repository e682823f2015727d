//! Idle keep-alive connections to one server address.

use std::net::SocketAddr;
use std::sync::Mutex;

use tokio::net::TcpStream;

use super::lock;

/// How many idle connections one server keeps at most.
const MAX_IDLE: usize = 1024;

#[derive(Debug)]
pub struct Pool {
    addr: SocketAddr,
    idle: Mutex<Vec<TcpStream>>,
}

impl Pool {
    pub fn new(addr: SocketAddr) -> Self {
        Pool {
            addr,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn idle_count(&self) -> usize {
        lock(&self.idle).len()
    }

    /// An idle connection that is still clean, most recently used first.
    ///
    /// Each candidate is probed with a real `recv(MSG_PEEK)`: the reactor's
    /// readiness flag may not have caught up with bytes that arrived while
    /// the connection sat here, and a stray response read as the answer to
    /// the next request would hand one client another's response. A
    /// connection the server closed, or that holds unsolicited bytes, is
    /// dropped.
    pub fn take(&self) -> Option<TcpStream> {
        loop {
            let conn = lock(&self.idle).pop()?;
            if is_clean(&conn) {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for reuse (up to the idle limit).
    pub fn put(&self, conn: TcpStream) {
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

/// True when nothing is waiting to be read and the peer has not closed.
fn is_clean(conn: &TcpStream) -> bool {
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
