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

    /// An idle connection that still looks alive (the server has not closed
    /// it nor sent anything unsolicited), most recently used first.
    pub fn take(&self) -> Option<TcpStream> {
        loop {
            let conn = lock(&self.idle).pop()?;
            let mut probe = [0u8; 1];
            match conn.try_read(&mut probe) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Some(conn),
                // Closed (Ok(0)), unsolicited bytes, or an error: drop it.
                _ => continue,
            }
        }
    }

    pub fn put(&self, conn: TcpStream) {
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}
