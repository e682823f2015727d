//! `show errors` captures: the last refused request of each frontend and
//! the last refused response of each backend, with the bytes as received
//! (HAProxy's `proxy_capture_error`).
//!
//! Only the error path copies anything: valid traffic never touches this
//! module. A capture lives in the proxy's runtime state, which outlives
//! snapshots, so captures survive a reload (HAProxy starts a new process
//! and loses them).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::state::ServerState;
use crate::wire::error_spot::ErrorSpot;

/// Events captured since start (`Total events captured`); each capture
/// gets the value before its increment as its `event #`.
static EVENTS: AtomicU32 = AtomicU32::new(0);

/// The total number of errors captured so far.
pub(crate) fn events() -> u32 {
    EVENTS.load(Relaxed)
}

/// HAProxy 2.6's H1 connection and stream flags, `(connection, stream)`,
/// as real haproxy 2.6.12 prints them for a refused request head, request
/// body, response head and response body. They are its internals: sluice
/// prints the usual values so the layout and what scripts see match.
pub(crate) fn h1_flags(response: bool, in_body: bool) -> (u32, u32) {
    match (response, in_body) {
        (false, false) => (0x0000_0100, 0x0000_0810),
        (false, true) => (0x0000_2200, 0x0000_0810),
        (true, false) => (0x8000_2200, 0x0000_4818),
        (true, true) => (0x8000_2200, 0x0000_4810),
    }
}

/// One refused message.
#[derive(Debug)]
pub(crate) struct Capture {
    pub(crate) when: SystemTime,
    pub(crate) event: u32,
    /// The other side's proxy (the backend of a request, the frontend of a
    /// response): name and id, if one was known.
    pub(crate) other: Option<(String, u32)>,
    /// The server of a response: name and id.
    pub(crate) server: Option<(String, u32)>,
    /// The client's address.
    pub(crate) src: Option<SocketAddr>,
    /// `tune.bufsize`: the most bytes captured, and the base of `free`.
    pub(crate) bufsize: usize,
    /// The bytes as received, at most `bufsize`.
    pub(crate) bytes: Box<[u8]>,
    pub(crate) spot: ErrorSpot,
}

/// The last capture of one kind on one proxy.
#[derive(Debug, Default)]
pub(crate) struct ErrorSlot(Mutex<Option<Arc<Capture>>>);

impl ErrorSlot {
    pub(crate) fn last(&self) -> Option<Arc<Capture>> {
        self.0
            .lock()
            .map(|g| g.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    fn store(&self, c: Capture) {
        let c = Some(Arc::new(c));
        match self.0.lock() {
            Ok(mut g) => *g = c,
            Err(p) => *p.into_inner() = c,
        }
    }
}

/// A proxy as a capture sees it: the snapshot's frontends and backends
/// name themselves and say where their captures go, so this module keeps
/// plain names and ids and knows nothing of snapshots.
pub(crate) trait CaptureSide {
    /// Name and id (`iid`), as the other side's capture names this proxy.
    fn named(&self) -> (String, u32);
    /// `tune.bufsize`: the most bytes captured.
    fn bufsize(&self) -> usize;
    /// Where this proxy's last refused message is kept.
    fn slot(&self) -> &ErrorSlot;
    /// The id (`sid`) of `server` among this backend's servers, 0 if it is
    /// not one of them (or this is a frontend).
    fn server_id(&self, _server: &ServerState) -> u32 {
        0
    }
}

/// A shared proxy, as the engines hold them.
impl<T: CaptureSide + ?Sized> CaptureSide for Arc<T> {
    fn named(&self) -> (String, u32) {
        (**self).named()
    }
    fn bufsize(&self) -> usize {
        (**self).bufsize()
    }
    fn slot(&self) -> &ErrorSlot {
        (**self).slot()
    }
    fn server_id(&self, server: &ServerState) -> u32 {
        (**self).server_id(server)
    }
}

/// Copies `parts` (the head, then what followed it) up to `max` bytes.
fn gather(parts: &[&[u8]], max: usize) -> Box<[u8]> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total.min(max));
    for p in parts {
        let room = max - out.len();
        out.extend_from_slice(&p[..p.len().min(room)]);
    }
    out.into_boxed_slice()
}

/// A request `fe` refused: `parts` are the bytes received, `be` the
/// backend already chosen, if any.
pub(crate) fn request_error(
    fe: &dyn CaptureSide,
    be: Option<&dyn CaptureSide>,
    src: Option<SocketAddr>,
    parts: &[&[u8]],
    spot: ErrorSpot,
) {
    fe.slot().store(Capture {
        when: SystemTime::now(),
        event: EVENTS.fetch_add(1, Relaxed),
        other: be.map(|b| b.named()),
        server: None,
        src,
        bufsize: fe.bufsize(),
        bytes: gather(parts, fe.bufsize()),
        spot,
    });
}

/// A response `be` refused from `server`, for a client of `fe`.
pub(crate) fn response_error(
    be: &dyn CaptureSide,
    fe: &dyn CaptureSide,
    server: &ServerState,
    src: Option<SocketAddr>,
    parts: &[&[u8]],
    mut spot: ErrorSpot,
) {
    spot.flags |= crate::wire::error_spot::flags::RESP;
    be.slot().store(Capture {
        when: SystemTime::now(),
        event: EVENTS.fetch_add(1, Relaxed),
        other: Some(fe.named()),
        server: Some((server.name.clone(), be.server_id(server))),
        src,
        bufsize: be.bufsize(),
        bytes: gather(parts, be.bufsize()),
        spot,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_caps_at_bufsize() {
        assert_eq!(&*gather(&[b"abc", b"def"], 4), b"abcd");
        assert_eq!(&*gather(&[b"abc", b""], 16), b"abc");
    }
}
