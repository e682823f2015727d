//! Reload without restart: the `-f` sources are read again, validated as a
//! whole, and only a valid configuration is applied, by compiling a new
//! routing snapshot over the same runtime state and swapping it in.
//!
//! What a reload keeps: listening sockets whose address is unchanged (no
//! accept gap), every counter, health state, slot, queue and pooled
//! connection of servers that keep their backend and name, and every
//! connection in flight (a request finishes under the snapshot it started
//! with; a keep-alive connection picks up the new one at its next request).
//! New addresses are bound before anything changes, so a reload that cannot
//! bind changes nothing; removed addresses stop accepting and their open
//! connections finish.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use tokio::sync::Semaphore;

use crate::config::model::ListenAddr;
use crate::config::{self, model::Config};
use crate::frontend::listener::{self, Binding, ListenerCtl};
use crate::snapshot::Snapshot;
use crate::snapshot::delta::Change;
use crate::snapshot::runtime::Runtime;

/// The outcome of the last reload, for `show info` and `show reload`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReloadReport {
    /// Unix time of the attempt.
    pub(crate) when: u64,
    pub(crate) ok: bool,
    /// The generation serving after the attempt.
    pub(crate) generation: u64,
    /// The list the reload applied, one line each when printed.
    pub(crate) changes: Vec<Change>,
    /// Errors (with file:line) when the reload was refused.
    pub(crate) errors: Vec<String>,
}

pub(crate) struct Supervisor {
    rt: Arc<Runtime>,
    sources: Vec<PathBuf>,
    global_max: Arc<Semaphore>,
    state: tokio::sync::Mutex<Bound>,
    last: Mutex<Option<ReloadReport>>,
    reloads: std::sync::atomic::AtomicU64,
}

/// Listeners and limits currently in force.
#[derive(Default)]
struct Bound {
    listeners: HashMap<ListenAddr, Arc<ListenerCtl>>,
    limits: HashMap<String, (Arc<Semaphore>, u32)>,
    /// `bind ... maxconn`: each listener's own limit and its size.
    listener_limits: HashMap<ListenAddr, (Arc<Semaphore>, u32)>,
}

static SUPERVISOR: OnceLock<Arc<Supervisor>> = OnceLock::new();

/// The running supervisor, if the process serves (not in `-c` mode).
pub(crate) fn supervisor() -> Option<&'static Arc<Supervisor>> {
    SUPERVISOR.get()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Supervisor {
    /// Starts serving `bound` (sockets bound before daemonizing) for the
    /// snapshot already in `rt`.
    pub(crate) fn start(
        rt: Arc<Runtime>,
        sources: Vec<PathBuf>,
        global_max: Arc<Semaphore>,
        bound: Vec<(Arc<str>, ListenAddr, listener::Listening)>,
    ) -> std::io::Result<Arc<Supervisor>> {
        rt.process
            .maxconn_now
            .store(global_max.available_permits() as u32, SeqCst);
        let sup = Arc::new(Supervisor {
            rt,
            sources,
            global_max,
            state: tokio::sync::Mutex::new(Bound::default()),
            last: Mutex::new(None),
            reloads: std::sync::atomic::AtomicU64::new(0),
        });
        {
            let mut st = sup
                .state
                .try_lock()
                .map_err(|_| std::io::Error::other("supervisor busy"))?;
            let snap = sup.rt.snapshot();
            // The rings before the first line is logged to them.
            crate::observe::log::ring_fwd::start(&snap.global.rings);
            let bufs = snap.global.sockbufs;
            crate::upstream::source::set_server_bufs(bufs.rcv_server, bufs.snd_server);
            crate::upstream::check::PP2_NEVER_LOCAL.store(
                snap.global.pp2_never_send_local,
                std::sync::atomic::Ordering::Relaxed,
            );
            crate::observe::log::forward::start(
                &snap.global.log_forwards,
                &snap.global.log.targets,
            );
            for (name, addr, l) in bound {
                let limit = sup.limit_for(&mut st, &snap, &name);
                let own = listener_limit_for(&mut st, &snap, &name, &addr);
                let ctl = listener::spawn(
                    sup.rt.clone(),
                    l,
                    addr.clone(),
                    Binding {
                        frontend: name,
                        limit,
                        own,
                    },
                    sup.global_max.clone(),
                )?;
                st.listeners.insert(addr, ctl);
            }
            crate::upstream::check::spawn_checks(&sup.rt);
            crate::upstream::check::spawn_agents(&sup.rt);
            crate::upstream::dns::spawn_resolvers(&sup.rt);
            crate::peers::spawn(&sup.rt);
            crate::lua::spawn(&sup.rt);
        }
        let _ = SUPERVISOR.set(sup.clone());
        Ok(sup)
    }

    fn limit_for(&self, st: &mut Bound, snap: &Snapshot, frontend: &str) -> Arc<Semaphore> {
        let fe = snap.frontends().find(|f| &*f.name == frontend);
        let maxconn = fe
            .map_or(crate::snapshot::DEFAULT_MAXCONN, |f| f.maxconn)
            .max(1);
        if let Some(f) = fe {
            f.state.maxconn_now.store(maxconn, SeqCst);
        }
        let entry = st
            .limits
            .entry(frontend.to_string())
            .or_insert_with(|| (Arc::new(Semaphore::new(maxconn as usize)), maxconn));
        resize_limit(&entry.0, entry.1, maxconn);
        entry.1 = maxconn;
        entry.0.clone()
    }

    /// `set maxconn frontend <name> <n>` (until the next reload applies
    /// the configuration's). False when a reload holds the listeners.
    pub(crate) fn set_frontend_maxconn(&self, fe: &crate::snapshot::FrontendRt, n: u32) -> bool {
        let Ok(mut st) = self.state.try_lock() else {
            return false;
        };
        let n = n.max(1);
        if let Some(entry) = st.limits.get_mut(&*fe.name) {
            resize_limit(&entry.0, entry.1, n);
            entry.1 = n;
        }
        fe.state.maxconn_now.store(n, SeqCst);
        true
    }

    /// `set maxconn global <n>` (at most the start-up `maxconn`).
    pub(crate) fn set_global_maxconn(&self, n: u32) {
        let n = n.max(1);
        let before = self.rt.process.maxconn_now.swap(n, SeqCst);
        resize_limit(&self.global_max, before, n);
    }

    pub(crate) fn last_report(&self) -> Option<ReloadReport> {
        crate::state::lock(&self.last).clone()
    }

    /// Reads the sources again and applies them if valid. Reloads are
    /// serialised: a second trigger waits for the first to finish.
    pub(crate) async fn reload(&self) -> ReloadReport {
        let mut st = self.state.lock().await;
        crate::sys::process::notify_reloading();
        self.reloads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sources = self.sources.clone();
        let loaded = tokio::task::spawn_blocking(move || config::load(&sources)).await;
        let mut report = ReloadReport {
            when: unix_now(),
            generation: self.rt.snapshot().generation,
            ..Default::default()
        };
        let pid = std::process::id();
        let loaded = match loaded {
            Ok(l) => l,
            Err(e) => {
                report.errors.push(format!("reload task failed: {e}"));
                return self.finish(report);
            }
        };
        let Some(cfg) = loaded.config else {
            report.errors = loaded
                .diagnostics
                .iter()
                .filter(|d| d.is_alert())
                .map(|d| d.render(pid))
                .collect();
            return self.finish(report);
        };
        for d in &loaded.diagnostics {
            tracing::warn!("{}", d.render(pid));
        }
        // Bind what is new before changing anything.
        let mut fresh: Vec<(Arc<str>, ListenAddr, listener::Listening)> = Vec::new();
        for (name, addr, v6, unix, sock) in binds(&cfg) {
            // A listener whose `v6only`/`v4v6` changed is bound again: the
            // option cannot change on a bound socket. A UNIX one is kept
            // as it is (its file's mode and owner included).
            let kept = st.listeners.get(&addr).is_some_and(|c| match addr.ip() {
                Some(ip) => v6.is_none_or(|v6| listener::v6_matches(c.raw_fd(), ip, v6)),
                None => true,
            });
            if kept || fresh.iter().any(|(_, a, _)| *a == addr) {
                // The socket options of the new configuration, on the
                // socket it keeps.
                if let (Some(c), true) = (st.listeners.get(&addr), addr.ip().is_some())
                    && let Err(e) = listener::set_bind_options(c.raw_fd(), sock, false)
                {
                    report.errors.push(format!(
                        "Starting frontend {name}: cannot set socket options ({e}) [{addr}]"
                    ));
                    return self.finish(report);
                }
                continue;
            }
            let got = match (unix, addr.ip()) {
                (Some(u), _) => listener::bind_unix(u).map(listener::Listening::Unix),
                (None, Some(ip)) => listener::bind_std(ip, v6.unwrap_or_default(), sock)
                    .and_then(|l| {
                        listener::set_bind_options(
                            std::os::fd::AsRawFd::as_raw_fd(&l),
                            sock,
                            true,
                        )?;
                        Ok(l)
                    })
                    .map(listener::Listening::Tcp),
                (None, None) => continue,
            };
            match got {
                Ok(l) => fresh.push((name, addr, l)),
                Err(e) => {
                    report.errors.push(format!(
                        "Starting frontend {name}: cannot bind socket ({e}) [{addr}]"
                    ));
                    return self.finish(report);
                }
            }
        }
        // Compile (pure), apply the state changes, then publish: the state
        // the new snapshot points at exists, configured, before any request
        // can load it, and removed servers are retired by then. The same
        // list is what `show reload` prints.
        let generation = self.rt.snapshot().generation + 1;
        let wanted: HashMap<ListenAddr, Arc<str>> = binds(&cfg)
            .into_iter()
            .map(|(n, a, _, _, _)| (a, n))
            .collect();
        let (new, mut changes) = self.rt.publish_reload(cfg, generation);
        dispatch_queues(&new);
        if let Some(after) = new.global.hard_stop_after {
            expire_generations_below(new.generation, after);
        }
        report.generation = new.generation;
        report.ok = true;

        // Listeners: keep, rebind to another frontend, open, or stop.
        let mut listeners = Vec::new();
        let current: Vec<ListenAddr> = st.listeners.keys().cloned().collect();
        for addr in current {
            let replaced = fresh.iter().any(|(_, a, _)| *a == addr);
            match wanted.get(&addr).filter(|_| !replaced) {
                Some(name) => {
                    let limit = self.limit_for(&mut st, &new, name);
                    let own = listener_limit_for(&mut st, &new, name, &addr);
                    if let Some(ctl) = st.listeners.get(&addr) {
                        ctl.rebind(Binding {
                            frontend: name.clone(),
                            limit,
                            own,
                        });
                    }
                }
                None => {
                    if let Some(ctl) = st.listeners.remove(&addr) {
                        if replaced {
                            ctl.retire();
                        } else {
                            ctl.stop();
                        }
                        if !replaced {
                            listeners.push(Change::ListenerClosed { addr });
                        }
                    }
                }
            }
        }
        for (name, addr, l) in fresh {
            let limit = self.limit_for(&mut st, &new, &name);
            let own = listener_limit_for(&mut st, &new, &name, &addr);
            match listener::spawn(
                self.rt.clone(),
                l,
                addr.clone(),
                Binding {
                    frontend: name.clone(),
                    limit,
                    own,
                },
                self.global_max.clone(),
            ) {
                Ok(ctl) => {
                    st.listeners.insert(addr.clone(), ctl);
                    listeners.push(Change::ListenerOpened {
                        addr,
                        frontend: name,
                    });
                }
                Err(e) => report.errors.push(format!("frontend {name}: {e} [{addr}]")),
            }
        }
        crate::upstream::check::spawn_checks(&self.rt);
        crate::upstream::check::spawn_agents(&self.rt);
        crate::upstream::dns::spawn_resolvers(&self.rt);
        crate::peers::spawn(&self.rt);
        {
            let snap = self.rt.snapshot();
            crate::observe::log::ring_fwd::start(&snap.global.rings);
            let bufs = snap.global.sockbufs;
            crate::upstream::source::set_server_bufs(bufs.rcv_server, bufs.snd_server);
            crate::upstream::check::PP2_NEVER_LOCAL.store(
                snap.global.pp2_never_send_local,
                std::sync::atomic::Ordering::Relaxed,
            );
            crate::observe::log::forward::start(
                &snap.global.log_forwards,
                &snap.global.log.targets,
            );
        }
        crate::lua::spawn(&self.rt);
        // The listeners with the configuration's changes, before the state's.
        let at = changes
            .iter()
            .position(|c| c.state().is_some())
            .unwrap_or(changes.len());
        changes.splice(at..at, listeners);
        report.changes = changes;
        self.finish(report)
    }

    /// Soft stop: every listener stops accepting (their sockets close) and
    /// no reload can open new ones.
    pub(crate) async fn stop_listening(&self) {
        let mut st = self.state.lock().await;
        for (_, ctl) in st.listeners.drain() {
            ctl.stop();
        }
        // Keep the lock held for good: a reload after this would bind again.
        std::mem::forget(st);
    }

    /// Copies of the listening sockets in service, for a new process that
    /// takes them over (`-x`): address, frontend and a duplicated
    /// descriptor (closed when dropped).
    pub(crate) async fn listener_dups(&self) -> Vec<(ListenAddr, Arc<str>, std::os::fd::OwnedFd)> {
        use std::os::fd::BorrowedFd;
        let st = self.state.lock().await;
        st.listeners
            .values()
            .filter_map(|c| {
                // SAFETY: the accept loop owns the socket and only closes
                // it after stop(), which needs the lock held here.
                let fd = unsafe { BorrowedFd::borrow_raw(c.raw_fd()) };
                Some((
                    c.addr().clone(),
                    c.frontend(),
                    fd.try_clone_to_owned().ok()?,
                ))
            })
            .collect()
    }

    fn finish(&self, report: ReloadReport) -> ReloadReport {
        // systemd: the reload is over, whatever its outcome.
        crate::sys::process::sd_notify("READY=1\n");
        if report.ok {
            tracing::info!(
                "Reload complete: generation {} ({} change(s)).",
                report.generation,
                report.changes.len()
            );
        } else {
            for e in &report.errors {
                tracing::error!("{e}");
            }
            tracing::error!("Reload refused: the running configuration is unchanged.");
        }
        self.rt.process.note_reload(report.when, report.ok);
        *crate::state::lock(&self.last) = Some(report.clone());
        report
    }
}

/// Queued requests go to the servers of the new snapshot that have room
/// (new servers, raised limits).
fn dispatch_queues(new: &Snapshot) {
    for be in new.backends() {
        for s in &be.servers {
            crate::state::Queue::dispatch_to(&s.state, &be.state);
        }
    }
}

/// After `after`, cuts the requests still running under generations
/// below `generation` (`hard-stop-after` after the reload that replaced
/// them).
fn expire_generations_below(generation: u64, after: std::time::Duration) {
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        crate::state::generation::expire_below(generation);
    });
}

/// A frontend's listening address, with the `v6only`/`v4v6` choice of it
/// (`None` for an inherited socket, kept as it came), and what a UNIX one
/// is bound with.
type WantedBind<'c> = (
    Arc<str>,
    ListenAddr,
    Option<crate::config::model::BindV6>,
    Option<&'c crate::config::model::UnixBind>,
    &'c crate::config::model::BindSock,
);

/// The frontends' addresses.
fn binds(cfg: &Config) -> Vec<WantedBind<'_>> {
    cfg.proxies
        .iter()
        .filter(|p| p.kind.has_frontend() && !p.disabled)
        .flat_map(|p| {
            let name: Arc<str> = Arc::from(p.name.as_str());
            // An inherited socket (`fd@n`) stands for the address it was
            // found listening on at start: a reload keeps it, never
            // re-binds it.
            p.binds
                .iter()
                .flat_map(|b| {
                    let addrs: Vec<ListenAddr> = match (&b.unix, b.fd) {
                        (Some(u), _) => vec![ListenAddr::Unix(u.name.clone())],
                        (None, Some(fd)) => {
                            crate::state::inherited::addr_of(fd).into_iter().collect()
                        }
                        (None, None) => b.addrs.iter().copied().map(ListenAddr::Ip).collect(),
                    };
                    let v6 = b.fd.is_none().then_some(b.v6);
                    let unix = b.unix.as_ref();
                    let sock = &b.sock;
                    addrs.into_iter().map(move |a| (a, v6, unix, sock))
                })
                .map(move |(a, v6, unix, sock)| (name.clone(), a, v6, unix, sock))
        })
        .collect()
}

/// The signals a running process answers besides the stop signals:
/// SIGHUP and SIGUSR2 reload, SIGTTOU pauses every listener and SIGTTIN
/// resumes them (HAProxy's signals for handing ports to another process and
/// taking them back). Installed before anything is bound, so that a signal
/// sent as soon as sluice accepts is never met by its default action
/// (SIGUSR2's ends the process).
pub(crate) struct ControlSignals {
    hup: tokio::signal::unix::Signal,
    usr2: tokio::signal::unix::Signal,
    ttou: tokio::signal::unix::Signal,
    ttin: tokio::signal::unix::Signal,
}

impl ControlSignals {
    pub(crate) fn install() -> std::io::Result<ControlSignals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(ControlSignals {
            hup: signal(SignalKind::hangup())?,
            usr2: signal(SignalKind::user_defined2())?,
            ttou: signal(SignalKind::from_raw(libc::SIGTTOU))?,
            ttin: signal(SignalKind::from_raw(libc::SIGTTIN))?,
        })
    }

    /// Serves the signals for `sup` until the process ends.
    pub(crate) fn serve(self, sup: Arc<Supervisor>) {
        let ControlSignals {
            mut hup,
            mut usr2,
            mut ttou,
            mut ttin,
        } = self;
        let reloads = sup.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = hup.recv() => {}
                    _ = usr2.recv() => {}
                }
                reloads.reload().await;
            }
        });
        tokio::spawn(async move {
            loop {
                let pause = tokio::select! {
                    _ = ttou.recv() => true,
                    _ = ttin.recv() => false,
                };
                let st = sup.state.lock().await;
                for ctl in st.listeners.values() {
                    if pause {
                        ctl.pause();
                    } else {
                        ctl.resume();
                    }
                }
            }
        });
    }
}

/// Lets scripts pause, resume and stop a frontend's listeners
/// (`Proxy:pause()`, `resume()`, `stop()`), as SIGTTOU and SIGTTIN pause
/// and resume them all. A stopped listener leaves the supervisor's set
/// (its socket closes); a reload binds its address again.
pub(crate) fn serve_scripts(sup: &Arc<Supervisor>) {
    let sup = sup.clone();
    crate::lua::set_listener_ops(Box::new(move |frontend, op| {
        use crate::lua::ListenerOp;
        let frontend = frontend.to_string();
        let act = move |st: &mut Bound| {
            let mine: Vec<ListenAddr> = st
                .listeners
                .iter()
                .filter(|(_, c)| *c.frontend() == *frontend)
                .map(|(a, _)| a.clone())
                .collect();
            for addr in mine {
                match op {
                    ListenerOp::Pause | ListenerOp::Resume => {
                        if let Some(ctl) = st.listeners.get(&addr) {
                            ctl.set_paused(op == ListenerOp::Pause);
                        }
                    }
                    ListenerOp::Stop => {
                        if let Some(ctl) = st.listeners.remove(&addr) {
                            ctl.stop();
                        }
                    }
                }
            }
        };
        // At once, unless a reload holds the set: then once it is done.
        match sup.state.try_lock() {
            Ok(mut st) => act(&mut st),
            Err(_) => {
                let sup = sup.clone();
                tokio::spawn(async move { act(&mut *sup.state.lock().await) });
            }
        }
    }));
}

/// The limit of the listener on `addr` of `frontend` (`bind ... maxconn`),
/// kept across reloads as the frontends' are (resized in place); None when
/// its line has none.
fn listener_limit_for(
    st: &mut Bound,
    snap: &Snapshot,
    frontend: &str,
    addr: &ListenAddr,
) -> Option<Arc<Semaphore>> {
    let max = snap
        .frontends()
        .find(|f| &*f.name == frontend)
        .and_then(|f| f.bind_maxconn.iter().find(|(a, _)| a == addr))
        .map(|(_, n)| (*n).max(1));
    let Some(max) = max else {
        st.listener_limits.remove(addr);
        return None;
    };
    let entry = st
        .listener_limits
        .entry(addr.clone())
        .or_insert_with(|| (Arc::new(Semaphore::new(max as usize)), max));
    resize_limit(&entry.0, entry.1, max);
    entry.1 = max;
    Some(entry.0.clone())
}

/// Changes a connection limit in place: connections holding permits keep
/// them. Lowering takes the permits that are free now, and the rest as
/// connections close (new ones wait meanwhile), so the new limit holds
/// once the excess has drained.
fn resize_limit(sem: &Arc<Semaphore>, from: u32, to: u32) {
    if to > from {
        sem.add_permits((to - from) as usize);
    } else if from > to {
        let want = (from - to) as usize;
        let got = sem.forget_permits(want);
        if got < want {
            let sem = sem.clone();
            let rest = (want - got) as u32;
            tokio::spawn(async move {
                if let Ok(p) = sem.acquire_many_owned(rest).await {
                    p.forget();
                }
            });
        }
    }
}

/// The text of `show reload`.
pub(crate) fn render_report(r: Option<&ReloadReport>, generation: u64) -> String {
    let Some(r) = r else {
        return format!("generation: {generation}\nlast reload: none\n");
    };
    let mut s = format!(
        "generation: {}\nlast reload: {} ({})\n",
        r.generation,
        if r.ok { "success" } else { "failed" },
        r.when
    );
    for c in &r.changes {
        s.push_str(&format!("  {c}\n"));
    }
    for e in &r.errors {
        s.push_str(&format!("  error: {}\n", e.trim_end()));
    }
    s
}
