//! The reference HAProxy 2.6 (`/usr/sbin/haproxy`), run beside sluice on
//! the same configuration by the differential tests.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::raw::RawBackend;
use super::syslog::Syslog;
use super::{Listen, Response, RunOutput, Sluice, TempDir, inherit, listens, run_sluice, within};

pub const HAPROXY: &str = "/usr/sbin/haproxy";

/// Whether haproxy can be run here. Outside CI a missing haproxy skips the
/// comparison (with a note); under CI (`.ci/run` installs it) it fails.
pub fn available() -> bool {
    if Path::new(HAPROXY).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{HAPROXY} is needed on CI"
    );
    eprintln!("skipped: {HAPROXY} is not installed");
    false
}

/// A running haproxy, killed when dropped.
pub struct Haproxy {
    child: Child,
    _dir: TempDir,
}

impl Haproxy {
    /// Starts haproxy in the foreground on `cfg`, handing it `listens` (its
    /// config binds them as `fd@N`), and waits until it accepts on each.
    pub fn start(tag: &str, cfg: &str, listens: &[&Listen]) -> Haproxy {
        let dir = TempDir::new(tag);
        let path = dir.write("haproxy.cfg", cfg);
        let mut cmd = Command::new(HAPROXY);
        inherit(&mut cmd, listens);
        let mut child = cmd
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn haproxy");
        for l in listens {
            l.wait_accepting(&mut child);
        }
        Haproxy { child, _dir: dir }
    }

    /// The configuration file it reads (its name shows in some replies).
    pub fn config_path(&self) -> String {
        self._dir.join("haproxy.cfg").display().to_string()
    }

    /// `haproxy -c` on `cfg`: its exit code and its stderr.
    pub fn check(tag: &str, cfg: &str) -> (Option<i32>, String) {
        let dir = TempDir::new(tag);
        let path = dir.write("haproxy.cfg", cfg);
        let out = Command::new(HAPROXY)
            .arg("-c")
            .arg("-f")
            .arg(&path)
            .output()
            .expect("run haproxy -c");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The message of the first alert naming a config line (`parsing [f:n] :
/// <message>`), or "(accepted)": what the `-c` differential tests compare.
pub fn first_alert(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("parsing ["))
        .map(|l| l.split_once("] : ").map_or(l, |(_, m)| m).to_string())
        .unwrap_or_else(|| "(accepted)".to_string())
}

/// What follows "parsing [<file>:<line>]" in the first line naming a
/// config line (its ` : ` or tight `: ` kept), or "(accepted)": the file
/// names of two tools' runs differ.
pub fn parsing_message(stderr: &str) -> String {
    stderr
        .lines()
        .find(|l| l.contains("parsing ["))
        .and_then(|l| l.split_once("parsing [")?.1.split_once(']'))
        .map_or_else(|| "(accepted)".to_string(), |(_, m)| m.to_string())
}

/// The first alert after `config : `, its file's path masked (each tool
/// reads its own file: `[<path>:8]` becomes `[cfg:8]`), or "(accepted)".
pub fn first_alert_masked(stderr: &str) -> String {
    let Some(l) = stderr.lines().find(|l| l.contains("[ALERT]")) else {
        return "(accepted)".to_string();
    };
    let m = l.split_once(" : config : ").map_or(l, |(_, m)| m);
    match (m.find("[/"), m.find(']')) {
        (Some(a), Some(b)) if a < b => match m[a..b].rfind(':') {
            Some(c) => format!("{}[cfg{}{}", &m[..a], &m[a + c..b], &m[b..]),
            None => m.to_string(),
        },
        _ => m.to_string(),
    }
}

/// Every alert and warning of a `-c` run, one a line, as
/// [`assert_check_agrees`] compares them: without the pid, the closing
/// lines, the configuration file's name (the two runs' files differ; its
/// line is kept) and temporary directories.
pub fn config_messages(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| l.starts_with("[ALERT]") || l.starts_with("[WARNING]"))
        .filter(|l| !l.contains("Fatal errors") && !l.contains("Error(s) found"))
        .map(|l| {
            let msg = l.split_once(" : config : ").map_or(l, |(_, m)| m);
            match msg.find(':') {
                Some(b) if msg.starts_with("parsing [") => format!("parsing [{}", &msg[b..]),
                _ => strip_dirs(&msg.replace("haproxy.cfg", "F").replace("sluice.cfg", "F")),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The temporary directories of the two runs' files (`/tmp/.../F`) left
/// out.
fn strip_dirs(msg: &str) -> String {
    let mut out = msg.to_string();
    while let Some(i) = out.find("/tmp/") {
        let Some(j) = out[i..].find("/F") else { break };
        out.replace_range(i..i + j + 1, "");
    }
    out
}

/// `haproxy -c` and `sluice -c` on `cfg`: haproxy's exit code and stderr,
/// then sluice's run.
pub fn check_both(tag: &str, cfg: &str) -> ((Option<i32>, String), RunOutput) {
    let hap = Haproxy::check(tag, cfg);
    let dir = TempDir::new(tag);
    let path = dir.write("sluice.cfg", cfg);
    let out = run_sluice(&["-c", "-f", path.to_str().expect("utf-8 path")], None);
    (hap, out)
}

/// `haproxy -c` and `sluice -c` on each configuration of `cases` (a label
/// and the text): both must exit with the same code and give the same
/// message, as `alert` takes it from stderr ([`first_alert`], or a
/// test's own masking). Fails listing every case where they do not.
pub fn assert_check_agrees(
    tag: &str,
    cases: impl IntoIterator<Item = (String, String)>,
    alert: impl Fn(&str) -> String,
) {
    let mut differ = Vec::new();
    for (label, cfg) in cases {
        let ((hcode, herr), out) = check_both(tag, &cfg);
        let (h, s) = (alert(&herr), alert(&out.stderr));
        if hcode != out.code() || h != s {
            differ.push(format!(
                "{label}:\n  haproxy {hcode:?} {h}\n  sluice  {:?} {s}",
                out.code()
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// What differed between haproxy and sluice over a test's cases: every
/// case is compared as it comes, and all that differ are reported at once.
#[derive(Default)]
pub struct Differences(Vec<String>);

impl Differences {
    /// Notes `case` when haproxy's `h` and sluice's `s` differ.
    pub fn compare<T: PartialEq + std::fmt::Debug>(
        &mut self,
        case: impl std::fmt::Display,
        h: &T,
        s: &T,
    ) {
        if h != s {
            self.0
                .push(format!("{case}\n  haproxy {h:?}\n  sluice  {s:?}"));
        }
    }

    /// Notes a difference described by the test itself.
    pub fn push(&mut self, what: String) {
        self.0.push(what);
    }

    /// Fails the test with every difference noted, if any.
    pub fn assert_none(self) {
        assert!(self.0.is_empty(), "{}", self.0.join("\n"));
    }
}

/// How sluice's answer `s` to what `label` names differs from haproxy's
/// `h` (status and body), if it does; haproxy's must be a 200, so a case
/// that haproxy itself refuses cannot pass unseen.
pub fn answer_differs(label: &str, h: &Response, s: &Response) -> Option<String> {
    assert_eq!(h.status, 200, "haproxy on {label}");
    ((s.status, &s.body) != (h.status, &h.body)).then(|| {
        format!(
            "{label}: haproxy {:?}, sluice {} {:?}",
            String::from_utf8_lossy(&h.body),
            s.status,
            String::from_utf8_lossy(&s.body)
        )
    })
}

/// `http-request return` rules answering `[%[<expr>]]` for expression
/// `i` on path `/<i>`, as the sample tests compare them.
pub fn return_rules<S: AsRef<str>>(exprs: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for (i, e) in exprs.into_iter().enumerate() {
        out.push_str(&format!(
            "    http-request return status 200 content-type text/plain lf-string \"[%[{}]]\" if {{ path /{i} }}\n",
            e.as_ref()
        ));
    }
    out
}

/// The answer of each of `fronts` to the HTTP request `req`, each on a
/// new connection.
pub async fn answers_to(fronts: &[Listen], req: &[u8]) -> Vec<Response> {
    let mut got = Vec::new();
    for front in fronts {
        let mut conn = super::HttpConn::connect(front.addr()).await;
        got.push(conn.raw(req, false).await.expect("answer"));
    }
    got
}

/// Sends `req` on a new connection (then shuts its side down when
/// `half_close`: a TCP relay ends when both sides have) and reads until
/// the peer closes.
pub async fn exchange(addr: SocketAddr, req: &[u8], half_close: bool) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(req).await.expect("send");
    if half_close {
        s.shutdown().await.expect("shutdown");
    }
    let mut out = Vec::new();
    within(
        Duration::from_secs(10),
        "the answer",
        s.read_to_end(&mut out),
    )
    .await
    .ok();
    out
}

/// The two ends under test, haproxy's first; each `cfg` gets its own
/// listeners (`{fe0}`, `{fe1}`...), log target (`{log}`) and server
/// (`{srv}`, a raw backend that records what it receives).
pub struct Pair {
    _hap: Haproxy,
    _sl: Sluice,
    pub fronts: [Vec<Listen>; 2],
    pub logs: [Syslog; 2],
    pub servers: [RawBackend; 2],
}

impl Pair {
    /// Both proxies' servers answer `resp` from now on.
    pub fn answer(&self, resp: &[u8]) {
        for s in &self.servers {
            s.answer(resp);
        }
    }

    pub async fn start(tag: &str, cfg: &str, nfronts: usize) -> Pair {
        let fronts = [listens(nfronts), listens(nfronts)];
        let logs = [Syslog::new(), Syslog::new()];
        let servers = [RawBackend::start().await, RawBackend::start().await];
        let text = |i: usize| {
            let mut c = cfg
                .replace("{log}", &logs[i].addr())
                .replace("{srv}", &servers[i].addr.to_string());
            for (n, l) in fronts[i].iter().enumerate() {
                c = c.replace(&format!("{{fe{n}}}"), &l.to_string());
            }
            c
        };
        let refs: Vec<&Listen> = fronts[0].iter().collect();
        let hap = Haproxy::start(tag, &text(0), &refs);
        let sl = Sluice::start(&text(1));
        Pair {
            _hap: hap,
            _sl: sl,
            fronts,
            logs,
            servers,
        }
    }

    /// The answer, the log line and what the server received for `req`
    /// on frontend `n`, from haproxy then from sluice.
    pub async fn both(&self, n: usize, req: &str) -> [(String, String, String); 2] {
        self.both_as(n, req, false).await
    }

    pub async fn both_as(
        &self,
        n: usize,
        req: &str,
        half_close: bool,
    ) -> [(String, String, String); 2] {
        let mut out: [(String, String, String); 2] = Default::default();
        for (i, o) in out.iter_mut().enumerate() {
            let bytes = exchange(self.fronts[i][n].addr(), req.as_bytes(), half_close).await;
            let line = self.logs[i].take(1).remove(0);
            let got = self.servers[i].take();
            *o = (
                String::from_utf8_lossy(&bytes).into_owned(),
                line,
                String::from_utf8_lossy(&got).into_owned(),
            );
        }
        out
    }
}

/// The `global` and `defaults` of the HTTP differential tests: raw log
/// lines to `{log}`, 5 s timeouts.
pub const HTTP_LOG_GLOBAL: &str = "global
    log {log} format raw local0 info
defaults
    mode http
    log global
    # The readiness probe's empty connection is not logged.
    option dontlognull
    timeout connect 5s
    timeout client 5s
    timeout server 5s
";
