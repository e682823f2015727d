//! Parking for idle client connections.
//!
//! A keep-alive client that stays silent past a short grace period is taken
//! out of the async runtime altogether: its socket leaves tokio's reactor
//! (freeing the task and the reactor's per-socket state) and waits in one
//! shared epoll set, as a compact record. When the client sends its next
//! request (or closes), the socket goes back to tokio and a new task serves
//! it; when its idle timeout expires, it is closed. An idle connection thus
//! costs a record of about a hundred bytes instead of a task.

use crate::sys::peer::Peer;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;

use crate::snapshot::client::ClientConn;

/// How long a connection stays in its task, waiting for the next request,
/// before it is parked. Back-to-back keep-alive traffic (and a page's
/// burst of requests) never parks. Short, because the tasks of connections
/// waiting out the grace are the high-water mark of the heap: with 250 ms,
/// 5,000 connections opened in a second cost about 600 B each once idle;
/// with 50 ms, about 450 B (bench/smoke.sh's idle test at 5,000).
pub(crate) const GRACE: Duration = Duration::from_millis(50);

/// How often the lot is swept when no parked connection has a deadline
/// sooner (memory is given back on each sweep).
const SWEEP: Duration = Duration::from_millis(500);

/// The least time between two sweeps: a parked connection is closed at
/// most this late after its idle timeout, and many connections expiring
/// at nearly the same time cost one scan, not one each.
const SWEEP_GAP: Duration = Duration::from_millis(20);

struct Parked {
    stream: std::net::TcpStream,
    client: ClientConn,
    peer: Peer,
    /// When the idle timeout expires (None: never).
    deadline: Option<Instant>,
}

/// The parked connections, by slot; the slot number is the epoll token.
#[derive(Default)]
struct Slots {
    entries: Vec<Option<Parked>>,
    free: Vec<usize>,
    /// When the sweeper will next look for expired connections (None: at
    /// its regular pace); a connection parked with an earlier deadline
    /// brings the sweep forward.
    next_due: Option<Instant>,
}

impl Slots {
    fn insert(&mut self, p: Parked) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.entries[i] = Some(p);
                i
            }
            None => {
                self.entries.push(Some(p));
                self.entries.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) -> Option<Parked> {
        let p = self.entries.get_mut(i)?.take()?;
        self.free.push(i);
        Some(p)
    }
}

struct EpollFd(RawFd);

impl AsRawFd for EpollFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Drop for EpollFd {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned by this value.
        unsafe { libc::close(self.0) };
    }
}

/// The epoll descriptor as the reactor watches it (owned by the lot).
struct RawEpoll(RawFd);

impl AsRawFd for RawEpoll {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

struct Lot {
    epoll: EpollFd,
    slots: Mutex<Slots>,
    /// Connections parked since memory was last given back.
    parked_since_trim: AtomicUsize,
    /// Wakes the sweeper when a deadline sooner than its next sweep arrives.
    resched: tokio::sync::Notify,
}

static LOT: OnceLock<Option<Arc<Lot>>> = OnceLock::new();

fn lock(m: &Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The process's parking lot, started on first use, on the control runtime
/// (from where connections that speak again are dealt to the workers).
/// None if the system refused an epoll instance: connections then simply
/// stay in their tasks.
fn lot() -> Option<&'static Arc<Lot>> {
    LOT.get_or_init(|| {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let lot = Arc::new(Lot {
            epoll: EpollFd(fd),
            slots: Mutex::new(Slots::default()),
            parked_since_trim: AtomicUsize::new(0),
            resched: tokio::sync::Notify::new(),
        });
        match crate::sys::workers::control() {
            Some(control) => drop(control.spawn(run(lot.clone()))),
            None => drop(tokio::spawn(run(lot.clone()))),
        }
        Some(lot)
    })
    .as_ref()
}

/// Parks an idle connection. Gives it back if it cannot be parked, so the
/// caller can keep serving it.
pub(crate) fn park(
    client: ClientConn,
    stream: TcpStream,
    peer: Peer,
    idle_left: Option<Duration>,
) -> Result<(), Box<(ClientConn, TcpStream)>> {
    if crate::sys::process::stopping() {
        // Closing is what a stopping process does with idle connections.
        return Ok(());
    }
    let Some(lot) = lot() else {
        return Err(Box::new((client, stream)));
    };
    let std_stream = match stream.into_std() {
        Ok(s) => s,
        // The socket is unusable; dropping it closes the connection.
        Err(_) => return Ok(()),
    };
    let fd = std_stream.as_raw_fd();
    // A parked connection is no worker's until it is given back.
    client.load().park();
    let deadline = idle_left.map(|d| Instant::now() + d);
    lot.parked_since_trim.fetch_add(1, Relaxed);
    let mut slots = lock(&lot.slots);
    // Checked under the lock that close_all takes after the flag is set,
    // so no connection is parked after the lot was emptied.
    if crate::sys::process::stopping() {
        return Ok(());
    }
    if let Some(d) = deadline
        && slots.next_due.is_none_or(|due| d < due)
    {
        slots.next_due = Some(d);
        lot.resched.notify_one();
    }
    let key = slots.insert(Parked {
        stream: std_stream,
        client,
        peer,
        deadline,
    });
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32,
        u64: key as u64,
    };
    // SAFETY: `fd` is open (owned by the record just stored) and `ev` is a
    // valid event structure.
    let rc = unsafe { libc::epoll_ctl(lot.epoll.0, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    if rc != 0 {
        let Some(p) = slots.remove(key) else {
            return Ok(());
        };
        drop(slots);
        // Not parked after all: counted where it stays.
        p.client.load().resume(None);
        return match TcpStream::from_std(p.stream) {
            Ok(s) => Err(Box::new((p.client, s))),
            Err(_) => Ok(()),
        };
    }
    Ok(())
}

/// Wakes parked connections that became readable, closes expired ones.
async fn run(lot: Arc<Lot>) {
    // SAFETY: the epoll descriptor belongs to `lot`, which lives in a
    // static for the whole process, so it outlives this registration.
    let Ok(afd) = (unsafe { AsyncFd::register(RawEpoll(lot.epoll.0)) }) else {
        return;
    };
    let mut due = Instant::now() + SWEEP;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    loop {
        tokio::select! {
            ready = afd.readable() => {
                let Ok(mut guard) = ready else { return };
                loop {
                    // SAFETY: `events` has room for `len` entries.
                    let n = unsafe {
                        libc::epoll_wait(lot.epoll.0, events.as_mut_ptr(), events.len() as i32, 0)
                    };
                    if n <= 0 {
                        break;
                    }
                    for ev in &events[..n as usize] {
                        wake(&lot, ev.u64 as usize);
                    }
                }
                guard.clear_ready();
            }
            _ = lot.resched.notified() => {
                // An earlier deadline arrived: sweep then (not sooner than
                // the gap allows).
                let soonest = Instant::now() + SWEEP_GAP;
                if let Some(d) = lock(&lot.slots).next_due {
                    due = due.min(d.max(soonest));
                }
            }
            _ = tokio::time::sleep_until(due.into()) => {
                let next = expire(&lot);
                give_back_memory(&lot);
                let now = Instant::now();
                due = next.map_or(now + SWEEP, |d| d.max(now + SWEEP_GAP));
            }
        }
    }
}

fn unregister(lot: &Lot, p: &Parked) {
    // SAFETY: removing a descriptor we registered; failure is harmless.
    unsafe {
        libc::epoll_ctl(
            lot.epoll.0,
            libc::EPOLL_CTL_DEL,
            p.stream.as_raw_fd(),
            std::ptr::null_mut(),
        )
    };
}

fn wake(lot: &Lot, key: usize) {
    let Some(p) = lock(&lot.slots).remove(key) else {
        return;
    };
    unregister(lot, &p);
    serve_again(p);
}

/// Hands a parked connection whose next request has come back to the
/// HTTP engine, on one of the runtimes (the lot runs on the first).
fn serve_again(p: Parked) {
    let Parked {
        stream,
        client,
        peer,
        ..
    } = p;
    // The worker that serves the fewest connections takes it (the lot
    // runs on the control runtime).
    let _on = crate::sys::workers::enter_lightest().map(|(n, on)| {
        client.load().resume(Some(n));
        on
    });
    // Its request is there: read and answered before the socket joins
    // the reactor again (`tls::TcpConn`).
    crate::sys::slab::spawn(move || {
        crate::http::service::serve_connection(
            client,
            crate::tls::Stream::Tcp(crate::tls::TcpConn::unregistered(stream)),
            peer,
            None,
            None,
        )
    });
}

/// Closes the expired connections; returns the earliest deadline left.
fn expire(lot: &Lot) -> Option<Instant> {
    let now = Instant::now();
    let (expired, next): (Vec<Parked>, Option<Instant>) = {
        let mut slots = lock(&lot.slots);
        let mut keys: Vec<usize> = Vec::new();
        let mut next: Option<Instant> = None;
        for (i, d) in slots
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i, e.as_ref()?.deadline?)))
        {
            if d <= now {
                keys.push(i);
            } else if next.is_none_or(|n| d < n) {
                next = Some(d);
            }
        }
        slots.next_due = next;
        let expired = keys.into_iter().filter_map(|k| slots.remove(k)).collect();
        (expired, next)
    };
    for p in &expired {
        unregister(lot, p);
    }
    // Dropping the records closes the sockets and releases the clients.
    drop(expired);
    next
}

/// Closes every parked connection (soft stop: idle keep-alive connections
/// are closed, as HAProxy does). Returns how many were closed. A
/// connection woken at the same moment is served by its new task, which
/// closes it after its request since the process is stopping.
pub(crate) fn close_all() -> usize {
    let Some(Some(lot)) = LOT.get() else {
        return 0;
    };
    let all: Vec<Parked> = {
        let mut slots = lock(&lot.slots);
        let n = slots.entries.len();
        (0..n).filter_map(|k| slots.remove(k)).collect()
    };
    let mut closed = 0;
    for p in all {
        unregister(lot, &p);
        // A request that has just arrived is served (closing over unread
        // bytes would reset the connection); its task closes it after.
        let mut probe = [0u8; 1];
        if matches!(p.stream.peek(&mut probe), Ok(n) if n > 0) {
            serve_again(p);
            continue;
        }
        closed += 1;
    }
    closed
}

/// After many connections were parked, the tasks they left are free heap
/// scattered between live records; the allocator keeps such pages resident
/// until asked to return them.
fn give_back_memory(lot: &Lot) {
    if lot.parked_since_trim.load(Relaxed) >= 256 {
        lot.parked_since_trim.store(0, Relaxed);
        // SAFETY: malloc_trim only releases free memory; it has no
        // preconditions.
        unsafe { libc::malloc_trim(0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle keep-alive connection costs its parked record (plus the
    /// kernel's socket): this is what `proxy-bench --idle-conns` measures
    /// per connection. A field added to `Parked`, `ClientConn` or `Peer`
    /// grows every idle connection; keep new per-connection data behind a
    /// pointer (as `ClientConn`'s stick counters) or out of the record, or raise these
    /// bounds knowingly.
    #[test]
    fn an_idle_connection_stays_small() {
        assert!(
            std::mem::size_of::<Peer>() <= 32,
            "Peer: {}",
            std::mem::size_of::<Peer>()
        );
        // 88: the connection's facts for the fetches (24 bytes, its
        // PROXY header boxed) and its session's stick counters (boxed);
        // its place in its worker's count holds nothing.
        let client = std::mem::size_of::<ClientConn>();
        assert!(client <= 88, "ClientConn: {client} bytes");
        let parked = std::mem::size_of::<Option<Parked>>();
        assert!(parked <= 144, "a parked connection: {parked} bytes");
    }
}
