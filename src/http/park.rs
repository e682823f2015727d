//! Parking for idle client connections.
//!
//! A keep-alive client that stays silent past a short grace period is taken
//! out of the async runtime altogether: its socket leaves tokio's reactor
//! (freeing the task and the reactor's per-socket state) and waits in one
//! shared epoll set, as a compact record. When the client sends its next
//! request (or closes), the socket goes back to tokio and a new task serves
//! it; when its idle timeout expires, it is closed. An idle connection thus
//! costs a record of about a hundred bytes instead of a task.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::net::TcpStream;

use crate::listener::ClientConn;

/// How long a connection stays in its task, waiting for the next request,
/// before it is parked. Back-to-back keep-alive traffic never parks.
pub const GRACE: Duration = Duration::from_millis(250);

/// How often expired parked connections are closed.
const SWEEP: Duration = Duration::from_millis(500);

struct Parked {
    stream: std::net::TcpStream,
    client: ClientConn,
    peer: SocketAddr,
    /// When the idle timeout expires (None: never).
    deadline: Option<Instant>,
}

/// The parked connections, by slot; the slot number is the epoll token.
#[derive(Default)]
struct Slots {
    entries: Vec<Option<Parked>>,
    free: Vec<usize>,
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
}

static LOT: OnceLock<Option<Arc<Lot>>> = OnceLock::new();

fn lock(m: &Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The process's parking lot, started on first use inside the runtime.
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
        });
        tokio::spawn(run(lot.clone()));
        Some(lot)
    })
    .as_ref()
}

/// Parks an idle connection. Gives it back if it cannot be parked, so the
/// caller can keep serving it.
pub fn park(
    client: ClientConn,
    stream: TcpStream,
    peer: SocketAddr,
    idle_left: Option<Duration>,
) -> Result<(), (ClientConn, TcpStream)> {
    if crate::process::stopping() {
        // Closing is what a stopping process does with idle connections.
        return Ok(());
    }
    let Some(lot) = lot() else {
        return Err((client, stream));
    };
    let std_stream = match stream.into_std() {
        Ok(s) => s,
        // The socket is unusable; dropping it closes the connection.
        Err(_) => return Ok(()),
    };
    let fd = std_stream.as_raw_fd();
    let deadline = idle_left.map(|d| Instant::now() + d);
    lot.parked_since_trim.fetch_add(1, Relaxed);
    let mut slots = lock(&lot.slots);
    // Checked under the lock that close_all takes after the flag is set,
    // so no connection is parked after the lot was emptied.
    if crate::process::stopping() {
        return Ok(());
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
        return match TcpStream::from_std(p.stream) {
            Ok(s) => Err((p.client, s)),
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
    let mut sweep = tokio::time::interval(SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
            _ = sweep.tick() => {
                expire(&lot);
                give_back_memory(&lot);
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
    let Parked {
        stream,
        client,
        peer,
        ..
    } = p;
    if let Ok(stream) = TcpStream::from_std(stream) {
        tokio::spawn(super::service::serve_connection(
            client, stream, peer, false,
        ));
    }
}

fn expire(lot: &Lot) {
    let now = Instant::now();
    let expired: Vec<Parked> = {
        let mut slots = lock(&lot.slots);
        let keys: Vec<usize> = slots
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.as_ref()
                    .and_then(|p| p.deadline)
                    .is_some_and(|d| d <= now)
            })
            .map(|(i, _)| i)
            .collect();
        keys.into_iter().filter_map(|k| slots.remove(k)).collect()
    };
    for p in &expired {
        unregister(lot, p);
    }
    // Dropping the records closes the sockets and releases the clients.
}

/// Closes every parked connection (soft stop: idle keep-alive connections
/// are closed, as HAProxy does). Returns how many were closed. A
/// connection woken at the same moment is served by its new task, which
/// closes it after its request since the process is stopping.
pub fn close_all() -> usize {
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
            let Parked {
                stream,
                client,
                peer,
                ..
            } = p;
            if let Ok(stream) = TcpStream::from_std(stream) {
                tokio::spawn(super::service::serve_connection(
                    client, stream, peer, false,
                ));
            }
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

/// Number of connections parked now (for tests and `show info`).
pub fn parked_count() -> usize {
    match LOT.get() {
        Some(Some(lot)) => lock(&lot.slots)
            .entries
            .iter()
            .filter(|e| e.is_some())
            .count(),
        _ => 0,
    }
}
