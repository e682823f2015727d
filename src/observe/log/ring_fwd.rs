//! The servers of a `ring` section: one task per server sends the ring's
//! lines to a syslog server over TCP, each ended by a line feed
//! (`log-proto legacy`) or preceded by its length (`log-proto
//! octet-count`, RFC 6587's octet counting), from the oldest line the ring
//! holds when it first connects. A server that cannot be reached or drops
//! the connection is connected to again a second later, from the line it
//! had not received; a reload keeps each server's place in its ring.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::ring::{DEFAULT_RING_CONNECT, DEFAULT_RING_SERVER, RingServer};
use crate::state::ring::Ring;

/// How long a server that failed is left alone.
const RETRY: Duration = Duration::from_secs(1);

/// Where each (ring, server) has got to: the next line to send.
static CURSORS: Mutex<Option<HashMap<(String, String), u64>>> = Mutex::new(None);

fn cursor(ring: &str, srv: &str) -> u64 {
    let c = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
    c.as_ref()
        .and_then(|m| m.get(&(ring.to_string(), srv.to_string())).copied())
        .unwrap_or(0)
}

fn set_cursor(ring: &str, srv: &str, at: u64) {
    let mut c = CURSORS.lock().unwrap_or_else(|e| e.into_inner());
    c.get_or_insert_with(HashMap::new)
        .insert((ring.to_string(), srv.to_string()), at);
}

/// Configures the rings of `sections` (see `state::ring::configure`) and
/// starts the forwarders of their servers on the current runtime; those
/// of the previous configuration stop.
pub(crate) fn start(sections: &[crate::config::ring::RingSection]) {
    for ring in crate::state::ring::configure(sections) {
        let settings = ring.settings();
        for srv in &settings.servers {
            let connect = settings.timeout_connect.unwrap_or(DEFAULT_RING_CONNECT);
            let server = settings.timeout_server.unwrap_or(DEFAULT_RING_SERVER);
            tokio::spawn(forward(
                ring.clone(),
                srv.clone(),
                ring.generation(),
                (connect, server),
            ));
        }
    }
}

/// The bytes of `lines` as `srv` takes them.
fn frame(lines: &[Box<[u8]>], octet_count: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        if octet_count {
            out.extend_from_slice(format!("{} ", l.len()).as_bytes());
            out.extend_from_slice(l);
        } else {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    out
}

async fn forward(
    ring: Arc<Ring>,
    srv: RingServer,
    generation: u64,
    timeouts: (Duration, Duration),
) {
    let (connect, server) = timeouts;
    while ring.generation() == generation {
        let conn = tokio::time::timeout(connect, TcpStream::connect(srv.addr)).await;
        if let Ok(Ok(mut sock)) = conn {
            let _ = sock.set_nodelay(true);
            send_lines(&ring, &srv, generation, server, &mut sock).await;
        }
        if ring.generation() != generation {
            return;
        }
        // Woken early by a reload, which ends this task.
        let _ = tokio::time::timeout(RETRY, ring.notify.notified()).await;
    }
}

/// Sends the ring's lines as they come until the server goes, a write
/// takes longer than `timeout server`, or a reload ends the task.
async fn send_lines(
    ring: &Ring,
    srv: &RingServer,
    generation: u64,
    server: Duration,
    sock: &mut TcpStream,
) {
    let mut at = cursor(&ring.name, &srv.name);
    let mut scratch = [0u8; 512];
    loop {
        let woken = ring.notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if ring.generation() != generation {
            return;
        }
        let (lines, end) = ring.read_from(at);
        if lines.is_empty() {
            tokio::select! {
                _ = &mut woken => {}
                // A server says nothing: data or the end both mean
                // the connection is to be dropped or was.
                n = sock.read(&mut scratch) => {
                    if matches!(n, Ok(0) | Err(_)) {
                        return;
                    }
                }
            }
            continue;
        }
        let bytes = frame(&lines, srv.octet_count);
        match tokio::time::timeout(server, sock.write_all(&bytes)).await {
            Ok(Ok(())) => {
                at = end;
                set_cursor(&ring.name, &srv.name, at);
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_legacy_and_octet_count() {
        let lines: Vec<Box<[u8]>> = vec![b"<134>a".to_vec().into(), b"bc".to_vec().into()];
        assert_eq!(frame(&lines, false), b"<134>a\nbc\n");
        assert_eq!(frame(&lines, true), b"6 <134>a2 bc");
    }
}
