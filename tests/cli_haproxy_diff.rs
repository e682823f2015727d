//! The runtime API side by side with the real HAProxy 2.6: the same config
//! is run by `/usr/sbin/haproxy` and by sluice, the same command script is
//! sent to both through `socat` (as operators do), and the replies are
//! compared: exactly where they are deterministic, by shape (header lines,
//! field names and order, types, empty or filled cells, empty-line framing)
//! where values legitimately differ. Every masked value and every other
//! difference is listed in [`INTENDED_DIFFERENCES`] with its reason.
//!
//! Required when `CI` is set (`.ci/run` installs haproxy and socat);
//! skipped with a message otherwise.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;
use support::*;

const HAPROXY: &str = "/usr/sbin/haproxy";

/// Where sluice answers differently from HAProxy 2.6.12 on purpose; the
/// comparisons below mask exactly these and nothing else.
pub const INTENDED_DIFFERENCES: &[(&str, &str)] = &[
    (
        "help",
        "lists the commands sluice implements (each line as HAProxy prints it, in HAProxy's order) plus sluice's own `reload` and `show reload`; HAProxy lists ~100 commands",
    ),
    (
        "help <x>, unknown commands",
        "the same headers; the list of close commands is picked among sluice's commands",
    ),
    (
        "show info Name, Version, Release_date, Build info; show version",
        "sluice's own name and version",
    ),
    (
        "show info Ulimit-n, Maxsock",
        "sluice raises the fd limit to its own figure (HAProxy derives it from maxconn)",
    ),
    (
        "show info Tasks, Jobs, Run_queue, Idle_pct, PoolAlloc/PoolUsed, TotalBytesOut, BytesOutRate",
        "engine internals: Tasks and Run_queue are tokio's (live tasks, global queue depth) instead of HAProxy's scheduler; Idle_pct is a lifetime average from getrusage where HAProxy measures the last second; no memory pools; HAProxy's byte figures also count the CLI's own output",
    ),
    (
        "show info Generation, Last_reload_sec, Last_reload_status",
        "3 keys appended after HAProxy's list, for sluice's in-process reload",
    ),
    (
        "show stat need_conn_est",
        "HAProxy's estimate of needed idle connections also counts health-check connections; sluice reports its pool's need from traffic only",
    ),
    (
        "show sess",
        "same line layout and keys; the buffer/flag/fd values are HAProxy internals sluice fills with neutral values",
    ),
    (
        "show sess all",
        "prints the first lines of HAProxy's detailed dump for the proxied streams only, not for the CLI's own stream; with no traffic in flight the reply is empty (the framing is compared)",
    ),
    ("show env HAPROXY_STARTUP_VERSION", "sluice's version"),
    (
        "set weight / set server .. weight",
        "round robin restarts its cycle with the new weights (3:1 gives s1 s1 s1 s2 at once); HAProxy moves the server within its current cycle; the shares are the same",
    ),
    (
        "set server .. check-addr|check-port",
        "'not supported by sluice yet' (HAProxy applies them silently)",
    ),
    (
        "show stat/info desc, float",
        "accepted, no descriptions appended",
    ),
    (
        "default FRONTEND slim",
        "without `maxconn`, sluice's default is 4096, HAProxy's is derived from the fd limit (the config below sets `maxconn`)",
    ),
    (
        "show stat smax",
        "compared as filled: the readiness probe (a connection opened and closed before the test's traffic) overlaps the first request or not, depending on timing, in both proxies",
    ),
    (
        "BACKEND h1_* columns",
        "the server side of HAProxy's h1 module (connections to the servers, requests and bytes sent and received) is not tracked: the cells stay 0; the FRONTEND ones are filled",
    ),
    (
        "show stat bin, bout",
        "sluice counts the bytes on the wire; HAProxy 2.6 counts its internal HTX sizes (296 for the 268 bytes of 4 small GETs); its FRONTEND h1_bytes_in/out count the wire bytes, and sluice's equal them",
    ),
];

const CFG: &str = "global
    maxconn 1000
    stats socket @DIR@/admin.sock mode 600 level admin
    stats socket @DIR@/oper.sock mode 600 level operator
    stats socket @DIR@/user.sock mode 600 level user

defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s

frontend web_fe
    bind @BIND@
    default_backend web_be

backend web_be
    balance roundrobin
    server s1 @S1@
    server s2 @S2@ check inter 1h

# srv_use_ssl of `show servers state`: 0 when nothing is said, 1 for
# `ssl`, -1 for `no-ssl` (also inherited from `default-server`).
backend tls_be
    server plain 127.0.0.1:9
    server on 127.0.0.1:9 ssl verify none
    server off 127.0.0.1:9 ssl verify none no-ssl

backend tls_inherited
    default-server no-ssl
    server off 127.0.0.1:9
    server on 127.0.0.1:9 ssl verify none
";

/// One proxy process (haproxy or sluice) with its private directory.
struct Daemon {
    child: Child,
    dir: TempDir,
    port: u16,
    /// The frontend's socket, handed to the process as `fd@N`: HAProxy
    /// and sluice adopt the same kind of socket.
    _fe: Listen,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    fn start(bin: &str, s1: &str, s2: &str) -> Daemon {
        let dir = TempDir::new("diff");
        let fe = Listen::new();
        let port = fe.port();
        let cfg = CFG
            .replace("@DIR@", dir.path().to_str().unwrap())
            .replace("@BIND@", &fe.to_string())
            .replace("@S1@", s1)
            .replace("@S2@", s2);
        let path = dir.write("c.cfg", &cfg);
        // The same small environment for both, so `show env` can be compared.
        let mut cmd = Command::new(bin);
        inherit(&mut cmd, &[&fe]);
        let child = cmd
            .arg("-f")
            .arg(&path)
            .arg("-db")
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("DIFF_MARK", "x")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {bin}: {e}"));
        let d = Daemon {
            child,
            dir,
            port,
            _fe: fe,
        };
        let end = Instant::now() + START_DEADLINE;
        for s in ["admin", "oper", "user"] {
            while std::os::unix::net::UnixStream::connect(d.sock(s)).is_err() {
                assert!(Instant::now() < end, "{bin} did not open its stats sockets");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        d
    }

    fn sock(&self, level: &str) -> PathBuf {
        self.dir.join(&format!("{level}.sock"))
    }
}

/// `printf '<input>' | socat - unix-connect:<sock>`.
fn socat_in(sock: &Path, input: &str) -> String {
    let mut child = Command::new("socat")
        .arg("-")
        .arg(format!("unix-connect:{}", sock.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn socat");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// How two replies are compared.
#[derive(Clone, Copy, Debug)]
enum Cmp {
    Exact,
    /// `show stat`: header, rows, cells (masked columns: filled or empty).
    Csv,
    /// `show stat typed` / `show info typed` (and json, turned into typed).
    Typed,
    Json,
    /// `show info`: keys in order, values but the masked ones.
    Info,
    ServersState,
    Sess,
    /// `show errors`: the capture date masked.
    Errors,
    Help,
    /// Unknown command replies: the header line and the framing.
    FirstLine,
    /// `show env`: the same variables in the same order, paths and the
    /// startup version masked.
    Env,
    /// Only the empty-line framing.
    Framing,
}

/// Cells that change with time or are intended differences: compared as
/// empty or filled only.
const VOLATILE_STAT: &[&str] = &[
    // The FRONTEND's counts the readiness probe's connection when the
    // first request arrives before the probe's close was read (timing).
    "smax",
    "lastchg",
    "downtime",
    "rate",
    "rate_max",
    "req_rate",
    "req_rate_max",
    "conn_rate",
    "conn_rate_max",
    "lastsess",
    "last_chk",
    "check_duration",
    "qtime",
    "ctime",
    "rtime",
    "ttime",
    "qtime_max",
    "ctime_max",
    "rtime_max",
    "ttime_max",
    "need_conn_est",
    "idle_conn_cur",
    "safe_conn_cur",
    "used_conn_cur",
    "bin",
    "bout",
];

const VOLATILE_INFO: &[&str] = &[
    "Name",
    "Version",
    "Release_date",
    "Build info",
    "Pid",
    "Uptime",
    "Uptime_sec",
    "Start_time_sec",
    "Ulimit-n",
    "Maxsock",
    "Tasks",
    "Jobs",
    "Run_queue",
    "Idle_pct",
    "PoolAlloc_MB",
    "PoolUsed_MB",
    "PoolAlloc_bytes",
    "PoolUsed_bytes",
    "TotalBytesOut",
    "BytesOutRate",
    "CumConns",
    "CumReq",
    "ConnRate",
    "MaxConnRate",
    "SessRate",
    "MaxSessRate",
];

const SLUICE_ONLY_INFO: &[&str] = &["Generation", "Last_reload_sec", "Last_reload_status"];

/// The commands, in order, with the socket level they are sent at. They
/// change state, so both processes see exactly the same sequence.
fn script() -> Vec<(&'static str, &'static str, Cmp)> {
    use Cmp::*;
    vec![
        ("admin", "help\n", Help),
        ("admin", "show backend\n", Exact),
        ("admin", "show servers state\n", ServersState),
        ("admin", "show servers state web_be\n", ServersState),
        ("admin", "show servers state nosuch\n", Exact),
        ("admin", "show servers state tls_be\n", ServersState),
        ("admin", "show stat\n", Csv),
        ("admin", "show stat typed\n", Typed),
        ("admin", "show stat json\n", Json),
        ("admin", "show stat 3 -1 -1\n", Csv),
        ("admin", "show stat nosuch 1 -1\n", Exact),
        ("admin", "show info\n", Info),
        ("admin", "show info typed\n", Typed),
        ("admin", "show info json\n", Json),
        ("admin", "show errors\n", Errors),
        ("admin", "show errors web_fe request\n", Errors),
        ("admin", "show errors nosuch\n", Exact),
        ("admin", "show sess\n", Sess),
        ("admin", "show sess all\n", Framing),
        ("admin", "show env\n", Env),
        ("admin", "show env DIFF_MARK\n", Exact),
        ("admin", "show env NOPE\n", Exact),
        ("admin", "get weight web_be/s1\n", Exact),
        ("admin", "set weight web_be/s1 3\n", Exact),
        ("admin", "get weight web_be/s1\n", Exact),
        ("admin", "set weight web_be/s1 300\n", Exact),
        ("admin", "set weight web_be/s1 50%\n", Exact),
        ("admin", "get weight web_be/s1\n", Exact),
        ("admin", "get weight nosuch/s1\n", Exact),
        ("admin", "get weight web_be/nosuch\n", Exact),
        ("admin", "get weight web_be\n", Exact),
        ("admin", "disable server web_be/s1\n", Exact),
        ("admin", "show servers state web_be\n", ServersState),
        ("admin", "show stat\n", Csv),
        ("admin", "enable server web_be/s1\n", Exact),
        ("admin", "disable server web_be\n", Exact),
        ("admin", "set server web_be/s1 state drain\n", Exact),
        ("admin", "show stat\n", Csv),
        ("admin", "set server web_be/s1 state maint\n", Exact),
        ("admin", "show servers state web_be\n", ServersState),
        ("admin", "set server web_be/s1 state ready\n", Exact),
        ("admin", "set server web_be/s1 state bogus\n", Exact),
        ("admin", "set server web_be/s1 weight 2\n", Exact),
        ("admin", "set server web_be/s1 weight 2000\n", Exact),
        ("admin", "set server web_be/s1\n", Exact),
        ("admin", "set server web_be/s2 addr 127.0.0.1\n", Exact),
        ("admin", "set server web_be/nosuch weight 1\n", Exact),
        ("admin", "disable health web_be/s2\n", Exact),
        ("admin", "show servers state web_be\n", ServersState),
        ("admin", "enable health web_be/s2\n", Exact),
        ("admin", "disable health web_be/s1\n", Exact),
        ("admin", "shutdown sessions server web_be/s1\n", Exact),
        ("admin", "shutdown sessions server web_be/nosuch\n", Exact),
        ("admin", "shutdown sessions server web_be\n", Exact),
        ("admin", "clear counters\n", Exact),
        ("admin", "show stat\n", Csv),
        ("admin", "clear counters all\n", Exact),
        ("admin", "show stat\n", Csv),
        ("admin", "set maxconn frontend web_fe 100\n", Exact),
        ("admin", "set maxconn frontend nosuch 100\n", Exact),
        ("admin", "set maxconn frontend web_fe\n", Exact),
        ("admin", "set maxconn server web_be/s1 10\n", Exact),
        ("admin", "set maxconn server web_be/s1 x\n", Exact),
        ("admin", "set maxconn global 500\n", Exact),
        ("admin", "set maxconn global\n", Exact),
        ("admin", "show stat\n", Csv),
        ("admin", "show info\n", Info),
        ("admin", "set timeout cli 5\n", Exact),
        ("admin", "set timeout cli x\n", Exact),
        ("admin", "set timeout foo 5\n", Exact),
        ("admin", "prompt\nshow cli level\nquit\n", Exact),
        (
            "admin",
            "prompt\nget weight web_be/s2\nset timeout cli 1\nquit\n",
            Exact,
        ),
        ("admin", "prompt\n\nquit\n", FirstLine),
        ("admin", "quit\n", Exact),
        (
            "admin",
            "show cli level; get weight web_be/s1; show backend\n",
            Exact,
        ),
        ("admin", "get weight web_be/s1\\; show backend\n", Exact),
        ("admin", "show cli level;\n", FirstLine),
        ("admin", "\n", FirstLine),
        ("admin", "foo\n", FirstLine),
        ("admin", "show foo\n", FirstLine),
        ("admin", "help show\n", Help),
        ("admin", "help nonsense\n", FirstLine),
        (
            "admin",
            "show cli level; operator; show cli level; user; show cli level\n",
            Exact,
        ),
        ("oper", "show cli level\n", Exact),
        ("oper", "clear counters all\n", Exact),
        ("oper", "clear counters\n", Exact),
        ("oper", "disable server web_be/s1\n", Exact),
        ("oper", "set weight web_be/s1 1\n", Exact),
        ("oper", "show env\n", Env),
        ("oper", "help\n", Help),
        ("user", "show cli level\n", Exact),
        ("user", "disable server web_be/s1\n", Exact),
        ("user", "enable server web_be/s1\n", Exact),
        ("user", "set weight web_be/s1 2\n", Exact),
        ("user", "set server web_be/s1 state maint\n", Exact),
        ("user", "disable health web_be/s2\n", Exact),
        ("user", "show env\n", Exact),
        ("user", "clear counters all\n", Exact),
        ("user", "clear counters\n", Exact),
        ("user", "shutdown sessions server web_be/s1\n", Exact),
        ("user", "set maxconn global 10\n", Exact),
        ("user", "set timeout cli 5\n", Exact),
        ("user", "show sess\n", Exact),
        ("user", "show errors\n", Exact),
        ("user", "show servers state\n", ServersState),
        ("user", "show stat\n", Csv),
        ("user", "show cli level; operator; show cli level\n", Exact),
        ("user", "help\n", Help),
        ("admin", "show servers state\n", ServersState),
        ("admin", "show stat\n", Csv),
        ("admin", "show info\n", Info),
    ]
}

fn csv_cells(text: &str) -> (String, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_string();
    let rows = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// A value or its shape: `<empty>` or `<filled>` when `masked`.
fn shape(v: &str, masked: bool) -> String {
    match (masked, v.is_empty()) {
        (false, _) => v.to_string(),
        (true, true) => "<empty>".into(),
        (true, false) => "<filled>".into(),
    }
}

fn norm_csv(text: &str) -> Vec<String> {
    let (header, rows) = csv_cells(text);
    let names: Vec<&str> = header.trim_start_matches("# ").split(',').collect();
    let mut out = vec![header.clone()];
    for r in rows {
        let backend = r.get(1).is_some_and(|sv| sv == "BACKEND");
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let name = names.get(i).copied().unwrap_or("?");
                let masked = VOLATILE_STAT.contains(&name) || backend && name.starts_with("h1_");
                format!("{name}={}", shape(v, masked))
            })
            .collect();
        out.push(cells.join(","));
    }
    out
}

/// One typed line: `<key>:<tags>:<type>:<value>`, value masked by name.
fn norm_typed_line(line: &str) -> String {
    let mut parts = line.splitn(4, ':');
    let key = parts.next().unwrap_or_default();
    let tags = parts.next().unwrap_or_default();
    let ty = parts.next().unwrap_or_default();
    let value = parts.next().unwrap_or_default();
    // `F.2.0.4.scur.1` (stat) or `4.Ulimit-n.1` (info): the field name is
    // the one but last dotted part.
    let segs: Vec<&str> = key.split('.').collect();
    let name = if segs.len() >= 2 {
        segs[segs.len() - 2]
    } else {
        ""
    };
    let masked = (VOLATILE_STAT.contains(&name) || key.starts_with('B') && name.starts_with("h1_"))
        && key.starts_with(['F', 'B', 'S', 'L'])
        || VOLATILE_INFO.contains(&name) && !key.starts_with(['F', 'B', 'S', 'L']);
    format!("{key}:{tags}:{ty}:{}", shape(value, masked))
}

fn norm_typed(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !is_sluice_only_info(l))
        .map(norm_typed_line)
        .collect()
}

fn is_sluice_only_info(line: &str) -> bool {
    SLUICE_ONLY_INFO
        .iter()
        .any(|k| line.contains(&format!(".{k}.")) || line.contains(&format!("\"{k}\"")))
}

/// `show stat json` / `show info json` as typed lines; the JSON around the
/// records must be the same skeleton.
fn norm_json(text: &str) -> Vec<String> {
    let rec = Regex::new(
        r#"\{(?:"objType":"(\w+)","proxyId":(\d+),"id":(\d+),)?"field":\{"pos":(\d+),"name":"([^"]+)"\},"processNum":(\d+),"tags":\{([^}]*)\},"value":\{"type":"(\w+)","value":("(?:[^"\\]|\\.)*"|[^}"]*)\}\}"#,
    )
    .unwrap();
    let mut out = Vec::new();
    for c in rec.captures_iter(text) {
        let get = |i| c.get(i).map_or("", |m| m.as_str());
        let key = match get(1) {
            "" => format!("{}.{}.{}", get(4), get(5), get(6)),
            obj => format!(
                "{}.{}.{}.{}.{}.{}",
                &obj[..1],
                get(2),
                get(3),
                get(4),
                get(5),
                get(6)
            ),
        };
        let line = format!("{key}:{}:{}:{}", get(7), get(8), get(9).trim_matches('"'));
        if !is_sluice_only_info(&line) {
            out.push(norm_typed_line(&line));
        }
    }
    let skeleton = rec.replace_all(text, "R").replace("R,", "");
    out.push(format!("skeleton {skeleton:?}"));
    out
}

fn norm_info(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            !SLUICE_ONLY_INFO
                .iter()
                .any(|k| l.starts_with(&format!("{k}: ")))
        })
        .map(|l| match l.split_once(": ") {
            Some((k, v)) => format!("{k}: {}", shape(v, VOLATILE_INFO.contains(&k))),
            None => l.to_string(),
        })
        .collect()
}

fn norm_servers_state(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            if l.starts_with('#') || !l.contains(' ') {
                return l.to_string();
            }
            // srv_time_since_last_change (10th field) is an age.
            l.split(' ')
                .enumerate()
                .map(|(i, f)| if i == 9 { "<age>" } else { f })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn norm_sess(text: &str) -> Vec<String> {
    let key = Regex::new(r"([a-z_]+)=").unwrap();
    let fixed = Regex::new(r"\b(proto|src|fe|be|srv)=([^ ]*)").unwrap();
    text.lines()
        .map(|l| {
            if l.is_empty() {
                return String::new();
            }
            let keys: Vec<&str> = key
                .captures_iter(l)
                .map(|c| c.get(1).unwrap().as_str())
                .collect();
            let vals: Vec<String> = fixed
                .captures_iter(l)
                .map(|c| c.get(0).unwrap().as_str().to_string())
                .collect();
            let ptr = l.starts_with("0x") && l.contains(": proto=");
            format!("ptr={ptr} keys={} {}", keys.join(","), vals.join(" "))
        })
        .collect()
}

fn norm_errors(text: &str) -> Vec<String> {
    let date = Regex::new(r"\[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d\.\d{3}\]").unwrap();
    text.lines()
        .map(|l| date.replace_all(l, "[<date>]").into_owned())
        .collect()
}

/// The daemons' private directories and versions differ: masked in the
/// HAPROXY_* variables.
fn norm_env(text: &str) -> Vec<String> {
    let dir = Regex::new(r"/[^;/]*sluice-diff-[^/]*/").unwrap();
    text.lines()
        .map(|l| match l.split_once('=') {
            Some(("HAPROXY_STARTUP_VERSION", _)) => "HAPROXY_STARTUP_VERSION=<version>".into(),
            _ => dir.replace_all(l, "<dir>/").into_owned(),
        })
        .collect()
}

/// `help`: sluice's lines, less its own commands, are HAProxy's lines in
/// HAProxy's order.
fn compare_help(cmd: &str, h: &str, s: &str) -> Result<(), String> {
    let sluice_only = ["  reload ", "  show reload "];
    let s_lines: Vec<&str> = s
        .lines()
        .filter(|l| !sluice_only.iter().any(|p| l.starts_with(p)))
        .collect();
    let h_lines: Vec<&str> = h.lines().filter(|l| s_lines.contains(l)).collect();
    if s_lines != h_lines || !s.ends_with("\n\n") || !h.ends_with("\n\n") {
        return Err(format!(
            "{cmd:?}: sluice's help lines are not HAProxy's\nhaproxy: {h_lines:#?}\nsluice: {s_lines:#?}"
        ));
    }
    Ok(())
}

/// Whether the reply ends as a reply must (an empty line, or the prompt),
/// and how many empty lines it holds (an empty reply is one line feed).
fn framing(text: &str) -> (bool, usize) {
    let empty_reply = usize::from(text == "\n");
    (
        empty_reply == 1 || text.ends_with("\n\n") || text.ends_with("> "),
        text.matches("\n\n").count() + empty_reply,
    )
}

fn compare(cmd: &str, how: Cmp, h: &str, s: &str) -> Result<(), String> {
    let (nh, ns) = match how {
        Cmp::Exact => (vec![h.to_string()], vec![s.to_string()]),
        Cmp::Csv => (norm_csv(h), norm_csv(s)),
        Cmp::Typed => (norm_typed(h), norm_typed(s)),
        Cmp::Json => (norm_json(h), norm_json(s)),
        Cmp::Info => (norm_info(h), norm_info(s)),
        Cmp::ServersState => (norm_servers_state(h), norm_servers_state(s)),
        Cmp::Sess => (norm_sess(h), norm_sess(s)),
        Cmp::Errors => (norm_errors(h), norm_errors(s)),
        Cmp::Env => (norm_env(h), norm_env(s)),
        Cmp::Help => return compare_help(cmd, h, s),
        Cmp::Framing => (vec![], vec![]),
        Cmp::FirstLine => {
            let first = |t: &str| {
                // The prompt transcript: compare up to the header line.
                t.lines()
                    .take(3)
                    .find(|l| l.contains("ommand"))
                    .map(str::to_string)
            };
            (
                vec![format!("{:?} {:?}", first(h), framing(h))],
                vec![format!("{:?} {:?}", first(s), framing(s))],
            )
        }
    };
    if nh == ns && (framing(h) == framing(s) || matches!(how, Cmp::Exact)) {
        return Ok(());
    }
    let mut diff = String::new();
    for i in 0..nh.len().max(ns.len()) {
        let (a, b) = (nh.get(i), ns.get(i));
        if a != b {
            diff.push_str(&format!("  haproxy: {a:?}\n  sluice:  {b:?}\n"));
        }
    }
    Err(format!("{cmd:?} ({how:?}) differs:\n{diff}"))
}

fn tools_present() -> bool {
    let socat = have_socat();
    let haproxy = Path::new(HAPROXY).exists();
    if socat && haproxy {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "haproxy and socat are required in CI (.ci/run installs them)"
    );
    eprintln!("skipping: {HAPROXY} or socat not installed");
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_replies_match_haproxy() {
    if !tools_present() {
        return;
    }
    let s1 = Backend::start("s1").await;
    let s2 = Backend::start("s2").await;
    let (a1, a2) = (s1.hostport(), s2.hostport());
    let (h, s) = tokio::task::spawn_blocking(move || {
        (
            Daemon::start(HAPROXY, &a1, &a2),
            Daemon::start(&bin(), &a1, &a2),
        )
    })
    .await
    .unwrap();
    // The health check of s2 has run on both, and both served the same
    // traffic: 4 requests on one keep-alive connection.
    for d in [&h, &s] {
        let sock = d.sock("admin");
        wait_until(Duration::from_secs(5), "s2's first check", || {
            let sock = sock.clone();
            async move { cli(&sock, "show stat").await.contains(",L4OK,") }
        })
        .await;
        let mut c = HttpConn::connect(([127, 0, 0, 1], d.port).into()).await;
        for _ in 0..4 {
            assert_eq!(c.get("/").await.status, 200);
        }
    }
    let mut failures = Vec::new();
    let mut infos: [Vec<String>; 2] = Default::default();
    for (level, cmd, how) in script() {
        let (hs, ss) = (h.sock(level), s.sock(level));
        let input = cmd.to_string();
        let (ho, so) =
            tokio::task::spawn_blocking(move || (socat_in(&hs, &input), socat_in(&ss, &input)))
                .await
                .unwrap();
        if let Err(e) = compare(&format!("{level}: {cmd}"), how, &ho, &so) {
            failures.push(e);
        }
        if cmd == "show info\n" {
            infos[0].push(ho);
            infos[1].push(so);
        }
    }
    // CumConns and CumReq depend on how often the check wait above polled,
    // but both count the script's CLI sessions the same way: compare how
    // much they moved between the first and the last `show info`.
    let moved = |texts: &[String], key: &str| {
        let val = |t: &String| -> u64 {
            let line = t
                .lines()
                .find(|l| l.starts_with(&format!("{key}: ")))
                .unwrap();
            line[key.len() + 2..].parse().unwrap()
        };
        val(texts.last().unwrap()) - val(texts.first().unwrap())
    };
    for key in ["CumConns", "CumReq"] {
        let (hm, sm) = (moved(&infos[0], key), moved(&infos[1], key));
        if hm != sm || hm == 0 {
            failures.push(format!("{key} moved by {hm} in haproxy, by {sm} in sluice"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} replies differ from HAProxy's:\n{}",
        failures.len(),
        script().len(),
        failures.join("\n")
    );
}
