//! Process life cycle: daemonizing, stop signals and the soft-stop state,
//! privileges, resource limits, CPU affinity, and systemd notifications.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use tokio::sync::Notify;

/// Forks into the background: the parent exits 0, the child starts a new
/// session with its standard streams on /dev/null. Must run before any
/// thread is started.
pub(crate) fn daemonize(pidfile: Option<&std::path::Path>) -> std::io::Result<()> {
    // SAFETY: called before the tokio runtime or any other thread exists,
    // so the child inherits a consistent single-threaded state.
    unsafe {
        match libc::fork() {
            -1 => return Err(std::io::Error::last_os_error()),
            0 => {}
            child => {
                // As HAProxy: the pid file names the daemon before the
                // command returns, so `sluice -D -p f && cat f` works.
                // The child leaves the file alone: two writers racing on it
                // could make either one fail.
                let code = match pidfile.map(|p| write_pidfile(p, child as u32)) {
                    Some(Err(e)) => {
                        let p = pidfile.map(|p| p.display().to_string()).unwrap_or_default();
                        eprintln!(
                            "{:<10} ({}) : cannot create pidfile {p}: {e}",
                            "[ALERT]",
                            std::process::id()
                        );
                        libc::kill(child, libc::SIGKILL);
                        1
                    }
                    _ => 0,
                };
                libc::_exit(code)
            }
        }
        if libc::setsid() == -1 {
            return Err(std::io::Error::last_os_error());
        }
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if devnull >= 0 {
            libc::dup2(devnull, 0);
            libc::dup2(devnull, 1);
            libc::dup2(devnull, 2);
            if devnull > 2 {
                libc::close(devnull);
            }
        }
    }
    Ok(())
}

/// Writes the pid file whole or not at all (a temporary file renamed over
/// it), so a reader never sees it empty or half written.
pub(crate) fn write_pidfile(path: &std::path::Path, pid: u32) -> std::io::Result<()> {
    // Named after the writer, not the pid written: no two processes ever
    // share a temporary file.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    std::fs::write(&tmp, format!("{pid}\n"))?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

// ---------------------------------------------------------------------------
// Stopping

static STOPPING: AtomicBool = AtomicBool::new(false);
/// Connections waiting for a request register here to be woken by a soft
/// stop. A `Notify` keeps its waiters under a mutex, so one shared by every
/// connection would be a global lock taken per request: waiters are spread
/// over shards, each thread registering on its own one.
static STOP: [Notify; STOP_SHARDS] = [const { Notify::const_new() }; STOP_SHARDS];
const STOP_SHARDS: usize = 16;

thread_local! {
    static STOP_SHARD: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STOP_SHARDS
    };
}

/// Whether a soft stop has begun: listeners are closed, connections finish
/// their current request and close instead of waiting for another.
#[inline]
pub(crate) fn stopping() -> bool {
    STOPPING.load(SeqCst)
}

/// Enters soft stop and wakes every connection waiting for a request.
pub(crate) fn begin_soft_stop() {
    STOPPING.store(true, SeqCst);
    for shard in &STOP {
        shard.notify_waiters();
    }
}

/// Resolves once a soft stop has begun (at once if it already has).
pub(crate) async fn stop_begun() {
    let shard = STOP_SHARD.with(|s| *s);
    let notified = STOP[shard].notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    if stopping() {
        return;
    }
    notified.await;
}

/// What a stop signal asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopKind {
    /// SIGTERM, SIGUSR1: stop accepting, finish what is in flight, exit.
    Soft,
    /// SIGINT: exit now.
    Immediate,
}

/// The stop signals, installed once.
pub(crate) struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
    usr1: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    pub(crate) fn install() -> StopSignals {
        use tokio::signal::unix::{SignalKind, signal};
        StopSignals {
            term: signal(SignalKind::terminate()).ok(),
            usr1: signal(SignalKind::user_defined1()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    /// The next stop signal.
    pub(crate) async fn next(&mut self) -> StopKind {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    if s.recv().await.is_none() {
                        std::future::pending::<()>().await
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.term) => StopKind::Soft,
            _ = recv(&mut self.usr1) => StopKind::Soft,
            _ = recv(&mut self.int) => StopKind::Immediate,
        }
    }
}

// ---------------------------------------------------------------------------
// Privileges, chroot, limits

/// Resolves `user`/`group` names (before a chroot hides /etc/passwd).
pub(crate) fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; it is
    // read at once, before any other passwd call (start-up is
    // single-threaded here).
    unsafe {
        let pw = libc::getpwnam(c.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(((*pw).pw_uid, (*pw).pw_gid))
    }
}

pub(crate) fn lookup_group(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: as in lookup_user.
    unsafe {
        let gr = libc::getgrnam(c.as_ptr());
        if gr.is_null() {
            return None;
        }
        Some((*gr).gr_gid)
    }
}

fn os_err(what: &str) -> std::io::Error {
    let e = std::io::Error::last_os_error();
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// `chroot <dir>`: enters the directory and makes it the root.
pub(crate) fn chroot(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("chroot path contains a NUL byte"))?;
    // SAFETY: plain system calls on a valid C string.
    unsafe {
        if libc::chdir(c.as_ptr()) != 0 {
            return Err(os_err("chdir"));
        }
        if libc::chroot(c.as_ptr()) != 0 {
            return Err(os_err("chroot"));
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            return Err(os_err("chdir /"));
        }
    }
    Ok(())
}

/// Drops to `gid` then `uid` (supplementary groups cleared first). glibc
/// applies set*id to every thread of the process.
pub(crate) fn drop_privileges(uid: Option<u32>, gid: Option<u32>) -> std::io::Result<()> {
    // SAFETY: plain system calls.
    unsafe {
        if let Some(g) = gid {
            if libc::getuid() == 0 && libc::setgroups(0, std::ptr::null()) != 0 {
                return Err(os_err("setgroups"));
            }
            if libc::setgid(g) != 0 {
                return Err(os_err(&format!("setgid({g})")));
            }
        }
        if let Some(u) = uid
            && libc::setuid(u) != 0
        {
            return Err(os_err(&format!("setuid({u})")));
        }
    }
    Ok(())
}

/// `set-dumpable`: the process may dump core after it changed user
/// (PR_SET_DUMPABLE); a failure only loses the cores.
pub(crate) fn set_dumpable() {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
    }
}

/// Raises the soft `RLIMIT_NOFILE` to `want` (up to the hard limit, or
/// past it when privileged). Returns the limit in force afterwards.
pub(crate) fn raise_nofile(want: u64) -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit structure.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(os_err("getrlimit"));
    }
    if lim.rlim_cur >= want {
        return Ok(lim.rlim_cur);
    }
    let wanted = libc::rlimit {
        rlim_cur: want,
        rlim_max: lim.rlim_max.max(want),
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } == 0 {
        return Ok(want);
    }
    // Unprivileged: up to the hard limit.
    let capped = libc::rlimit {
        rlim_cur: want.min(lim.rlim_max),
        rlim_max: lim.rlim_max,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &capped) } != 0 {
        return Err(os_err("setrlimit"));
    }
    Ok(capped.rlim_cur)
}

/// `ulimit-n <n>`: sets the soft `RLIMIT_NOFILE` to exactly `n` (raising
/// the hard limit too when privileged). Returns the limit in force.
pub(crate) fn set_nofile(n: u64) -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit structure.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(os_err("getrlimit"));
    }
    if n > lim.rlim_max {
        return raise_nofile(n);
    }
    let wanted = libc::rlimit {
        rlim_cur: n,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } != 0 {
        return Err(os_err("setrlimit"));
    }
    Ok(n)
}

// ---------------------------------------------------------------------------
// CPU affinity

/// Pins the calling thread to `cpus` (sched_setaffinity on thread 0 = self).
pub(crate) fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for CPU
    // numbers below CPU_SETSIZE (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c, &mut set);
            }
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(os_err("sched_setaffinity"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// systemd notify

/// Sends one `sd_notify` datagram to `$NOTIFY_SOCKET` (a path, or an
/// abstract name starting with `@`), if set. Errors are ignored, as
/// sd_notify callers do.
pub(crate) fn sd_notify(state: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let target = target.to_string_lossy().into_owned();
    let r = if let Some(name) = target.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|a| sock.send_to_addr(state.as_bytes(), &a))
    } else {
        sock.send_to(state.as_bytes(), &target)
    };
    if let Err(e) = r {
        tracing::debug!("sd_notify to {target}: {e}");
    }
}

/// CLOCK_MONOTONIC in microseconds (for `RELOADING=1` + `MONOTONIC_USEC`).
pub(crate) fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

/// Tells systemd a reload begins.
pub(crate) fn notify_reloading() {
    sd_notify(&format!(
        "RELOADING=1\nMONOTONIC_USEC={}\n",
        monotonic_usec()
    ));
}

// ---------------------------------------------------------------------------
// Signalling other processes (-sf / -st)

/// Sends `sig` to each pid; returns the pids that could not be signalled.
pub(crate) fn signal_pids(pids: &[i32], sig: libc::c_int) -> Vec<(i32, std::io::Error)> {
    let mut failed = Vec::new();
    for &p in pids {
        // SAFETY: plain system call.
        if unsafe { libc::kill(p, sig) } != 0 {
            failed.push((p, std::io::Error::last_os_error()));
        }
    }
    failed
}

// ---------------------------------------------------------------------------
// Local peer name (-L)

static LOCAL_PEER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub(crate) fn set_local_peer(name: &str) {
    let _ = LOCAL_PEER.set(name.to_string());
}

/// `-L <name>`, if given.
pub(crate) fn local_peer() -> Option<&'static str> {
    LOCAL_PEER.get().map(String::as_str)
}

// ---------------------------------------------------------------------------
// HAProxy's environment variables

/// Sets the variables HAProxy 2.6 exports before reading its configuration
/// (so `"${HAPROXY_LOCALPEER}"` works in it, and `show env` lists them):
/// `HAPROXY_LOCALPEER` (`-L`, else the host name), `HAPROXY_CFGFILES`
/// (the `-f` arguments, `;`-separated) and `HAPROXY_STARTUP_VERSION`
/// (sluice's version).
///
/// Call it before any thread is started: the environment is not
/// synchronised.
pub(crate) fn export_startup_env(
    files: &[std::path::PathBuf],
    local_peer: Option<&str>,
    version: &str,
) {
    let peer = local_peer.map_or_else(|| hostname().to_string(), str::to_string);
    let files: Vec<String> = files
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    // In HAProxy's order (`show env` lists them so).
    set_env("HAPROXY_STARTUP_VERSION", version);
    set_env("HAPROXY_LOCALPEER", &peer);
    set_env("HAPROXY_CFGFILES", &files.join(";"));
}

/// `HAPROXY_CLI`: the stats sockets' addresses (`unix@<path>`,
/// `ipv4@<addr>:<port>`, ...), `;`-separated, as HAProxy sets it once its
/// configuration is read. Same threading rule as [`export_startup_env`].
pub(crate) fn export_cli_env(addresses: &[String]) {
    if !addresses.is_empty() {
        set_env("HAPROXY_CLI", &addresses.join(";"));
    }
}

fn set_env(key: &str, value: &str) {
    // SAFETY: called from the start-up path before the runtime or any
    // other thread exists (see the callers), so nothing reads the
    // environment concurrently.
    unsafe { std::env::set_var(key, value) };
}

/// The machine's host name, read once (as HAProxy reads it at start;
/// empty if it cannot be read).
pub(crate) fn hostname() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(read_hostname)
}

fn read_hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The signals a running sluice answers besides the stop signals (reload:
/// SIGHUP, SIGUSR2; pause and resume: SIGTTOU, SIGTTIN).
const CONTROL_SIGNALS: [libc::c_int; 4] =
    [libc::SIGHUP, libc::SIGUSR2, libc::SIGTTOU, libc::SIGTTIN];

fn mask_control_signals(how: libc::c_int) {
    // SAFETY: the set is initialised by sigemptyset before use and only
    // passed to the calls that read it; pthread_sigmask changes the
    // calling thread's mask only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in CONTROL_SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Holds the control signals back from the start, before anything is
/// bound: their default actions end (SIGHUP, SIGUSR2) or stop (SIGTTOU,
/// SIGTTIN) the process, and a peer may send one as soon as a socket
/// accepts. Threads started later inherit the mask; the signals wait,
/// pending, until [`release_control_signals`].
pub(crate) fn hold_control_signals() {
    mask_control_signals(libc::SIG_BLOCK);
}

/// Lets the control signals in on this thread, once their handlers are
/// installed; those sent meanwhile arrive now.
pub(crate) fn release_control_signals() {
    mask_control_signals(libc::SIG_UNBLOCK);
}
