//! Kernel-side relaying between two plain sockets: on Linux, one direction
//! of a `mode tcp` relay or of a protocol-switch tunnel ([`pump`]), or a
//! long HTTP body of known length ([`transfer`]), moves bytes from the
//! source socket into a pipe and from the pipe to the destination with
//! splice(2), so the payload never crosses into user space.
//!
//! A direction holds a pipe only while bytes are in flight: it waits for
//! readability without one, takes a pipe from a small per-thread spare list
//! (or creates one), and gives it back as soon as the source has nothing
//! more to read and the pipe is empty. An idle connection therefore costs
//! no pipe. When no pipe can be had (`maxpipes`, or the process is out of
//! descriptors) the direction carries that burst through a user-space
//! buffer instead.
//!
//! `global nosplice` turns all of this off (the relay then copies as on
//! other systems).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Splice settings from the `global` section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tune {
    /// `nosplice`: always copy through user space.
    pub(crate) disabled: bool,
    /// `tune.pipesize`: the capacity asked of new pipes (kernel default,
    /// 64 KiB, when unset).
    pub(crate) pipesize: Option<u32>,
    /// `maxpipes`: most pipes in existence at once (in use or spare).
    pub(crate) maxpipes: Option<u32>,
}

/// Pipes carrying a burst now (`show info` PipesUsed; what `maxpipes`
/// bounds).
static PIPES_USED: AtomicUsize = AtomicUsize::new(0);
/// Spare pipes over all threads (`show info` PipesFree).
static PIPES_FREE: AtomicUsize = AtomicUsize::new(0);
/// Bytes written to a socket from a pipe (`show info`
/// TotalSplicdedBytesOut).
static SPLICED_OUT: AtomicU64 = AtomicU64::new(0);

/// (pipes in use, spare pipes, bytes spliced out) for `show info`.
pub(crate) fn usage() -> (usize, usize, u64) {
    (
        PIPES_USED.load(Relaxed),
        PIPES_FREE.load(Relaxed),
        SPLICED_OUT.load(Relaxed),
    )
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{pump, transfer};

#[cfg(target_os = "linux")]
mod linux {
    use std::cell::RefCell;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::sync::atomic::Ordering::Relaxed;
    use std::time::Duration;

    use tokio::io::Interest;
    use tokio::net::TcpStream;

    use crate::wire::io::RelayError;
    use crate::wire::relay::{End, HalfClose, IdleTimeouts, Relayed};
    use crate::wire::splice::{PIPES_FREE, PIPES_USED, SPLICED_OUT, Tune};

    /// Spare pipes kept per thread at most.
    const SPARE_MAX: usize = 16;
    /// A pipe's capacity when the kernel does not tell.
    const DEFAULT_PIPE: usize = 64 * 1024;
    /// The capacity asked of a new pipe without `tune.pipesize`: on a
    /// loopback relay 512 KiB pipes cost about half the CPU per byte of
    /// the kernel's 64 KiB ones (fewer, larger splices), and hold pages
    /// only while bytes wait for a full destination.
    const DEFAULT_PIPESIZE: u32 = 512 * 1024;
    /// The user-space buffer of a burst that got no pipe.
    const COPY_CHUNK: usize = 16 * 1024;

    thread_local! {
        /// Empty pipes of this thread, ready for the next burst.
        static SPARE: RefCell<Vec<Pipe>> = const { RefCell::new(Vec::new()) };
    }

    /// Both ends of a pipe, non-blocking; always empty when spare.
    struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
        capacity: usize,
    }

    /// A pipe carrying a burst, counted in PIPES_USED until given back or
    /// dropped (closed, e.g. with bytes the destination refused).
    struct Leased(Option<Pipe>);

    impl Drop for Leased {
        fn drop(&mut self) {
            if self.0.is_some() {
                PIPES_USED.fetch_sub(1, Relaxed);
            }
        }
    }

    impl Leased {
        /// A spare pipe of this thread, else a new one; None when
        /// `maxpipes` pipes are in use or pipe2(2) fails.
        fn take(tune: &Tune) -> Option<Leased> {
            let before = PIPES_USED.fetch_add(1, Relaxed);
            if tune.maxpipes.is_some_and(|m| before >= m as usize) {
                PIPES_USED.fetch_sub(1, Relaxed);
                return None;
            }
            if let Some(p) = SPARE.with(|s| s.borrow_mut().pop()) {
                PIPES_FREE.fetch_sub(1, Relaxed);
                return Some(Leased(Some(p)));
            }
            let pipe = Pipe::new(tune);
            if pipe.is_none() {
                PIPES_USED.fetch_sub(1, Relaxed);
            }
            pipe.map(|p| Leased(Some(p)))
        }

        fn pipe(&self) -> Option<&Pipe> {
            self.0.as_ref()
        }

        /// Keeps the emptied pipe for the next burst of this thread.
        fn give_back(mut self) {
            let Some(p) = self.0.take() else { return };
            PIPES_USED.fetch_sub(1, Relaxed);
            SPARE.with(|s| {
                let mut s = s.borrow_mut();
                if s.len() < SPARE_MAX {
                    PIPES_FREE.fetch_add(1, Relaxed);
                    s.push(p);
                }
            });
        }
    }

    impl Pipe {
        fn new(tune: &Tune) -> Option<Pipe> {
            let mut fds: [libc::c_int; 2] = [-1; 2];
            // SAFETY: `fds` has room for the two descriptors pipe2 writes.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
                return None;
            }
            // SAFETY: pipe2 succeeded, so both descriptors are open and
            // owned by nobody else.
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let size = tune.pipesize.unwrap_or(DEFAULT_PIPESIZE);
            let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
            // SAFETY: plain fcntls on a descriptor we own. A refused size
            // (above /proc/sys/fs/pipe-max-size, or past the user's pipe
            // page quota) leaves the kernel's size, asked for then.
            let capacity = match unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, size) }
            {
                n if n > 0 => n,
                _ => unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) },
            };
            let capacity = usize::try_from(capacity)
                .ok()
                .filter(|c| *c > 0)
                .unwrap_or(DEFAULT_PIPE);
            Some(Pipe {
                read,
                write,
                capacity,
            })
        }
    }

    /// What carries one burst from the source to the destination.
    enum Carrier {
        Pipe(Leased),
        /// No pipe could be had: a user-space buffer and how much of it
        /// the last read filled.
        Buffer(Box<[u8]>, usize),
    }

    impl Carrier {
        fn take(tune: &Tune) -> Carrier {
            match Leased::take(tune) {
                Some(p) => Carrier::Pipe(p),
                None => Carrier::Buffer(vec![0; COPY_CHUNK].into_boxed_slice(), 0),
            }
        }

        /// Moves what the source has (up to the carrier's size and `limit`)
        /// in; Ok(0) at the end of the stream. Only called when empty, so
        /// EAGAIN means the source has nothing, never that the pipe is full.
        fn fill(&mut self, from: RawFd, limit: usize) -> io::Result<usize> {
            match self {
                Carrier::Pipe(l) => match l.pipe() {
                    Some(p) => splice(from, p.write.as_raw_fd(), p.capacity.min(limit)),
                    None => Err(io::ErrorKind::NotConnected.into()),
                },
                Carrier::Buffer(buf, len) => {
                    let room = buf.len().min(limit);
                    // SAFETY: reads at most `room` <= buf.len() bytes into buf.
                    let n = unsafe { libc::read(from, buf.as_mut_ptr().cast(), room) };
                    let n = ret(n)?;
                    *len = n;
                    Ok(n)
                }
            }
        }

        /// Moves out up to the last `left` bytes filled.
        fn drain(&mut self, to: RawFd, left: usize) -> io::Result<usize> {
            match self {
                Carrier::Pipe(l) => match l.pipe() {
                    Some(p) => splice(p.read.as_raw_fd(), to, left),
                    None => Err(io::ErrorKind::NotConnected.into()),
                },
                Carrier::Buffer(buf, len) => {
                    let out = &buf[*len - left..*len];
                    // SAFETY: writes from a live slice of its own length.
                    let n = unsafe { libc::write(to, out.as_ptr().cast(), out.len()) };
                    ret(n)
                }
            }
        }

        /// Ends a burst whose bytes all went out.
        fn release(self) {
            if let Carrier::Pipe(p) = self {
                p.give_back();
            }
        }
    }

    fn ret(n: isize) -> io::Result<usize> {
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }

    fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
        // SAFETY: both descriptors are open for the duration of the call;
        // null offsets mean "current position", as sockets and pipes need.
        let n = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        ret(n)
    }

    /// Why bytes stopped moving.
    #[derive(Debug)]
    pub(crate) enum Stop {
        /// The source ended (no byte in flight).
        Eof,
        Read(io::Error),
        /// Bytes in flight could not be written.
        Write(io::Error),
        WriteTimeout,
    }

    /// Moves what `from` has now, at most `limit` bytes, through `carrier`
    /// to `to`, waiting (at most `write_timeout` each time) while `to` is
    /// full. Returns the bytes moved, 0 when `from` has nothing right now;
    /// `written` counts every byte `to` took as it goes, so bytes written
    /// before a failure are counted too (a server that resets mid-stream
    /// did receive them).
    async fn move_some(
        from: &TcpStream,
        to: &TcpStream,
        carrier: &mut Carrier,
        limit: usize,
        write_timeout: Option<Duration>,
        written: &mut u64,
    ) -> Result<usize, Stop> {
        let n = match from.try_io(Interest::READABLE, || carrier.fill(from.as_raw_fd(), limit)) {
            Ok(0) => return Err(Stop::Eof),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(Stop::Read(e)),
        };
        let mut left = n;
        while left > 0 {
            match to.try_io(Interest::WRITABLE, || carrier.drain(to.as_raw_fd(), left)) {
                // Nothing taken although asked: the socket is gone.
                Ok(0) => return Err(Stop::Write(io::ErrorKind::WriteZero.into())),
                Ok(m) => {
                    left -= m;
                    *written += m as u64;
                    if matches!(carrier, Carrier::Pipe(_)) {
                        SPLICED_OUT.fetch_add(m as u64, Relaxed);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let writable = match write_timeout {
                        Some(t) => tokio::time::timeout(t, to.writable())
                            .await
                            .map_err(|_| Stop::WriteTimeout)?,
                        None => to.writable().await,
                    };
                    writable.map_err(Stop::Write)?;
                }
                Err(e) => return Err(Stop::Write(e)),
            }
        }
        Ok(n)
    }

    /// Waits until `from` has bytes (or an end), at most `idle`; false
    /// when the time ran out.
    async fn readable(from: &TcpStream, idle: Option<Duration>) -> Result<bool, io::Error> {
        match idle {
            Some(t) => match tokio::time::timeout(t, from.readable()).await {
                Ok(r) => r.map(|_| true),
                Err(_) => Ok(false),
            },
            None => from.readable().await.map(|_| true),
        }
    }

    /// Relays one direction, `from` to `to`, until `from` ends, fails or
    /// stays silent for `idle`, or `to` takes nothing for `write_idle`
    /// (each the `fin` one once `half` says the other direction ended);
    /// then shuts `to`'s write half (after every byte read went out) and
    /// tells `half`. Counts the bytes written to `to`.
    pub(crate) async fn pump(
        from: &TcpStream,
        to: &TcpStream,
        idle: IdleTimeouts,
        write_idle: IdleTimeouts,
        tune: Tune,
        half: &HalfClose,
    ) -> Relayed {
        let mut total = 0u64;
        let end = 'relay: loop {
            // Nothing in flight: wait for the next bytes holding no pipe.
            match half.within(idle, from.readable()).await {
                Some(Ok(())) => {}
                None => break End::Timeout,
                Some(Err(_)) => break End::ReadError,
            }
            let write_idle = write_idle.at(half.is_closed());
            let mut carrier = Carrier::take(&tune);
            loop {
                match move_some(from, to, &mut carrier, usize::MAX, write_idle, &mut total).await {
                    Ok(0) => {
                        carrier.release();
                        continue 'relay;
                    }
                    Ok(_) => {}
                    Err(Stop::Eof) => {
                        carrier.release();
                        break 'relay End::Eof;
                    }
                    // A failed read leaves the carrier empty.
                    Err(Stop::Read(_)) => {
                        carrier.release();
                        break 'relay End::ReadError;
                    }
                    // The carrier still holds bytes: dropped, not kept.
                    Err(Stop::WriteTimeout) => break 'relay End::WriteTimeout,
                    Err(_) => break 'relay End::WriteError,
                }
            }
        };
        let _ = socket2::SockRef::from(to).shutdown(std::net::Shutdown::Write);
        half.close();
        Relayed { bytes: total, end }
    }

    /// Moves exactly `len` bytes from `from` to `to` (an HTTP body of known
    /// length: not one byte more, the next message stays in the socket).
    /// `read_timeout` bounds each wait for the source, `write_timeout` each
    /// wait for the destination.
    pub(crate) async fn transfer(
        from: &TcpStream,
        to: &TcpStream,
        len: u64,
        read_timeout: Option<Duration>,
        write_timeout: Option<Duration>,
        tune: Tune,
    ) -> Result<(), RelayError> {
        let mut left = len;
        while left > 0 {
            match readable(from, read_timeout).await {
                Ok(true) => {}
                Ok(false) => return Err(RelayError::ReadTimeout),
                Err(e) => return Err(RelayError::Read(e)),
            }
            let mut carrier = Carrier::take(&tune);
            loop {
                let limit = usize::try_from(left).unwrap_or(usize::MAX);
                let mut written = 0;
                match move_some(from, to, &mut carrier, limit, write_timeout, &mut written).await {
                    Ok(0) => break,
                    Ok(n) => {
                        left -= n as u64;
                        if left == 0 {
                            break;
                        }
                    }
                    Err(Stop::Eof) => return Err(RelayError::Truncated),
                    Err(Stop::Read(e)) => return Err(RelayError::Read(e)),
                    Err(Stop::Write(e)) => return Err(RelayError::Write(e)),
                    Err(Stop::WriteTimeout) => return Err(RelayError::WriteTimeout),
                }
            }
            carrier.release();
        }
        Ok(())
    }
}
