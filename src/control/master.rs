//! Master-worker mode (`-W`, `-Ws`, global `master-worker`): a master
//! process that starts the serving process, the worker, and watches it.
//!
//! The worker is sluice as it runs without a master (the same binary, the
//! same arguments), told by its environment that a master owns it: it
//! neither daemonizes nor writes the pid file (the master's pid goes
//! there, as in HAProxy), and it serves an admin CLI on a private UNIX
//! socket the master routes `@<n>` commands and reloads through.
//!
//! A reload (SIGUSR2, SIGHUP or the master CLI's `reload`) is the worker's
//! own reload (`control/reload.rs`), asked for on that socket: the
//! configuration is read again and applied when valid, the listening
//! sockets stay open (no accept gap), requests in flight finish under the
//! generation they started with, keep-alive connections go on with the new
//! one, and counters, health and tables are kept. HAProxy starts a new
//! worker process at each reload instead; sluice starts one only when
//! there is none (the worker died and `no-exit-on-failure` kept the
//! master), or when the executable was replaced since the worker started
//! (a package upgrade): the new worker then takes the listening sockets
//! over from the running one (`-x` on its private socket, which serves
//! `_getsocks`) and tells it to finish (`-sf`), and the replaced worker is
//! an old worker until its connections are done, stopped (SIGINT) once it
//! has survived more reloads than `mworker-max-reloads`.
//!
//! The worker's systemd notifications (`READY=1`, `RELOADING=1`,
//! `STOPPING=1`) reach the master through a private datagram socket given
//! to the worker as its `NOTIFY_SOCKET`; the master learns from them that
//! the worker is ready, and passes them on to systemd (`-Ws`) under its
//! own pid. SIGTERM, SIGINT, SIGUSR1, SIGTTOU and SIGTTIN are passed on to
//! the worker; when it exits the master exits too, with its status, except
//! after `no-exit-on-failure` when the master was not told to stop.

mod cli;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::{mpsc, oneshot};

use crate::config::model::{Config, StatsSocket};
use crate::control::startup::Options;

/// The variable that makes a sluice process a worker: the path of the
/// private CLI socket it serves for its master.
const WORKER_ENV: &str = "SLUICE_MWORKER_CLI";

/// The private CLI socket this process serves for its master, when it is a
/// worker (read once: the environment is only read before threads start).
pub(crate) fn worker_cli() -> Option<&'static Path> {
    static CLI: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    CLI.get_or_init(|| std::env::var_os(WORKER_ENV).map(PathBuf::from))
        .as_deref()
}

/// Whether this process should be a master: master-worker mode is asked
/// for and this process is not already the worker of one.
pub(crate) fn wanted(opts: &Options, cfg: &Config) -> bool {
    worker_cli().is_none() && requested(opts, cfg)
}

/// Master-worker mode is asked for (`-W`, `-Ws`, `master-worker`).
pub(crate) fn requested(opts: &Options, cfg: &Config) -> bool {
    opts.master_worker || opts.systemd || cfg.global.master_worker.is_some()
}

/// Binds the private CLI socket of a worker, before privileges are dropped.
pub(crate) fn bind_worker_cli() -> Option<std::io::Result<std::os::unix::net::UnixListener>> {
    let path = worker_cli()?;
    Some(crate::sys::unix::bind_unix_at(
        path,
        Some(0o600),
        (None, None),
    ))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The processes the master knows, for `show proc`.
#[derive(Debug, Default)]
struct Procs {
    started: u64,
    /// Reloads asked for, and those that failed.
    reloads: u32,
    failed: u32,
    /// Whether the last reload failed (the prompt says so).
    last_failed: bool,
    worker: Option<WorkerInfo>,
    /// Workers a new binary replaced, finishing their connections, with
    /// the reloads each has survived.
    old: Vec<(WorkerInfo, u32)>,
}

#[derive(Debug, Clone)]
struct WorkerInfo {
    pid: u32,
    started: u64,
    /// Its private CLI socket.
    cli: PathBuf,
}

/// What the master CLI asks of the master's loop.
enum Request {
    /// `reload`; answered once it is over.
    Reload(oneshot::Sender<()>),
}

/// State the master CLI sessions read.
struct Shared {
    procs: Mutex<Procs>,
    requests: mpsc::Sender<Request>,
}

impl Shared {
    fn procs(&self) -> std::sync::MutexGuard<'_, Procs> {
        crate::state::lock(&self.procs)
    }
}

/// The master's private directory (worker CLI sockets, notify socket),
/// removed when the master ends.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        sweep_stale();
        let dir = std::env::temp_dir().join(format!("sluice-master.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Scratch(dir))
    }
}

/// Removes the directories of masters that are gone without cleaning up
/// (killed with SIGKILL): those whose pid no longer runs.
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("sluice-master."))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn notice(msg: &str) {
    crate::control::startup::print_line("[NOTICE]", std::process::id(), msg);
}

fn warning(msg: &str) {
    crate::control::startup::print_line("[WARNING]", std::process::id(), msg);
}

fn alert(msg: &str) {
    crate::control::startup::print_line("[ALERT]", std::process::id(), msg);
}

/// Parses the `-S <bind>[,<option>,<value>...]` arguments as the `stats
/// socket` lines they stand for (HAProxy reads them with the bind
/// keywords too), so their addresses and options (`level`, `mode`, `uid`,
/// `gid`, `user`, `group`) are checked by the same code.
fn master_sockets(specs: &[String]) -> Result<Vec<StatsSocket>, String> {
    let mut out = Vec::new();
    for spec in specs {
        let mut words = spec.split(',');
        let addr = words.next().unwrap_or_default();
        let opts: Vec<String> = words.map(crate::config::quote_word).collect();
        // The master CLI is at level admin unless a `level` option says
        // otherwise (the last one is taken).
        let text = format!(
            "global\n    stats socket {} level admin {}\n",
            crate::config::quote_word(addr),
            opts.join(" ")
        );
        let loaded = crate::config::parse_texts(
            &[("-S".to_string(), text)],
            &|v| std::env::var(v).ok(),
            &crate::config::addr::system_resolve,
        );
        let sock = loaded
            .config
            .and_then(|c| c.global.stats_sockets.into_iter().next());
        match sock {
            Some(s) if s.fd.is_none() => out.push(s),
            Some(_) => {
                return Err(format!(
                    "-S '{spec}': fd@ is not supported for the master CLI"
                ));
            }
            None => {
                let why: Vec<String> = loaded
                    .diagnostics
                    .iter()
                    .filter(|d| d.is_alert())
                    .map(|d| d.message.clone())
                    .collect();
                return Err(format!("-S '{spec}': {}", why.join("; ")));
            }
        }
    }
    Ok(out)
}

/// A bound master CLI socket.
enum MasterListener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
}

fn bind_master_socket(sock: &StatsSocket) -> std::io::Result<MasterListener> {
    match sock.tcp {
        Some(addr) => crate::frontend::listener::bind_std(addr, sock.v6, &Default::default())
            .map(MasterListener::Tcp),
        None => crate::control::cli::bind_unix(sock).map(MasterListener::Unix),
    }
}

/// Runs the master: binds the master CLI, daemonizes when asked, starts
/// the worker and watches it. Returns the exit code.
pub(crate) fn run(cfg: &Config, opts: &Options, args: &[String]) -> i32 {
    let socks = match master_sockets(&opts.master_cli) {
        Ok(s) => s,
        Err(e) => {
            alert(&e);
            return 1;
        }
    };
    let mut listeners = Vec::new();
    for s in &socks {
        match bind_master_socket(s) {
            Ok(l) => listeners.push((l, s.level)),
            Err(e) => {
                alert(&format!(
                    "Starting proxy MASTER: cannot bind socket ({}) [{}]",
                    crate::sys::strerror(&e),
                    s.path.display()
                ));
                return 1;
            }
        }
    }
    let daemon = (opts.daemon || cfg.global.daemon) && !opts.systemd;
    let pidfile = opts.pidfile.clone().or(cfg.global.pidfile.clone());
    if daemon && let Err(e) = crate::sys::process::daemonize(pidfile.as_deref()) {
        alert(&format!("cannot go to background: {e}"));
        return 1;
    }
    let pid = std::process::id();
    if let Some(path) = &pidfile
        && !daemon
        && let Err(e) = crate::sys::process::write_pidfile(path, pid)
    {
        alert(&format!("cannot create pidfile {}: {e}", path.display()));
        return 1;
    }
    let code = match Scratch::create() {
        Ok(scratch) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match rt {
                Ok(rt) => {
                    let exit_on_failure = !cfg
                        .global
                        .master_worker
                        .is_some_and(|m| m.no_exit_on_failure);
                    let code = rt.block_on(supervise(Supervise {
                        args: args.to_vec(),
                        scratch: &scratch,
                        listeners,
                        exit_on_failure,
                        max_reloads: cfg.global.mworker_max_reloads,
                    }));
                    rt.shutdown_background();
                    code
                }
                Err(e) => {
                    alert(&format!("cannot start the runtime: {e}"));
                    1
                }
            }
        }
        Err(e) => {
            alert(&format!("cannot create the master's directory: {e}"));
            1
        }
    };
    if let Some(path) = &pidfile
        && std::fs::read_to_string(path).is_ok_and(|t| t.trim() == pid.to_string())
    {
        let _ = std::fs::remove_file(path);
    }
    code
}

struct Supervise<'a> {
    args: Vec<String>,
    scratch: &'a Scratch,
    listeners: Vec<(MasterListener, crate::config::model::CliLevel)>,
    exit_on_failure: bool,
    max_reloads: Option<u32>,
}

/// An old worker's end: its pid and exit status.
type Gone = (u32, std::io::Result<std::process::ExitStatus>);

/// The worker process and what the master knows of it.
struct Worker {
    child: tokio::process::Child,
    info: WorkerInfo,
}

/// The worker's exit status as HAProxy words it: the code (128 + the
/// signal for a killed process) and `Exit` or the signal's name.
fn describe_exit(st: std::process::ExitStatus) -> (i32, String) {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => (c, "Exit".to_string()),
        (None, Some(sig)) => {
            // SAFETY: strsignal returns a pointer to a static or
            // thread-local string, read at once.
            let name = unsafe {
                let p = libc::strsignal(sig);
                if p.is_null() {
                    format!("signal {sig}")
                } else {
                    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            (128 + sig, name)
        }
        (None, None) => (1, "Exit".to_string()),
    }
}

async fn supervise(s: Supervise<'_>) -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let pid = std::process::id();
    let notify_path = s.scratch.0.join("notify.sock");
    let notify = match tokio::net::UnixDatagram::bind(&notify_path) {
        Ok(n) => n,
        Err(e) => {
            alert(&format!("cannot bind the worker notification socket: {e}"));
            return 1;
        }
    };
    let sig = |k: SignalKind| signal(k).ok();
    let mut usr2 = sig(SignalKind::user_defined2());
    let mut hup = sig(SignalKind::hangup());
    let mut forwarded = [
        (libc::SIGTERM, sig(SignalKind::terminate())),
        (libc::SIGINT, sig(SignalKind::interrupt())),
        (libc::SIGUSR1, sig(SignalKind::user_defined1())),
        (libc::SIGTTOU, sig(SignalKind::from_raw(libc::SIGTTOU))),
        (libc::SIGTTIN, sig(SignalKind::from_raw(libc::SIGTTIN))),
    ];
    let (tx, mut requests) = mpsc::channel(8);
    let shared = Arc::new(Shared {
        procs: Mutex::new(Procs {
            started: unix_now(),
            ..Default::default()
        }),
        requests: tx,
    });
    for (l, level) in s.listeners {
        cli::serve(l, level, shared.clone());
    }
    let spawner = Spawner {
        exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
        args: s.args,
        dir: s.scratch.0.clone(),
        notify_path,
        count: 0,
    };
    let mut spawner = spawner;
    let (gone_tx, mut gone) = mpsc::unbounded_channel::<Gone>();
    let mut ctx = ReloadCtx {
        shared: &shared,
        spawner: &mut spawner,
        notify: &notify,
        gone: gone_tx,
        max_reloads: s.max_reloads,
    };
    let mut worker = match ctx.spawner.start(ctx.notify, &[]).await {
        Ok(w) => w,
        Err(code) => return code,
    };
    crate::sys::process::sd_notify(&format!("READY=1\nMAINPID={pid}\n"));
    shared.procs().worker = worker.as_ref().map(|w| w.info.clone());
    let mut stopping = false;
    let mut buf = [0u8; 1024];
    loop {
        let exited = async {
            match worker.as_mut() {
                Some(w) => w.child.wait().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            st = exited => {
                // What the worker sent before it exited (its `STOPPING=1`)
                // is passed on first: the exit may be seen before the
                // datagram's branch is polled.
                while let Ok(n) = notify.try_recv(&mut buf) {
                    relay_notification(&buf[..n], pid);
                }
                let w = worker.take();
                shared.procs().worker = None;
                let wpid = w.map_or(0, |w| w.info.pid);
                let (code, how) = match st {
                    Ok(st) => describe_exit(st),
                    Err(_) => (1, "Exit".to_string()),
                };
                if stopping {
                    warning(&format!("Current worker ({wpid}) exited with code {code} ({how})"));
                    warning("All workers exited. Exiting... (0)");
                    return 0;
                }
                alert(&format!("Current worker ({wpid}) exited with code {code} ({how})"));
                if s.exit_on_failure {
                    alert("exit-on-failure: killing every processes with SIGTERM");
                    warning(&format!("All workers exited. Exiting... ({code})"));
                    return code;
                }
            }
            Some((opid, st)) = gone.recv() => {
                shared.procs().old.retain(|(w, _)| w.pid != opid);
                let (code, how) = match st {
                    Ok(st) => describe_exit(st),
                    Err(_) => (1, "Exit".to_string()),
                };
                warning(&format!("Former worker ({opid}) exited with code {code} ({how})"));
            }
            n = notify.recv(&mut buf) => {
                // The worker's own notifications after start-up: its
                // reloads and stop, passed on under the master's pid.
                if let Ok(n) = n {
                    relay_notification(&buf[..n], pid);
                }
            }
            _ = recv_opt(&mut usr2) => {
                ctx.reload(&mut worker).await;
            }
            _ = recv_opt(&mut hup) => {
                ctx.reload(&mut worker).await;
            }
            Some(Request::Reload(done)) = requests.recv() => {
                ctx.reload(&mut worker).await;
                let _ = done.send(());
            }
            signo = forwarded_signal(&mut forwarded) => {
                if matches!(signo, libc::SIGTERM | libc::SIGINT | libc::SIGUSR1) {
                    if !stopping {
                        warning("Exiting Master process...");
                    }
                    stopping = true;
                    if worker.is_none() {
                        warning("All workers exited. Exiting... (0)");
                        return 0;
                    }
                }
                let mut pids: Vec<i32> = shared.procs().old.iter().map(|(w, _)| w.pid as i32).collect();
                pids.extend(worker.as_ref().map(|w| w.info.pid as i32));
                crate::sys::process::signal_pids(&pids, signo);
            }
        }
    }
}

async fn recv_opt(s: &mut Option<tokio::signal::unix::Signal>) {
    match s {
        Some(s) => {
            if s.recv().await.is_none() {
                std::future::pending::<()>().await
            }
        }
        None => std::future::pending::<()>().await,
    }
}

/// The next of the signals passed on to the worker.
async fn forwarded_signal(
    signals: &mut [(libc::c_int, Option<tokio::signal::unix::Signal>)],
) -> libc::c_int {
    let futs = signals.iter_mut().map(|(n, s)| {
        let n = *n;
        Box::pin(async move {
            recv_opt(s).await;
            n
        })
    });
    futures_select_all(futs).await
}

/// The first of several futures to finish.
async fn futures_select_all<F>(futs: impl Iterator<Item = std::pin::Pin<Box<F>>>) -> F::Output
where
    F: std::future::Future,
{
    let mut futs: Vec<_> = futs.collect();
    std::future::poll_fn(move |cx| {
        for f in futs.iter_mut() {
            if let std::task::Poll::Ready(v) = f.as_mut().poll(cx) {
                return std::task::Poll::Ready(v);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Passes a worker's notification on to systemd, its `MAINPID` the
/// master's (systemd watches the master).
fn relay_notification(msg: &[u8], master: u32) {
    let text = String::from_utf8_lossy(msg);
    let out: String = text
        .lines()
        .map(|l| {
            if l.starts_with("MAINPID=") {
                format!("MAINPID={master}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    crate::sys::process::sd_notify(&out);
}

/// Starts workers: the same binary and arguments, as a worker.
struct Spawner {
    exe: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    notify_path: PathBuf,
    /// Workers started so far (names their CLI sockets).
    count: u32,
}

impl Spawner {
    /// Starts a worker and waits until it is ready (`Ok(Some)`), or until
    /// it exits first (`Err(its exit code)`).
    /// `extra`: arguments after the master's own (a new binary's `-x`
    /// and `-sf`).
    async fn start(
        &mut self,
        notify: &tokio::net::UnixDatagram,
        extra: &[String],
    ) -> Result<Option<Worker>, i32> {
        self.count += 1;
        let cli = self.dir.join(format!("worker.{}.sock", self.count));
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(&self.args)
            .args(extra)
            .env(WORKER_ENV, &cli)
            .env("NOTIFY_SOCKET", &self.notify_path)
            .stdin(std::process::Stdio::null());
        // SAFETY: prctl is async-signal-safe; it only sets the signal the
        // worker gets when the master dies, so that a master killed with
        // SIGKILL leaves no worker serving on its own.
        unsafe {
            cmd.as_std_mut().pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                alert(&format!(
                    "cannot start a worker ({}): {e}",
                    self.exe.display()
                ));
                return Err(1);
            }
        };
        let wpid = child.id().unwrap_or(0);
        notice(&format!("New worker ({wpid}) forked"));
        let mut buf = [0u8; 1024];
        loop {
            tokio::select! {
                st = child.wait() => {
                    let (code, how) = match st {
                        Ok(st) => describe_exit(st),
                        Err(_) => (1, "Exit".to_string()),
                    };
                    alert(&format!("Current worker ({wpid}) exited with code {code} ({how})"));
                    return Err(if code == 0 { 1 } else { code });
                }
                n = notify.recv(&mut buf) => {
                    let Ok(n) = n else { continue };
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if text.lines().any(|l| l == "READY=1") {
                        notice("Loading success.");
                        return Ok(Some(Worker {
                            child,
                            info: WorkerInfo {
                                pid: wpid,
                                started: unix_now(),
                                cli,
                            },
                        }));
                    }
                }
            }
        }
    }
}

/// What a reload works with.
struct ReloadCtx<'a> {
    shared: &'a Shared,
    spawner: &'a mut Spawner,
    notify: &'a tokio::net::UnixDatagram,
    /// Where the old workers' ends are told.
    gone: mpsc::UnboundedSender<Gone>,
    max_reloads: Option<u32>,
}

/// Whether the executable the master starts workers from is no longer the
/// one `pid` runs (a package upgrade replaced it).
fn exe_replaced(exe: &Path, pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (
        std::fs::metadata(exe),
        std::fs::metadata(format!("/proc/{pid}/exe")),
    ) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) != (b.dev(), b.ino()),
        _ => false,
    }
}

impl ReloadCtx<'_> {
    /// A reload: the worker's own, asked for on its CLI socket; a new
    /// worker when there is none, or when the binary was replaced: that
    /// one takes the listening sockets over from the running worker
    /// (`-x`, its private socket) and tells it to finish (`-sf`), which
    /// then shows among the old workers until its connections are done.
    async fn reload(&mut self, worker: &mut Option<Worker>) {
        notice("Reloading sluice");
        let mut respawned = false;
        let ok = match worker {
            Some(w) if exe_replaced(&self.spawner.exe, w.info.pid) => {
                let extra = [
                    "-x".to_string(),
                    w.info.cli.to_string_lossy().into_owned(),
                    "-sf".to_string(),
                    w.info.pid.to_string(),
                ];
                match self.spawner.start(self.notify, &extra).await {
                    Ok(Some(new)) => {
                        respawned = true;
                        if let Some(old) = worker.replace(new) {
                            self.retire(old);
                        }
                        true
                    }
                    _ => false,
                }
            }
            Some(w) => {
                let reply = worker_command(&w.info.cli, "reload").await;
                // The worker's notifications of this reload (RELOADING=1,
                // READY=1) wait in the socket and are passed on by the loop.
                match reply {
                    Ok(r) if r.starts_with("Success=1") => true,
                    Ok(r) => {
                        for line in r.lines().skip(1).filter(|l| !l.is_empty()) {
                            alert(line);
                        }
                        false
                    }
                    Err(e) => {
                        alert(&format!("cannot reach the worker's CLI: {e}"));
                        false
                    }
                }
            }
            None => match self.spawner.start(self.notify, &[]).await {
                Ok(w) => {
                    *worker = w;
                    respawned = true;
                    crate::sys::process::sd_notify("READY=1\n");
                    true
                }
                Err(_) => false,
            },
        };
        // Counted once over, so that `show proc` shows a reload done.
        let mut procs = self.shared.procs();
        procs.reloads += 1;
        procs.worker = worker.as_ref().map(|w| w.info.clone());
        procs.last_failed = !ok;
        if ok {
            if !respawned {
                notice("Loading success.");
            }
            // Old workers have survived one more reload: past
            // `mworker-max-reloads`, they are stopped at once (SIGINT,
            // sluice's immediate stop, where HAProxy's is SIGTERM).
            for (w, n) in procs.old.iter_mut() {
                *n += 1;
                if self.max_reloads.is_some_and(|max| *n > max) {
                    crate::sys::process::signal_pids(&[w.pid as i32], libc::SIGINT);
                }
            }
        } else {
            procs.failed += 1;
            alert("Loading failure!");
        }
    }

    /// Keeps a replaced worker among the old ones until it exits.
    fn retire(&self, old: Worker) {
        let Worker { mut child, info } = old;
        let pid = info.pid;
        self.shared.procs().old.push((info, 0));
        let gone = self.gone.clone();
        tokio::spawn(async move {
            let st = child.wait().await;
            let _ = gone.send((pid, st));
        });
    }
}

/// Sends one command line to a worker's CLI and reads its whole answer.
async fn worker_command(cli: &Path, line: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::UnixStream::connect(cli).await?;
    s.write_all(format!("{line}\n").as_bytes()).await?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).await?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
