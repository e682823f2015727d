//! The `log-forward` sections at run time: a task per `dgram-bind` socket
//! (one message a datagram) and per `bind` listener (each client's
//! messages octet-counted, RFC 6587, or ended by a line feed; at most
//! `maxconn` clients, each dropped after `timeout client` of silence),
//! every message read by `received.rs` and queued for the section's
//! targets through the logger thread (`sink.rs`). A reload keeps the
//! sockets whose address and settings it keeps, with the new targets;
//! the others are closed and bound anew.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::io::AsyncReadExt;
use tokio::sync::Semaphore;

use crate::config::log::{LogTarget, Sink};
use crate::config::log_forward::LogForward;
use crate::observe::log::received::Received;
use crate::observe::log::sink;
use crate::observe::log::time::Date;

type Targets = Arc<ArcSwap<Vec<(LogTarget, Arc<Sink>)>>>;

/// What identifies a receiver across reloads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    tcp: bool,
    addr: SocketAddr,
    maxconn: u32,
    backlog: Option<u32>,
    timeout: Option<Duration>,
}

struct Running {
    key: Key,
    targets: Targets,
    task: tokio::task::JoinHandle<()>,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());

/// The longest message read (HAProxy's buffer).
const MAX_MESSAGE: usize = 16384;

/// Starts the receivers of `sections` on the current runtime (the
/// global `log` targets are those `log global` brings in), keeping the
/// ones already running on the same address and settings.
pub(crate) fn start(sections: &[LogForward], global: &[LogTarget]) {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    let mut next = Vec::new();
    for f in sections {
        let targets: Vec<(LogTarget, Arc<Sink>)> = f
            .all_targets(global)
            .into_iter()
            .map(|t| {
                let s = Arc::new(t.sink.clone());
                (t, s)
            })
            .collect();
        let keys = f
            .dgram_binds
            .iter()
            .map(|a| (false, *a))
            .chain(f.binds.iter().map(|a| (true, *a)));
        for (tcp, addr) in keys {
            let key = Key {
                tcp,
                addr,
                maxconn: f.maxconn,
                backlog: f.backlog,
                timeout: f.timeout_client,
            };
            if let Some(i) = running.iter().position(|r| r.key == key) {
                let r = running.swap_remove(i);
                r.targets.store(Arc::new(targets.clone()));
                next.push(r);
                continue;
            }
            let shared: Targets = Arc::new(ArcSwap::from_pointee(targets.clone()));
            let task = if tcp {
                match listen(&key) {
                    Ok(l) => tokio::spawn(serve_tcp(l, key.clone(), shared.clone())),
                    Err(e) => {
                        tracing::warn!(section = %f.name, %addr, error = %e, "log-forward: cannot bind");
                        continue;
                    }
                }
            } else {
                match dgram(addr) {
                    Ok(s) => tokio::spawn(serve_udp(s, shared.clone())),
                    Err(e) => {
                        tracing::warn!(section = %f.name, %addr, error = %e, "log-forward: cannot bind");
                        continue;
                    }
                }
            };
            next.push(Running {
                key,
                targets: shared,
                task,
            });
        }
    }
    for old in running.drain(..) {
        old.task.abort();
    }
    *running = next;
}

fn dgram(addr: SocketAddr) -> std::io::Result<tokio::net::UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    // A reload binds the new socket before the old one is gone.
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    tokio::net::UdpSocket::from_std(s.into())
}

fn listen(key: &Key) -> std::io::Result<tokio::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(key.addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&key.addr.into())?;
    let backlog = key
        .backlog
        .map_or(1024, |b| b.clamp(1, i32::MAX as u32) as i32);
    s.listen(backlog)?;
    tokio::net::TcpListener::from_std(s.into())
}

/// Sends one received message on to every target that takes its level.
fn forward(targets: &Targets, raw: &[u8]) {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let msg = Received::parse(&text);
    let now = Date::now();
    for (t, s) in targets.load().iter() {
        if let Some(line) = msg.render(t, &now) {
            sink::send(s, line);
        }
    }
}

async fn serve_udp(sock: tokio::net::UdpSocket, targets: Targets) {
    let mut buf = vec![0u8; 65536];
    loop {
        match sock.recv_from(&mut buf).await {
            Ok((n, _)) => forward(&targets, &buf[..n]),
            Err(e) => {
                tracing::debug!(error = %e, "log-forward: receive failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve_tcp(l: tokio::net::TcpListener, key: Key, targets: Targets) {
    let slots = Arc::new(Semaphore::new(key.maxconn.max(1) as usize));
    loop {
        // Past maxconn, clients wait in the backlog.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        match l.accept().await {
            Ok((conn, _)) => {
                let targets = targets.clone();
                tokio::spawn(async move {
                    read_client(conn, key.timeout, &targets).await;
                    drop(permit);
                });
            }
            Err(e) => {
                tracing::debug!(error = %e, "log-forward: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The next whole message at the start of `buf`: its bytes and how many
/// bytes it took, octet-counted when it starts with a digit. `Err`: the
/// framing is broken, the client is dropped.
fn next_frame(buf: &[u8]) -> Result<Option<(std::ops::Range<usize>, usize)>, ()> {
    if buf.first().is_some_and(u8::is_ascii_digit) {
        let Some(sp) = buf.iter().position(|&b| b == b' ') else {
            return if buf.len() > 10 { Err(()) } else { Ok(None) };
        };
        let len: usize = std::str::from_utf8(&buf[..sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&n| n <= MAX_MESSAGE)
            .ok_or(())?;
        let end = sp + 1 + len;
        return Ok((buf.len() >= end).then_some((sp + 1..end, end)));
    }
    Ok(buf
        .iter()
        .position(|&b| b == b'\n')
        .map(|nl| (0..nl, nl + 1)))
}

async fn read_client(mut conn: tokio::net::TcpStream, idle: Option<Duration>, targets: &Targets) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = conn.read(&mut chunk);
        let n = match idle {
            Some(t) => match tokio::time::timeout(t, read).await {
                Ok(r) => r,
                Err(_) => return,
            },
            None => read.await,
        };
        let n = match n {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        loop {
            match next_frame(&buf) {
                Ok(Some((msg, used))) => {
                    forward(targets, &buf[msg]);
                    buf.drain(..used);
                }
                Ok(None) if buf.len() > MAX_MESSAGE => return,
                Ok(None) => break,
                Err(()) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        assert_eq!(next_frame(b"5 hello6 world"), Ok(Some((2..7, 7))));
        assert_eq!(next_frame(b"5 hel"), Ok(None));
        assert_eq!(next_frame(b"<1>a\n<2>b"), Ok(Some((0..4, 5))));
        assert_eq!(next_frame(b"<1>a"), Ok(None));
        assert_eq!(next_frame(b"99999999 x"), Err(()));
    }
}
