//! Master-worker mode (`-W`, `-Ws`, global `master-worker`): the master
//! starts the worker and holds the pid file, passes the stop signals on,
//! exits with the worker's status unless `no-exit-on-failure`, reloads the
//! worker on SIGUSR2 and on the master CLI's `reload` without a failed
//! request and with the counters kept, and its CLI (`-S`) answers `show
//! proc`, `help` and `@<n>`-routed commands as HAProxy 2.6's does.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use support::haproxy::{HAPROXY, assert_check_agrees, available, first_alert};
use support::*;

fn kill(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

fn cfg(listen: &Listen, global: &str, body: &str) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock level admin
{global}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind fd@{}
    http-request return status 200 content-type text/plain string {body}
",
        listen.fd()
    )
}

/// The pid of the worker `show proc` lists (`None` when it lists none).
fn worker_pid(show_proc: &str) -> Option<u32> {
    show_proc
        .lines()
        .skip_while(|l| *l != "# workers")
        .nth(1)
        .filter(|l| !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|p| p.parse().ok())
}

/// The master's `<reloads>` column, e.g. `2 [failed: 1]`.
fn master_reloads(show_proc: &str) -> String {
    let line = show_proc
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("master"))
        .unwrap_or_else(|| panic!("no master row in:\n{show_proc}"));
    line[32..48].trim_end().to_string()
}

fn parent_of(pid: u32) -> u32 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

async fn body_of(addr: SocketAddr) -> String {
    let mut c = HttpConn::connect(addr).await;
    String::from_utf8_lossy(&c.get("/").await.body).into_owned()
}

/// The frontend's `req_tot` in the worker's `show stat`, read through the
/// master CLI.
async fn req_tot(master: &Path) -> u64 {
    let csv = cli(master, "@1 show stat").await;
    let mut lines = csv.lines();
    let head: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let col = head.iter().position(|h| *h == "req_tot").expect("req_tot");
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"fe") && f.get(1) == Some(&"FRONTEND"))
        .and_then(|f| f.get(col)?.parse().ok())
        .unwrap_or_else(|| panic!("no fe FRONTEND row in:\n{csv}"))
}

/// Polls `show proc` until `cond` holds on it (the master reloads on a
/// signal without answering anybody).
async fn proc_until(master: &Path, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    wait_until(Duration::from_secs(10), what, || {
        // The master CLI is bound before the worker starts, but not before
        // the harness sees the worker's sockets.
        let out = match std::os::unix::net::UnixStream::connect(master) {
            Ok(_) => cli_blocking(master, "show proc"),
            Err(_) => String::new(),
        };
        let ok = cond(&out);
        last = out;
        async move { ok }
    })
    .await;
    last
}

/// The worker's pid, once the master lists it (it does once the worker
/// told it it is ready, a moment after its sockets accept).
async fn started(master: &Path) -> u32 {
    let p = proc_until(master, "a worker listed", |p| worker_pid(p).is_some()).await;
    worker_pid(&p).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_starts_the_worker_holds_the_pidfile_and_routes_commands() {
    let l = Listen::new();
    let mut b = Sluice::builder(&cfg(&l, "", "v1"));
    let master = b.dir_path().join("master.sock");
    let pidfile = b.dir_path().join("sluice.pid");
    b = b
        .arg("-W")
        .arg("-S")
        .arg(master.to_str().unwrap())
        .arg("-p")
        .arg(pidfile.to_str().unwrap());
    let s = b.start();
    assert_eq!(body_of(l.addr()).await, "v1");
    let w = started(&master).await;
    assert_eq!(
        std::fs::read_to_string(&pidfile).unwrap().trim(),
        s.pid().to_string(),
        "the pid file holds the master's pid"
    );
    let procs = cli(&master, "show proc").await;
    assert_ne!(w, s.pid());
    assert_eq!(parent_of(w), s.pid(), "the worker is the master's child");
    assert!(
        procs.starts_with(&format!("#<PID>          <type>          <reloads>       <uptime>        <version>      \n{:<15} master          0 [failed: 0]   ", s.pid())),
        "{procs}"
    );
    assert!(procs.ends_with("# programs\n\n"), "{procs}");
    // Routed to the worker: its own answer, its own pid.
    let info = cli(&master, "@1 show info").await;
    assert!(info.contains(&format!("\nPid: {w}\n")), "{info}");
    assert!(info.ends_with("\n\n"));
    assert_eq!(
        cli(&master, &format!("@!{w} show cli level")).await,
        "admin\n\n"
    );
    // At the session's level: lowered in the master, lowered in the worker.
    assert_eq!(cli(&master, "user; @1 show cli level").await, "user\n\n");
    assert_eq!(cli(&master, "user; reload").await, "Permission denied\n\n");
    // A prefix alone routes what follows; `@` comes back to the master.
    let out = cli(&master, "@1; show cli level; @; show proc").await;
    assert!(out.starts_with("admin\n\n#<PID>"), "{out}");
    assert_eq!(
        cli(&master, "@2 show info; show proc").await,
        "Can't find the target PID matching the prefix '@2'\n"
    );
    assert_eq!(
        cli(&master, &format!("@!{} show version", s.pid())).await,
        cli(&master, "show version").await,
        "@!<master pid> is the master"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigusr2_and_cli_reload_apply_the_config_and_keep_the_worker_and_counters() {
    let l = Listen::new();
    let mut b = Sluice::builder(&cfg(&l, "    master-worker", "v1"));
    let master = b.dir_path().join("master.sock");
    b = b.arg("-S").arg(master.to_str().unwrap());
    let s = b.start();
    let w = started(&master).await;
    for _ in 0..3 {
        assert_eq!(body_of(l.addr()).await, "v1");
    }
    std::fs::write(
        &s.cfg,
        cfg(&l, "    master-worker", "v2").replace("@DIR@", s.dir.path().to_str().unwrap()),
    )
    .unwrap();
    kill(s.pid(), "USR2");
    let procs = proc_until(&master, "reload by SIGUSR2", |p| {
        master_reloads(p) == "1 [failed: 0]"
    })
    .await;
    assert_eq!(worker_pid(&procs), Some(w), "reloaded in place");
    assert_eq!(body_of(l.addr()).await, "v2");
    // An invalid configuration: counted as failed, the old one serves on.
    std::fs::write(&s.cfg, "global\n    master-worker bogus\n").unwrap();
    assert_eq!(
        cli(&master, "reload").await,
        "",
        "HAProxy's master says nothing"
    );
    let procs = cli(&master, "show proc").await;
    assert_eq!(master_reloads(&procs), "2 [failed: 1]");
    assert_eq!(worker_pid(&procs), Some(w));
    assert_eq!(body_of(l.addr()).await, "v2");
    assert_eq!(req_tot(&master).await, 5, "counters kept over the reloads");
    assert!(s.stderr().contains("Loading failure!"), "{}", s.stderr());
    // The interactive prompt says the last reload failed.
    assert_eq!(
        cli(&master, "prompt\nquit").await,
        "master[ReloadFailed]> master[ReloadFailed]> "
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_worker_ends_the_master_with_its_status() {
    let l = Listen::new();
    let mut b = Sluice::builder(&cfg(&l, "", "v1"));
    let master = b.dir_path().join("master.sock");
    b = b.arg("-W").arg("-S").arg(master.to_str().unwrap());
    let mut s = b.start();
    let w = started(&master).await;
    kill(w, "KILL");
    let st = s.wait_exit(Duration::from_secs(10)).expect("master exits");
    assert_eq!(st.code(), Some(137), "{}", s.stderr());
    let err = s.stderr();
    assert!(
        err.contains(&format!(
            "Current worker ({w}) exited with code 137 (Killed)"
        )),
        "{err}"
    );
    assert!(err.contains("exit-on-failure: killing every processes with SIGTERM"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_exit_on_failure_keeps_the_master_and_a_reload_starts_a_worker() {
    let l = Listen::new();
    let mut b = Sluice::builder(&cfg(&l, "    master-worker no-exit-on-failure", "v1"));
    let master = b.dir_path().join("master.sock");
    b = b.arg("-S").arg(master.to_str().unwrap());
    let mut s = b.start();
    let w = started(&master).await;
    kill(w, "KILL");
    let procs = proc_until(&master, "the dead worker unlisted", |p| {
        worker_pid(p).is_none()
    })
    .await;
    assert!(procs.contains("# workers\n# programs\n"), "{procs}");
    s.assert_running();
    assert_eq!(cli(&master, "reload").await, "");
    let procs = cli(&master, "show proc").await;
    let w2 = worker_pid(&procs).unwrap_or_else(|| panic!("no new worker:\n{procs}"));
    assert_ne!(w, w2);
    assert_eq!(master_reloads(&procs), "1 [failed: 0]");
    // The master kept the inherited listening socket for its next worker.
    assert_eq!(body_of(l.addr()).await, "v1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_signals_are_passed_on_and_the_pidfile_removed() {
    for sig in ["TERM", "USR1", "INT"] {
        let l = Listen::new();
        let mut b = Sluice::builder(&cfg(&l, "", "v1"));
        let master = b.dir_path().join("master.sock");
        let pidfile = b.dir_path().join("sluice.pid");
        b = b
            .arg("-W")
            .arg("-S")
            .arg(master.to_str().unwrap())
            .arg("-p")
            .arg(pidfile.to_str().unwrap());
        let mut s = b.start();
        let w = started(&master).await;
        kill(s.pid(), sig);
        let st = s.wait_exit(Duration::from_secs(10)).expect("master exits");
        assert_eq!(st.code(), Some(0), "{sig}: {}", s.stderr());
        assert!(
            !Path::new(&format!("/proc/{w}")).exists() || parent_of(w) != s.pid(),
            "{sig}: worker {w} still running"
        );
        assert!(!pidfile.exists(), "{sig}: pid file left behind");
        assert!(
            s.stderr().contains("All workers exited. Exiting... (0)"),
            "{}",
            s.stderr()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn systemd_notify_comes_from_the_master() {
    let l = Listen::new();
    let b = Sluice::builder(&cfg(&l, "", "v1"));
    let sock_path = b.dir_path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let master = b.dir_path().join("master.sock");
    let mut s = b
        .arg("-Ws")
        .arg("-S")
        .arg(master.to_str().unwrap())
        .env("NOTIFY_SOCKET", sock_path.to_str().unwrap())
        .start();
    let recv = || {
        let mut buf = [0u8; 512];
        let n = notify.recv(&mut buf).expect("notify datagram");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert_eq!(recv(), format!("READY=1\nMAINPID={}\n", s.pid()));
    kill(s.pid(), "USR2");
    let reloading = recv();
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    assert_eq!(recv(), "READY=1\n");
    assert_eq!(cli(&master, "reload").await, "");
    assert!(recv().starts_with("RELOADING=1\n"));
    assert_eq!(recv(), "READY=1\n");
    kill(s.pid(), "TERM");
    assert_eq!(recv(), "STOPPING=1\n");
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_mode_leaves_the_master_in_the_pidfile() {
    let l = Listen::new();
    let dir = TempDir::new("mwd");
    let text = cfg(&l, "    master-worker", "v1").replace("@DIR@", dir.path().to_str().unwrap());
    let path = dir.write("sluice.cfg", &text);
    let pidfile = dir.join("sluice.pid");
    let master = dir.join("master.sock");
    let mut cmd = Command::new(bin());
    cmd.args(["-D", "-q", "-f", path.to_str().unwrap(), "-p"])
        .arg(&pidfile)
        .arg("-S")
        .arg(&master)
        .stdin(Stdio::null());
    inherit(&mut cmd, &[&l]);
    let st = cmd.status().expect("run sluice -D");
    assert!(st.success());
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Stopped however the test ends (a pid that is no sluice any more is
    // left alone).
    struct Stop(u32);
    impl Drop for Stop {
        fn drop(&mut self) {
            let exe = std::fs::read_link(format!("/proc/{}/exe", self.0)).unwrap_or_default();
            if exe.to_string_lossy().contains("sluice") {
                let _ = Command::new("kill").arg(self.0.to_string()).status();
            }
        }
    }
    let _stop = Stop(pid);
    let procs = proc_until(&master, "the daemon's worker", |p| worker_pid(p).is_some()).await;
    assert!(procs.contains(&format!("\n{pid:<15} master ")), "{procs}");
    assert_eq!(body_of(l.addr()).await, "v1");
    kill(pid, "TERM");
    wait_until(Duration::from_secs(10), "the daemon's exit", || async {
        !Path::new(&format!("/proc/{pid}")).exists()
    })
    .await;
}

/// Requests in a loop, on keep-alive connections and on new ones, while
/// the master is told to reload (SIGUSR2 and `reload` in turn): none
/// fails, and the worker's counters add up to every request sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reloads_through_the_master_fail_no_request() {
    let l = Listen::new();
    let mut b = Sluice::builder(&cfg(&l, "", "v1"));
    let master = b.dir_path().join("master.sock");
    b = b.arg("-W").arg("-S").arg(master.to_str().unwrap());
    let s = b.start();
    let w = started(&master).await;
    let addr = l.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut tasks = Vec::new();
    for k in 0..4 {
        let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
        let keep_alive = k < 3;
        tasks.push(tokio::spawn(async move {
            let mut conn = HttpConn::connect(addr).await;
            while !stop.load(SeqCst) {
                if !keep_alive {
                    conn = HttpConn::connect(addr).await;
                }
                let r = within(REQ_DEADLINE, "request", conn.send("GET", "/", b"")).await;
                match r {
                    Ok(r) if r.status == 200 => {
                        ok.fetch_add(1, SeqCst);
                    }
                    Ok(r) => failures
                        .lock()
                        .unwrap()
                        .push(format!("status {}", r.status)),
                    Err(e) => failures.lock().unwrap().push(e.to_string()),
                }
                if conn.is_closed() {
                    conn = HttpConn::connect(addr).await;
                }
            }
        }));
    }
    for i in 1..=6u32 {
        // Traffic in between, whatever the machine's speed.
        let floor = ok.load(SeqCst) + 50;
        wait_until(Duration::from_secs(20), "requests between reloads", || {
            let n = ok.load(SeqCst);
            async move { n >= floor }
        })
        .await;
        if i % 2 == 0 {
            assert_eq!(cli(&master, "reload").await, "");
        } else {
            kill(s.pid(), "USR2");
        }
        proc_until(&master, "reload counted", |p| {
            master_reloads(p) == format!("{i} [failed: 0]")
        })
        .await;
    }
    stop.store(true, SeqCst);
    for t in tasks {
        t.await.unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
    eprintln!(
        "{} requests through 6 reloads of the master, none failed",
        ok.load(SeqCst)
    );
    let procs = cli(&master, "show proc").await;
    assert_eq!(worker_pid(&procs), Some(w));
    assert_eq!(req_tot(&master).await, ok.load(SeqCst) as u64);
}

// ---------------------------------------------------------------------------
// Against HAProxy 2.6

/// A master in the foreground (haproxy or sluice) on `cfg`, with its
/// master CLI, killed when dropped.
struct Master {
    child: std::process::Child,
    sock: PathBuf,
    _dir: TempDir,
}

impl Master {
    fn start(bin: &str, cfg: &str, l: &Listen) -> Master {
        let dir = TempDir::new("mwh");
        let path = dir.write("m.cfg", cfg);
        let sock = dir.join("master.sock");
        let mut cmd = Command::new(bin);
        cmd.arg("-W")
            .arg("-S")
            .arg(&sock)
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        inherit(&mut cmd, &[l]);
        let child = cmd.spawn().expect("spawn master");
        let m = Master {
            child,
            sock,
            _dir: dir,
        };
        // Ready once the master lists a worker that accepts.
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < end {
            if std::os::unix::net::UnixStream::connect(&m.sock).is_ok()
                && worker_pid(&mcli(&m.sock, "show proc")).is_some()
            {
                return m;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{bin}: no worker listed by the master CLI");
    }

    fn wait(&mut self) -> Option<i32> {
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < end {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One line to a master CLI, the write side then shut (HAProxy's master
/// waits for more input until it sees the end of the client's), and the
/// whole answer.
fn mcli(path: &Path, line: &str) -> String {
    // HAProxy's master resets connections for a moment after it starts a
    // worker: tried again until it answers.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match try_mcli(path, line) {
            Ok(a) => return a,
            Err(e) if std::time::Instant::now() >= end => {
                panic!("master CLI {}: {line:?}: {e}", path.display())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn try_mcli(path: &Path, line: &str) -> std::io::Result<String> {
    use std::io::{Read as _, Write as _};
    let mut c = std::os::unix::net::UnixStream::connect(path)?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.write_all(format!("{line}\n").as_bytes())?;
    c.shutdown(std::net::Shutdown::Write)?;
    let mut out = Vec::new();
    c.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `show proc` with what must differ masked: the pids (processes of two
/// runs), the uptimes (seconds of two runs) and the version (two programs).
fn mask_proc(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with('#') || l.is_empty() {
                return l.to_string();
            }
            let pid_end = l.find(' ').unwrap_or(l.len());
            let pid = "<pid>".to_string() + &" ".repeat(pid_end.saturating_sub(5));
            // Columns: pid, type, reloads, uptime at 48, version at 64.
            format!("{pid}{}<uptime>         <version>", &l[pid_end..48])
        })
        .map(|l| l + "\n")
        .collect()
}

#[test]
fn master_cli_answers_as_haproxy_does() {
    if !available() {
        return;
    }
    let l = Listen::new();
    let cfg = format!(
        "global\n    mworker-max-reloads 3\ndefaults\n    mode http\n    timeout client 5s\n    timeout server 5s\n    timeout connect 5s\nfrontend fe\n    bind fd@{}\n    http-request return status 200\n",
        l.fd()
    );
    let mut answers = Vec::new();
    for bin in [HAPROXY.to_string(), bin()] {
        let mut m = Master::start(&bin, &cfg, &l);
        let mut a = vec![mask_proc(&mcli(&m.sock, "show proc"))];
        for cmd in [
            "help",
            "@7 show info",
            "@!1 show info",
            "user; show cli level; reload",
            "operator; show cli level",
            "show cli sockets",
            "user; help",
            "operator; help",
        ] {
            a.push(format!("{cmd}: {}", mcli(&m.sock, cmd)));
        }
        let w = worker_pid(&mcli(&m.sock, "show proc")).unwrap();
        // A worker's CLI answer through the master: its `show cli level`.
        a.push(mcli(&m.sock, &format!("@!{w} show cli level")));
        a.push(mcli(&m.sock, "@1 show cli level"));
        // Interactive mode: the prompts name the master, then the worker
        // (its pid masked: two runs).
        let session = mcli(
            &m.sock,
            "prompt\nshow cli level\n@1\nshow cli level\n@\nshow cli level\nquit",
        );
        a.push(session.replace(&format!("{w}> "), "<pid>> "));
        assert_eq!(mcli(&m.sock, "reload"), "");
        // HAProxy's master starts again on a reload: its CLI comes back
        // once it has, with the new worker.
        let end = std::time::Instant::now() + Duration::from_secs(10);
        let procs = loop {
            // Refused or reset while it starts again.
            if let Ok(p) = try_mcli(&m.sock, "show proc")
                && p.contains(" 1 [failed: 0] ")
                && worker_pid(&p).is_some()
            {
                break p;
            }
            assert!(std::time::Instant::now() < end, "{bin}: no reload seen");
            std::thread::sleep(Duration::from_millis(10));
        };
        a.push(mask_proc(&procs));
        // The exit status of a master whose worker was killed.
        let w = worker_pid(&mcli(&m.sock, "show proc")).unwrap();
        kill(w, "KILL");
        a.push(format!("exit: {:?}", m.wait()));
        answers.push(a);
    }
    let (h, s) = (&answers[0], &answers[1]);
    for (i, (h, s)) in h.iter().zip(s).enumerate() {
        assert_eq!(h, s, "answer {i} differs:\nhaproxy:\n{h}\nsluice:\n{s}");
    }
}

#[test]
fn master_worker_keywords_check_as_haproxy_does() {
    if !available() {
        return;
    }
    let tail = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend fe\n    bind 127.0.0.1:0\n";
    let cases = [
        "master-worker",
        "master-worker no-exit-on-failure",
        "master-worker foo",
        "master-worker no-exit-on-failure x",
        "mworker-max-reloads 3",
        "mworker-max-reloads 0",
    ]
    .map(|g| (g.to_string(), format!("global\n    {g}\n{tail}")));
    assert_check_agrees("mwkw", cases, first_alert);
}

/// A reload after the binary was replaced (a package upgrade) starts a
/// worker of the new binary, which takes the listening sockets over from
/// the running one; that one is listed among the old workers while its
/// request finishes, and stopped once it has survived more reloads than
/// `mworker-max-reloads`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_binary_gets_a_new_worker_and_the_old_one_finishes() {
    let be = Backend::start("s1").await;
    let l = Listen::new();
    let dir = TempDir::new("mwup");
    let exe = dir.join("sluice");
    std::fs::copy(bin(), &exe).unwrap();
    let text = format!(
        "global\n    mworker-max-reloads 1\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\nfrontend fe\n    bind fd@{}\n    default_backend be\nbackend be\n    server s1 {}\n",
        l.fd(),
        be.hostport()
    );
    let cfg = dir.write("sluice.cfg", &text);
    let master = dir.join("master.sock");
    let mut cmd = Command::new(&exe);
    cmd.arg("-W")
        .arg("-S")
        .arg(&master)
        .arg("-f")
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    inherit(&mut cmd, &[&l]);
    let _master = Killed(cmd.spawn().expect("spawn sluice -W"));
    let old = started(&master).await;
    // A request held by the server, on the worker about to be replaced.
    be.set_gated(true);
    let addr = l.addr();
    let held = tokio::spawn(async move {
        let mut c = HttpConn::connect(addr).await;
        c.send("GET", "/held", b"").await
    });
    wait_until(Duration::from_secs(10), "the held request", || {
        let n = be.in_flight();
        async move { n == 1 }
    })
    .await;
    // The package manager's way: a new file renamed over the old one.
    let fresh = dir.join("sluice.new");
    std::fs::copy(bin(), &fresh).unwrap();
    std::fs::rename(&fresh, &exe).unwrap();
    assert_eq!(cli(&master, "reload").await, "");
    let procs = cli(&master, "show proc").await;
    let new = worker_pid(&procs).expect("a new worker");
    assert_ne!(new, old, "{procs}");
    assert!(
        procs.contains(&format!("# old workers\n{old:<15} worker          1 ")),
        "{procs}"
    );
    // The new worker serves while the old one finishes.
    be.release(1);
    be.set_gated(false);
    let mut c = HttpConn::connect(addr).await;
    let r = c.get("/new").await;
    assert_eq!(r.status, 200);
    assert_eq!(held.await.unwrap().unwrap().status, 200);
    // The old worker exits once its request is done.
    proc_until(&master, "the old worker gone", |p| {
        !p.contains("# old workers")
    })
    .await;
    let err = std::fs::read_to_string(dir.join("stderr")).unwrap();
    assert!(
        err.contains(&format!("Former worker ({old}) exited with code 0 (Exit)")),
        "{err}"
    );
    // mworker-max-reloads: an old worker past it is stopped.
    be.set_gated(true);
    let held = tokio::spawn(async move {
        let mut c = HttpConn::connect(addr).await;
        c.send("GET", "/held2", b"").await
    });
    wait_until(Duration::from_secs(10), "the second held request", || {
        let n = be.in_flight();
        async move { n == 1 }
    })
    .await;
    let fresh = dir.join("sluice.new");
    std::fs::copy(bin(), &fresh).unwrap();
    std::fs::rename(&fresh, &exe).unwrap();
    assert_eq!(cli(&master, "reload").await, "");
    let procs = cli(&master, "show proc").await;
    // One reload survived (HAProxy counts the one that replaced it), not
    // more than 1: kept; the next one makes it 2.
    assert!(
        procs.contains(&format!("# old workers\n{new:<15} worker          1 ")),
        "{procs}"
    );
    assert_eq!(cli(&master, "reload").await, "");
    proc_until(
        &master,
        "the old worker stopped past mworker-max-reloads",
        |p| !p.contains("# old workers"),
    )
    .await;
    // Its held request was cut, not answered.
    assert!(held.await.unwrap().is_err());
    be.set_gated(false);
    be.release(1);
}

/// A child process killed when dropped, the test passing or not (its
/// workers get SIGTERM from the kernel when their master dies).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
