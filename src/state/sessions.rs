//! The streams `show sess` lists (reference §1.6). Each client connection
//! registers one small [`StreamEntry`] at accept, in one of a few sharded
//! maps (locked at accept and close only, never per request). A request
//! marks its entry with plain atomic stores: started (time), routed to a
//! backend, sent to a server, finished. A connection without a request in
//! progress (idle keep-alive, nothing received yet) is not listed, as
//! HAProxy creates no stream for it.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use crate::sys::peer::Peer;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Shards of the registry: accepts and closes on different threads rarely
/// meet on one lock.
const SHARDS: usize = 16;
/// Entries allocated at once in a shard (48 bytes each): the first
/// segment is small and each next one doubles, up to the last size.
/// Fixed 256-entry segments cost every shard 12 KiB as soon as it held one
/// connection: 196 KB (about 200 B per connection) at 1,000 connections
/// spread over the 16 shards.
const SEGMENT_FIRST: usize = 16;
const SEGMENT_MAX: usize = 256;

/// The size of a shard's next segment, once it has `held` segments.
fn segment_len(held: usize) -> usize {
    SEGMENT_FIRST
        .checked_shl(held as u32)
        .map_or(SEGMENT_MAX, |n| n.min(SEGMENT_MAX))
}

/// Entries live in segments that are never freed nor moved (the high
/// water mark stays allocated, as HAProxy's pools): a connection holds a
/// plain `&'static` to its entry, no reference count, no map node.
struct Shard {
    segments: Vec<&'static [StreamEntry]>,
    free: Vec<&'static StreamEntry>,
}

static REGISTRY: [Mutex<Shard>; SHARDS] = [const {
    Mutex::new(Shard {
        segments: Vec::new(),
        free: Vec::new(),
    })
}; SHARDS];

/// One client connection as `show sess` sees it: 48 bytes, all atomics
/// (a reused entry may be read while it is being filled; `show sess` then
/// shows a mix of two connections at worst).
#[derive(Debug, Default)]
pub(crate) struct StreamEntry {
    /// The peer's address as IPv6 (IPv4-mapped for IPv4), big endian.
    ip: [AtomicU64; 2],
    /// The chosen server's state address (0: none yet), only compared
    /// with the snapshot's servers to name it, never dereferenced.
    srv: AtomicUsize,
    /// Peer port, bit 16 set for an IPv6 peer; bit 17 for a UNIX one,
    /// the listener's number in the low bits.
    port: AtomicU32,
    /// The frontend's proxy id.
    fe_iid: AtomicU32,
    /// The client socket's descriptor (`scf=[...,fd=N]`); also picks the
    /// shard.
    fd: AtomicI32,
    /// Start of the request in progress, in seconds from [`base`] plus 1;
    /// 0 when there is none.
    started: AtomicU32,
    /// Backend id of the request in progress (0: not routed yet).
    be_iid: AtomicU32,
    /// Requests started on this connection (`calls=`).
    calls: AtomicU32,
}

/// The clock `started` counts from.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn now_s() -> u32 {
    base().elapsed().as_secs() as u32 + 1
}

impl StreamEntry {
    /// A request begins (its head arrived).
    pub(crate) fn begin(&self) {
        self.be_iid.store(0, Relaxed);
        self.srv.store(0, Relaxed);
        self.calls.fetch_add(1, Relaxed);
        self.started.store(now_s(), Relaxed);
    }

    pub(crate) fn to_backend(&self, iid: u32) {
        self.be_iid.store(iid, Relaxed);
    }

    pub(crate) fn to_server(&self, server: &Arc<crate::state::ServerState>) {
        self.srv.store(Arc::as_ptr(server) as usize, Relaxed);
    }

    /// The request is over: the connection is no stream any more.
    pub(crate) fn end(&self) {
        self.started.store(0, Relaxed);
    }

    /// The client's address: the socket's peer, or what a PROXY protocol
    /// header said.
    pub(crate) fn set_peer(&self, peer: Peer) {
        let peer = match peer {
            Peer::Ip(a) => a,
            Peer::Unix(luid) => {
                self.port.store((luid & 0xffff) | UNIX, Relaxed);
                return;
            }
        };
        let (ip, v6) = match peer.ip() {
            IpAddr::V4(a) => (a.to_ipv6_mapped(), 0),
            IpAddr::V6(a) => (a, 1 << 16),
        };
        let bits = u128::from(ip);
        self.ip[0].store((bits >> 64) as u64, Relaxed);
        self.ip[1].store(bits as u64, Relaxed);
        self.port.store(u32::from(peer.port()) | v6, Relaxed);
    }

    fn peer(&self) -> Peer {
        let port = self.port.load(Relaxed);
        if port & UNIX != 0 {
            return Peer::Unix(port & 0xffff);
        }
        let hi = self.ip[0].load(Relaxed);
        let lo = self.ip[1].load(Relaxed);
        let v6 = Ipv6Addr::from((u128::from(hi) << 64) | u128::from(lo));
        let ip = match v6.to_ipv4_mapped() {
            Some(v4) if port & 1 << 16 == 0 => IpAddr::V4(v4),
            _ => IpAddr::V6(v6),
        };
        Peer::Ip(SocketAddr::new(ip, port as u16))
    }
}

/// The bit of `StreamEntry::port` that marks a UNIX client.
const UNIX: u32 = 1 << 17;

/// A registered entry; dropping it unregisters the connection.
#[derive(Debug)]
pub(crate) struct Slot(&'static StreamEntry);

impl Slot {
    pub(crate) fn register(peer: Peer, fe_iid: u32, fd: i32) -> Slot {
        let entry = {
            let mut shard = lock(shard_of(fd));
            match shard.free.pop() {
                Some(e) => e,
                None => {
                    let seg: &'static [StreamEntry] = Box::leak(
                        (0..segment_len(shard.segments.len()))
                            .map(|_| StreamEntry::default())
                            .collect::<Box<[_]>>(),
                    );
                    shard.segments.push(seg);
                    shard.free.extend(seg[1..].iter());
                    &seg[0]
                }
            }
        };
        entry.set_peer(peer);
        entry.fe_iid.store(fe_iid, Relaxed);
        entry.fd.store(fd, Relaxed);
        entry.calls.store(0, Relaxed);
        entry.started.store(0, Relaxed);
        Slot(entry)
    }

    pub(crate) fn entry(&self) -> &'static StreamEntry {
        self.0
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A request cut short (connection dropped) never called `end`.
        self.0.end();
        lock(shard_of(self.0.fd.load(Relaxed))).free.push(self.0);
    }
}

fn shard_of(fd: i32) -> &'static Mutex<Shard> {
    &REGISTRY[fd.unsigned_abs() as usize % SHARDS]
}

/// The shard, even if a thread panicked holding it (its lists stay valid).
fn lock(m: &'static Mutex<Shard>) -> std::sync::MutexGuard<'static, Shard> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `shutdown sessions server`: closes the client connection of every
/// stream on `server` (its relay then ends both sides). Returns how many.
///
/// The descriptor is checked against the entry's peer address first: an
/// entry being released may still name a descriptor the kernel has just
/// given to another connection, which must not be touched.
pub(crate) fn shut_down_streams_of(server: *const crate::state::ServerState) -> usize {
    let mut n = 0;
    for shard in &REGISTRY {
        let segments = lock(shard).segments.clone();
        for e in segments.iter().flat_map(|s| s.iter()) {
            if e.started.load(Relaxed) == 0 || e.srv.load(Relaxed) != server as usize {
                continue;
            }
            let fd = e.fd.load(Relaxed);
            if peer_of(fd) == e.peer().inet() || is_unix(fd) && e.peer().inet().is_none() {
                // SAFETY: shutdown on a descriptor whose peer matches the
                // stream's: the connection is the one registered.
                unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
                n += 1;
            }
        }
    }
    n
}

/// Whether `fd` is a UNIX socket (whose peer has no address to compare).
fn is_unix(fd: i32) -> bool {
    use std::os::fd::BorrowedFd;
    if fd < 0 {
        return false;
    }
    // SAFETY: only borrowed for the getsockname call, as in `peer_of`.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    socket2::SockRef::from(&fd)
        .local_addr()
        .is_ok_and(|a| a.is_unix())
}

/// The peer address of socket `fd` (getpeername).
fn peer_of(fd: i32) -> Option<SocketAddr> {
    use std::os::fd::BorrowedFd;
    if fd < 0 {
        return None;
    }
    // SAFETY: only borrowed for the getpeername call; an fd that is not a
    // socket (or closed) makes it fail.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = socket2::SockRef::from(&fd);
    let addr = sock.peer_addr().ok()?.as_socket()?;
    // An IPv4 peer on an IPv6 socket shows as IPv4-mapped, as the entry does.
    Some(match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => addr,
        },
        v4 => v4,
    })
}

/// A request in progress, as read for `show sess`.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub(crate) ptr: usize,
    pub(crate) peer: Peer,
    pub(crate) fe_iid: u32,
    pub(crate) fd: i32,
    /// When the request began (wall clock).
    pub(crate) started: SystemTime,
    pub(crate) age_secs: u64,
    pub(crate) be_iid: u32,
    /// Compare with `Arc::as_ptr` of a snapshot's `ServerState`s.
    pub(crate) srv: usize,
    pub(crate) calls: u32,
}

/// Every request in progress, oldest first.
pub(crate) fn in_progress() -> Vec<Stream> {
    let now = now_s();
    let wall = SystemTime::now();
    let mut out = Vec::new();
    for shard in &REGISTRY {
        let segments = lock(shard).segments.clone();
        for e in segments.iter().flat_map(|s| s.iter()) {
            let started = e.started.load(Relaxed);
            if started == 0 {
                continue;
            }
            let age_secs = u64::from(now.saturating_sub(started));
            out.push(Stream {
                ptr: e as *const StreamEntry as usize,
                peer: e.peer(),
                fe_iid: e.fe_iid.load(Relaxed),
                fd: e.fd.load(Relaxed),
                started: wall - Duration::from_secs(age_secs),
                age_secs,
                be_iid: e.be_iid.load(Relaxed),
                srv: e.srv.load(Relaxed),
                calls: e.calls.load(Relaxed),
            });
        }
    }
    out.sort_by_key(|s| (std::cmp::Reverse(s.age_secs), s.ptr));
    out
}

/// HAProxy's `human_time(t, 1)`: at most two units, `0s` for zero
/// (`1s`, `2m28s`, `3h5m`, `1d2h`).
pub(crate) fn human_time(t: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 3600;
    const DAY: u64 = 86400;
    let mut out = String::new();
    let mut cnt = 2;
    if t >= DAY {
        out.push_str(&format!("{}d", t / DAY));
        cnt -= 1;
    }
    if cnt > 0 && t % DAY / HOUR > 0 {
        out.push_str(&format!("{}h", t % DAY / HOUR));
        cnt -= 1;
    }
    if cnt > 0 && t % HOUR / MINUTE > 0 {
        out.push_str(&format!("{}m", t % HOUR / MINUTE));
        cnt -= 1;
    }
    if (cnt > 0 && !t.is_multiple_of(MINUTE)) || t == 0 {
        out.push_str(&format!("{}s", t % MINUTE));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_time_as_haproxy() {
        assert_eq!(human_time(0), "0s");
        assert_eq!(human_time(1), "1s");
        assert_eq!(human_time(148), "2m28s");
        assert_eq!(human_time(120), "2m");
        assert_eq!(human_time(3 * 3600 + 5 * 60 + 7), "3h5m");
        assert_eq!(human_time(86400 + 7200 + 5), "1d2h");
        assert_eq!(human_time(86400 + 5), "1d5s");
    }

    #[test]
    fn only_requests_in_progress_are_listed() {
        let addr: SocketAddr = "127.0.0.1:4242".parse().expect("addr");
        let peer = Peer::Ip(addr);
        let slot = Slot::register(peer, 7, 42);
        let ptr = slot.entry() as *const StreamEntry as usize;
        let mine = |v: Vec<Stream>| v.into_iter().find(|s| s.ptr == ptr);
        assert!(mine(in_progress()).is_none(), "idle: not listed");
        slot.entry().begin();
        slot.entry().to_backend(3);
        let server = Arc::new(crate::state::ServerState::new(
            "be", "s1", addr, false, 2, 3,
        ));
        slot.entry().to_server(&server);
        let s = mine(in_progress()).expect("listed");
        assert_eq!((s.fe_iid, s.be_iid, s.calls, s.fd), (7, 3, 1, 42));
        assert_eq!(s.peer, peer);
        assert_eq!(s.srv, Arc::as_ptr(&server) as usize);
        slot.entry().end();
        assert!(mine(in_progress()).is_none());
        slot.entry().begin();
        drop(slot);
        assert!(mine(in_progress()).is_none(), "unregistered");
        let v6: SocketAddr = "[2001:db8::1]:443".parse().expect("addr");
        let slot = Slot::register(Peer::Ip(v6), 1, 43);
        slot.entry().begin();
        assert_eq!(slot.entry().peer(), Peer::Ip(v6));
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:80".parse().expect("addr");
        let slot2 = Slot::register(Peer::Ip(mapped), 1, 44);
        assert_eq!(slot2.entry().peer(), Peer::Ip(mapped));
        slot2.entry().set_peer(Peer::Unix(2));
        assert_eq!(slot2.entry().peer(), Peer::Unix(2));
        assert_eq!(std::mem::size_of::<StreamEntry>(), 48);
    }

    #[test]
    fn segments_start_small_and_double() {
        let lens: Vec<usize> = (0..7).map(segment_len).collect();
        assert_eq!(lens, [16, 32, 64, 128, 256, 256, 256]);
        assert_eq!(segment_len(usize::MAX), SEGMENT_MAX);
        // One shard (fds 16 apart) past two segments: every entry is its
        // own, and all go back to the free list.
        let addr: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let slots: Vec<Slot> = (0..60)
            .map(|i| Slot::register(Peer::Ip(addr), 1, 1_000_000 + 16 * i))
            .collect();
        let mut ptrs: Vec<usize> = slots
            .iter()
            .map(|s| s.entry() as *const _ as usize)
            .collect();
        ptrs.sort_unstable();
        ptrs.dedup();
        assert_eq!(ptrs.len(), 60);
        drop(slots);
    }
}
