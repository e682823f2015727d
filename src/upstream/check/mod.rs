//! Active health checks through HAProxy's rise/fall state machine (see
//! `backend::health`): a TCP connect, an HTTP request (`option httpchk`,
//! `http-check send|expect`) or a `tcp-check` script, every `inter` while
//! the server is fully UP, `fastinter` while it is in a transition and
//! `downinter` while it is fully DOWN. Checks of different servers start at
//! spread-out offsets so they do not all fire at once; the data plane does
//! no per-request work for them.
//!
//! State changes are told in HAProxy's words (reference §2.10, §4.4):
//! server DOWN at `alert`, UP at `notice`, "backend has no server
//! available!" at `emerg`, as tracing events of target `sluice::event` with
//! a `severity` field (the syslog sink maps it to the syslog level).

mod agent;
mod expect;
mod external;
mod mail;
mod proto;

pub(crate) use agent::spawn_agents;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::observe::log::server_state::{counts, on_backup, server_word};
use crate::tls::Stream;
use crate::tls::upstream::UpstreamTls;

use crate::config::model::{CheckKind, CheckParams, ExpectKind, HttpCheck, TcpCheckRule};
use crate::snapshot::BackendRt;
use crate::snapshot::runtime::Runtime;
use crate::state::ServerState;
use crate::state::health::CheckInfo;
use crate::state::health::{CheckStatus, Transition};

/// The global `pp2-never-send-local`: checks of `send-proxy-v2` servers
/// send a PROXY command, not a LOCAL one (set by the configuration in
/// force).
pub(crate) static PP2_NEVER_LOCAL: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Starts a checker task for every server of the current snapshot that has
/// `check` and no checker yet. A checker follows its server across reloads
/// (new parameters apply at its next check) and ends when the server is
/// removed or loses `check`.
pub(crate) fn spawn_checks(rt: &Arc<Runtime>) {
    let snap = rt.snapshot();
    let servers: Vec<(Arc<ServerState>, Duration)> = snap
        .backends()
        .flat_map(|be| {
            be.servers
                .iter()
                .filter_map(|s| Some((s.state.clone(), s.check?.inter)))
        })
        .filter(|(s, _)| !s.checker.swap(true, Relaxed))
        .collect();
    let n = servers.len().max(1) as u32;
    let bound = snap.global.max_spread_checks;
    for (i, (state, inter)) in servers.into_iter().enumerate() {
        // Spread the first checks over one interval, at most over
        // `max-spread-checks`.
        let offset = inter * i as u32 / n;
        let offset = bound.map_or(offset, |b| offset.min(b * i as u32 / n));
        tokio::spawn(check_loop(rt.clone(), state, offset));
    }
}

/// What one check needs, read from the current snapshot.
struct Plan {
    params: CheckParams,
    kind: CheckKind,
    /// min(timeout connect, inter), or inter.
    connect_timeout: Duration,
    /// `timeout check` after the connection, else inter.
    read_timeout: Duration,
    /// `check-ssl`: checks over TLS with these settings.
    check_tls: Option<Arc<UpstreamTls>>,
    /// `option log-health-checks`.
    log_checks: bool,
    /// `spread-checks`, in percent.
    spread: u32,
    /// What an external check's environment tells.
    identity: external::Identity,
    /// `http-check send-state`: the `X-Haproxy-Server-State` value.
    state_header: Option<String>,
}

fn plan_now(rt: &Runtime, server: &Arc<ServerState>) -> Option<Plan> {
    rt.with_snapshot(|snap| {
        let be = snap.backend(&server.backend)?;
        let s = be.servers.iter().find(|s| Arc::ptr_eq(&s.state, server))?;
        let params = s.check?;
        let connect_timeout = be
            .timeouts
            .connect
            .map_or(params.inter, |t| t.min(params.inter));
        let read_timeout = be.timeouts.check.unwrap_or(params.inter);
        let pool = s.state.pool.load();
        let identity = external::Identity {
            proxy_id: be.iid,
            server_id: s.sid,
            ssl: pool.tls().is_some(),
            proto: if pool.is_h2() {
                "h2"
            } else if be.mode == crate::config::model::Mode::Http {
                "h1"
            } else {
                "tcp"
            },
        };
        let state_header = match &be.check {
            CheckKind::Http(hc) if hc.send_state => Some(server_state_header(snap, be, s)),
            _ => None,
        };
        Some(Plan {
            identity,
            state_header,
            params,
            kind: be.check.clone(),
            connect_timeout,
            read_timeout,
            check_tls: s.check_tls.clone(),
            log_checks: be.log_health_checks,
            spread: snap.global.spread_checks,
        })
    })
}

/// `http-check send-state`'s value, as HAProxy 2.6 tells a server its
/// state: the health as `show stat` words it (`UP`, `UP 1/3`, `DOWN 1/2`,
/// `NOLB`), its address and port, the names, the node, its weight of the
/// backend's, its sessions of the backend's and its queue.
fn server_state_header(
    snap: &crate::snapshot::Snapshot,
    be: &BackendRt,
    s: &crate::snapshot::ServerRt,
) -> String {
    let st = &s.state;
    let addr = st.addr();
    let idx = be
        .servers
        .iter()
        .position(|x| Arc::ptr_eq(&x.state, st))
        .unwrap_or(0);
    let (weight, _) = be.lb.shown_weight(&be.servers, idx);
    let (total, _, _) = be.lb.shown_totals(&be.servers);
    let node = snap
        .global
        .node
        .clone()
        .or_else(|| crate::sys::process::local_peer().map(str::to_string))
        .unwrap_or_else(|| crate::sys::process::hostname().to_string());
    format!(
        "{}; address={}; port={}; name={}/{}; node={node}; weight={weight}/{total}; scur={}/{}; qcur={}",
        st.health.status_text_admin(false),
        addr.ip(),
        addr.port(),
        be.name,
        s.name,
        st.counters.sess.cur(),
        be.state.counters.sess.cur(),
        st.counters.queue.cur(),
    )
}

/// HAProxy's `srv_getinter`: `inter` at full health, `downinter` when
/// fully DOWN, `fastinter` in between.
fn interval(server: &ServerState, p: &CheckParams) -> Duration {
    let i = server.health.info();
    if i.health >= i.rise + i.fall - 1 {
        p.inter
    } else if !server.health.is_up() && i.health == 0 {
        p.downinter.unwrap_or(p.inter)
    } else {
        p.fastinter.unwrap_or(p.inter)
    }
}

/// `spread-checks`: `inter` moved by a random amount of at most `pct`
/// percent of it, either way (HAProxy's formula).
fn spread(inter: Duration, pct: u32) -> Duration {
    if pct == 0 {
        return inter;
    }
    let most = inter.as_millis() as u64 * u64::from(pct) / 100;
    // Uniform in [0, 2 * most].
    let r = crate::sample::random::next_u64() % (2 * most + 1);
    (inter + Duration::from_millis(r)).saturating_sub(Duration::from_millis(most))
}

async fn check_loop(rt: Arc<Runtime>, server: Arc<ServerState>, offset: Duration) {
    tokio::time::sleep(offset).await;
    loop {
        let Some(plan) = plan_now(&rt, &server) else {
            server.checker.store(false, Relaxed);
            return;
        };
        let started = Instant::now();
        // A server without address (a name that does not resolve) is not
        // probed: its checks wait in maintenance.
        if server.health.checks_active() && server.has_addr() {
            let ((status, code, detail, ms), said) = run_check(&server, &plan).await;
            let before = server.health.info();
            let transition = server.health.record(status, code, ms, detail.clone());
            if plan.log_checks {
                log_check(&rt, &server, &before, ms, said.as_deref());
            }
            // With `log-health-checks` the check's line told the reason:
            // the state change line does not repeat it (as HAProxy).
            let quiet = plan.log_checks;
            match transition {
                Some(Transition::WentDown) => {
                    report_down(&rt, &server, (status, code, &detail, Some(ms)), quiet)
                }
                Some(Transition::WentUp | Transition::Resumed) => {
                    report_up(&rt, &server, (status, code, ""), ms, quiet)
                }
                Some(Transition::WentStopping) => report_stopping(&rt, &server, code, ms),
                None => {}
            }
        }
        // Maintenance or `disable health`: no probe, same pace.
        let next =
            spread(interval(&server, &plan.params), plan.spread).saturating_sub(started.elapsed());
        tokio::select! {
            _ = tokio::time::sleep(next) => {}
            // `on-error fastinter` and friends: check again soon.
            _ = server.check_soon.notified() => {
                let fast = plan.params.fastinter.unwrap_or(plan.params.inter);
                tokio::time::sleep(fast.min(next)).await;
            }
        }
    }
}

/// The address checks go to: the server's, with `addr`/`port` overrides.
fn check_addr(server: &ServerState, p: &CheckParams, port: Option<u16>) -> SocketAddr {
    let mut a = server.addr();
    if let Some(ip) = p.addr {
        a.set_ip(ip);
    }
    if let Some(port) = port.or(p.port) {
        a.set_port(port);
    }
    a
}

type Outcome = (CheckStatus, Option<u16>, String, u64);

/// A check's result, and what its log line tells when that differs from
/// what `show stat` keeps (see `proto::Judged::Pass`).
async fn run_check(server: &ServerState, plan: &Plan) -> (Outcome, Option<String>) {
    let start = Instant::now();
    let ms = |s: Instant| s.elapsed().as_millis() as u64;
    let (status, code, detail) = match &plan.kind {
        CheckKind::Tcp => match connect(server, plan, None).await {
            // Over TLS the check passed the handshake: layer 6.
            Ok(Stream::Tls(_)) => (CheckStatus::L6Ok, None, String::new()),
            Ok(_) => (CheckStatus::L4Ok, None, String::new()),
            Err((st, d)) => (st, None, d),
        },
        CheckKind::Http(hc) => match connect(server, plan, None).await {
            Ok(conn) => match over_h2(server, plan, conn).await {
                Ok(conn) => {
                    // HAProxy takes a 404 as "stopping" only from a server
                    // that is not DOWN.
                    let drain_on_404 = hc.disable_on_404 && server.health.is_up();
                    let state = plan.state_header.as_deref();
                    http_check(conn, hc, state, plan.read_timeout, drain_on_404).await
                }
                Err(e) => (CheckStatus::L7Rsp, None, format!("HTTP/2 error ({e})")),
            },
            Err((st, d)) => (st, None, d),
        },
        // HAProxy gives the program until the next check.
        CheckKind::External(ext) => {
            external::run(server, ext, &plan.identity, plan.params.inter).await
        }
        CheckKind::TcpCheck(rules) => {
            let (verdict, said) = tcp_check(server, plan, rules).await;
            return ((verdict.0, verdict.1, verdict.2, ms(start)), said);
        }
    };
    ((status, code, detail, ms(start)), None)
}

async fn connect(
    server: &ServerState,
    plan: &Plan,
    port: Option<u16>,
) -> Result<Stream, (CheckStatus, String)> {
    let addr = check_addr(server, &plan.params, port);
    let pool = server.pool.load();
    // A UNIX socket server is checked on its socket, unless the check is
    // sent elsewhere (`addr` / `port`).
    let unix = pool
        .unix()
        .filter(|_| port.is_none() && plan.params.port.is_none() && plan.params.addr.is_none());
    let connected = match unix {
        Some(name) => {
            match crate::upstream::unix::connect(name, Some(plan.connect_timeout)).await {
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Err((CheckStatus::L4Tout, String::new()));
                }
                // As HAProxy: a socket that cannot be reached at all (no such
                // file, no permission) is a socket error, not a refusal.
                Err(e) if e.kind() != std::io::ErrorKind::ConnectionRefused => {
                    let why = std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0));
                    let text = crate::sys::strerror(&why);
                    return Err((
                        CheckStatus::SockErr,
                        format!("General socket error ({text})"),
                    ));
                }
                r => Ok(r),
            }
        }
        None => tokio::time::timeout(plan.connect_timeout, TcpStream::connect(addr)).await,
    };
    let tcp = match connected {
        Ok(Ok(mut s)) => {
            let _ = s.set_nodelay(true);
            // `send-proxy[-v2]` servers get the header on checks too, unless
            // the check goes elsewhere (`addr` / `port`), as in HAProxy;
            // `check-send-proxy` sends it wherever the check goes (v1
            // unless the server has `send-proxy-v2`).
            let forced = plan.params.send_proxy;
            let version = match server.send_proxy.load(Relaxed) {
                0 if forced => 1,
                v => v,
            };
            let elsewhere =
                port.is_some() || plan.params.port.is_some() || plan.params.addr.is_some();
            if version != 0
                && (forced || !elsewhere)
                && let Some(h) =
                    crate::wire::proxy_proto::for_check(version, &s, PP2_NEVER_LOCAL.load(Relaxed))
                && s.write_all(&h).await.is_err()
            {
                return Err((CheckStatus::L4Con, "Write error".to_string()));
            }
            s
        }
        // HAProxy tells the C library's text for the error ("Connection
        // reset by peer" when a closing listener resets a queued connection).
        Ok(Err(e)) => return Err((CheckStatus::L4Con, crate::sys::strerror(&e))),
        Err(_) => return Err((CheckStatus::L4Tout, String::new())),
    };
    // `check-ssl`: over TLS wherever the check goes. Else `ssl` on the
    // server: checks go over TLS too, unless they were sent elsewhere
    // (`port` / `addr`), as HAProxy does.
    let tls = match &plan.check_tls {
        Some(t) => Some(t),
        None => pool.tls().filter(|_| addr == server.addr()),
    };
    let Some(tls) = tls else {
        return Ok(Stream::Tcp(tcp.into()));
    };
    match tokio::time::timeout(
        plan.connect_timeout,
        tls.handshake(tcp, addr, tls.sni_for(None)),
    )
    .await
    {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => {
            server.counters.local().ssl_failed_handshake.inc();
            Err((CheckStatus::L6Rsp, format!("SSL handshake failure ({e})")))
        }
        Err(_) => Err((CheckStatus::L6Tout, String::new())),
    }
}

/// HTTP checks of a `proto h2` server (or with `check-proto h2`) speak
/// HTTP/2, on a connection of their own, as HAProxy's.
async fn over_h2(server: &ServerState, plan: &Plan, conn: Stream) -> std::io::Result<Stream> {
    let pool = server.pool.load();
    if !plan.params.proto_h2.unwrap_or(pool.is_h2()) {
        return Ok(conn);
    }
    let https = conn.is_tls();
    let peer = check_addr(server, &plan.params, None);
    crate::upstream::h2::one_exchange(conn, peer, https, Some(plan.read_timeout)).await
}

/// Largest response read by a check.
const MAX_CHECK_RESPONSE: usize = 16384;

/// Reads until `done(buf)` holds, the peer closes, or the deadline.
/// Returns (buffer, timed out).
async fn read_until(
    conn: &mut Stream,
    deadline: Instant,
    done: impl Fn(&[u8]) -> bool,
) -> (Vec<u8>, bool) {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if done(&buf) || buf.len() >= MAX_CHECK_RESPONSE {
            return (buf, false);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, conn.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (buf, false),
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return (buf, true),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One HTTP check on `conn`. With `drain_on_404`, a 404 passes
/// conditionally (`L7OKC`) whatever `http-check expect` says.
async fn http_check(
    mut conn: Stream,
    hc: &HttpCheck,
    state: Option<&str>,
    timeout: Duration,
    drain_on_404: bool,
) -> (CheckStatus, Option<u16>, String) {
    let deadline = Instant::now() + timeout;
    let mut req = format!("{} {} {}\r\n", hc.method, hc.uri, hc.version);
    // Header names go out lower-cased, as HAProxy's HTX/H1 path sends them.
    for (n, v) in &hc.headers {
        req.push_str(&format!("{}: {v}\r\n", n.to_ascii_lowercase()));
    }
    if let Some(s) = state {
        req.push_str(&format!("x-haproxy-server-state: {s}\r\n"));
    }
    if !hc.body.is_empty() {
        req.push_str(&format!("content-length: {}\r\n", hc.body.len()));
    }
    // HTTP/1.1 checks ask to close; HTTP/1.0 ones close by default and
    // haproxy 2.6.12 sends no `connection` header with them.
    if !hc.version.eq_ignore_ascii_case("HTTP/1.0") {
        req.push_str("connection: close\r\n");
    }
    req.push_str("\r\n");
    req.push_str(&hc.body);
    if conn.write_all(req.as_bytes()).await.is_err() || conn.flush().await.is_err() {
        return (CheckStatus::L7Rsp, None, "Write error".into());
    }
    // Body checks read to the end; status checks only need the head.
    let need_body = matches!(
        hc.expect.as_ref().map(|e| &e.kind),
        Some(ExpectKind::String(_) | ExpectKind::RString(_))
    );
    let (buf, timed_out) = read_until(&mut conn, deadline, |b| {
        !need_body && find(b, b"\r\n\r\n").is_some()
    })
    .await;
    if buf.is_empty() {
        return if timed_out {
            (CheckStatus::L7Tout, None, String::new())
        } else {
            (CheckStatus::L7Rsp, None, "Empty response".into())
        };
    }
    // Status line: HTTP/1.x <code> <reason>
    let line_end = find(&buf, b"\r\n").unwrap_or(buf.len());
    let line = String::from_utf8_lossy(&buf[..line_end]).into_owned();
    let mut parts = line.splitn(3, ' ');
    let (proto, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let reason = parts.next().unwrap_or("").to_string();
    let code = match code.parse::<u16>() {
        Ok(c) if proto.starts_with("HTTP/") && code.len() == 3 => c,
        _ => {
            return if timed_out && find(&buf, b"\r\n").is_none() {
                (CheckStatus::L7Tout, None, String::new())
            } else {
                (CheckStatus::L7Rsp, None, "Invalid HTTP response".into())
            };
        }
    };
    if drain_on_404 && code == 404 {
        return (CheckStatus::L7OkC, Some(code), String::new());
    }
    let body = find(&buf, b"\r\n\r\n").map_or(&buf[..0], |i| &buf[i + 4..]);
    match &hc.expect {
        None => {
            if (200..400).contains(&code) {
                // A passing HTTP check leaves `last_chk` empty (haproxy 2.6.12).
                (CheckStatus::L7Ok, Some(code), String::new())
            } else {
                (CheckStatus::L7Sts, Some(code), reason)
            }
        }
        Some(e) => {
            let hit = match &e.kind {
                ExpectKind::Status(ranges) => ranges.iter().any(|&(a, b)| (a..=b).contains(&code)),
                ExpectKind::RStatus(re) => expect::matches(re, code.to_string().as_bytes()),
                ExpectKind::String(s) => find(body, s.as_bytes()).is_some(),
                ExpectKind::RString(re) => expect::matches(re, body),
            };
            if hit != e.negate {
                return (CheckStatus::L7Ok, Some(code), String::new());
            }
            match &e.kind {
                ExpectKind::Status(_) | ExpectKind::RStatus(_) => {
                    (CheckStatus::L7Sts, Some(code), reason)
                }
                _ if timed_out => (CheckStatus::L7Tout, Some(code), String::new()),
                _ => (
                    CheckStatus::L7Rsp,
                    Some(code),
                    "HTTP content check did not match".into(),
                ),
            }
        }
    }
}

/// A `tcp-check` script, or a protocol check's rule set (`option
/// redis-check` and the like), whose steps HAProxy numbers without the
/// implicit connect and whose connection errors it tells plainly.
async fn tcp_check(
    server: &ServerState,
    plan: &Plan,
    rules: &[TcpCheckRule],
) -> ((CheckStatus, Option<u16>, String), Option<String>) {
    let mut conn: Option<Stream> = None;
    let deadline = |t: Duration| Instant::now() + t;
    let mut buf: Vec<u8> = Vec::new();
    let mut data_step = false;
    let proto = rules.iter().any(crate::config::check_proto::is_proto_rule);
    // The last protocol step's verdict, and what the log line tells.
    let mut passed: Option<(CheckStatus, Option<u16>, String)> = None;
    let mut said: Option<String> = None;
    // Whether the server closed its side (protocol steps read on).
    let mut closed = false;
    // An implicit connect when the script does not start with one.
    let implicit = !matches!(rules.first(), Some(TcpCheckRule::Connect { .. }));
    if implicit {
        match connect(server, plan, None).await {
            Ok(c) => conn = Some(c),
            Err((st, d)) => return ((st, None, d), None),
        }
    }
    for (n, rule) in rules.iter().enumerate() {
        let step = n + 1 + usize::from(implicit && !proto);
        match rule {
            TcpCheckRule::Connect { port } => match connect(server, plan, *port).await {
                Ok(c) => {
                    conn = Some(c);
                    buf.clear();
                    closed = false;
                }
                Err((st, d)) if proto => return ((st, None, d), None),
                Err((st, d)) => {
                    return (
                        (
                            st,
                            None,
                            format!("{d} at step {step} of tcp-check (connect)"),
                        ),
                        None,
                    );
                }
            },
            TcpCheckRule::Send(_) | TcpCheckRule::SslHello => {
                let Some(c) = conn.as_mut() else {
                    return ((CheckStatus::L7Rsp, None, "no connection".into()), None);
                };
                data_step = true;
                let data = match rule {
                    TcpCheckRule::Send(d) => std::borrow::Cow::Borrowed(d.as_slice()),
                    _ => {
                        let now = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs() as u32);
                        std::borrow::Cow::Owned(proto::ssl_client_hello(now))
                    }
                };
                // A protocol's reply is read afresh after each request.
                if proto {
                    buf.clear();
                }
                if c.write_all(&data).await.is_err() || c.flush().await.is_err() {
                    return (
                        (
                            CheckStatus::L7Rsp,
                            None,
                            format!("Write error at step {step} of tcp-check (send)"),
                        ),
                        None,
                    );
                }
            }
            TcpCheckRule::Proto(p) => {
                let Some(c) = conn.as_mut() else {
                    return ((CheckStatus::L7Rsp, None, "no connection".into()), None);
                };
                let until = deadline(plan.read_timeout);
                let verdict = loop {
                    if buf.is_empty() && closed {
                        let (st, code) = proto::empty_status(*p);
                        let d = format!("TCPCHK got an empty response at step {step}");
                        return ((st, code, d), None);
                    }
                    let full = buf.len() >= MAX_CHECK_RESPONSE;
                    match proto::judge(*p, &buf, closed, full) {
                        proto::Judged::More => {}
                        v => break v,
                    }
                    let mut chunk = [0u8; 4096];
                    let left = until.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, c.read(&mut chunk)).await {
                        Ok(Ok(0)) => closed = true,
                        Ok(Ok(k)) => buf.extend_from_slice(&chunk[..k]),
                        // A reset (a server that closed on a request it
                        // did not read): HAProxy's socket error.
                        Ok(Err(e)) => {
                            let why = crate::sys::strerror(&e);
                            return ((CheckStatus::SockErr, None, why), None);
                        }
                        Err(_) => return ((proto::timeout_status(*p), None, String::new()), None),
                    }
                };
                match verdict {
                    proto::Judged::Pass {
                        status,
                        code,
                        detail,
                        said: s,
                    } => {
                        passed = Some((status, code, detail));
                        if s.is_some() {
                            said = s;
                        }
                    }
                    proto::Judged::Fail {
                        status,
                        code,
                        detail,
                    } => return ((status, code, detail), None),
                    proto::Judged::More => {}
                }
            }
            TcpCheckRule::Expect(e) => {
                let Some(c) = conn.as_mut() else {
                    return ((CheckStatus::L7Rsp, None, "no connection".into()), None);
                };
                data_step = true;
                let check = |b: &[u8]| match &e.kind {
                    ExpectKind::String(s) => find(b, s.as_bytes()).is_some(),
                    ExpectKind::RString(re) => expect::matches(re, b),
                    _ => false,
                };
                let (more, timed_out) = if check(&buf) {
                    (Vec::new(), false)
                } else {
                    read_until(c, deadline(plan.read_timeout), |b| {
                        let mut all = buf.clone();
                        all.extend_from_slice(b);
                        check(&all) != e.negate && !e.negate
                    })
                    .await
                };
                buf.extend_from_slice(&more);
                let hit = check(&buf);
                if hit == e.negate {
                    if timed_out && !e.negate {
                        return (
                            (
                                CheckStatus::L7Tout,
                                None,
                                format!("at step {step} of tcp-check (expect)"),
                            ),
                            None,
                        );
                    }
                    let pat = match &e.kind {
                        ExpectKind::String(s) | ExpectKind::RString(s) => s.as_str(),
                        _ => "",
                    };
                    return (
                        (
                            CheckStatus::L7Rsp,
                            None,
                            format!("TCPCHK did not match content '{pat}' at step {step}"),
                        ),
                        None,
                    );
                }
                // The matched data is consumed.
                buf.clear();
            }
        }
    }
    if let Some(v) = passed {
        (v, said)
    } else if data_step {
        ((CheckStatus::L7Ok, None, "(tcp-check)".into()), None)
    } else {
        ((CheckStatus::L4Ok, None, String::new()), None)
    }
}

/// `option log-health-checks`: a check whose result differs from the
/// previous one, or that moved the health counter, is logged at `notice`
/// (and to stderr) in HAProxy 2.6's words: `Health check for server b/s
/// succeeded|failed, <reason>, status: <n>/<of> UP|DRAIN|DOWN.`
/// `said`: the text the line tells in place of the check's kept one.
fn log_check(rt: &Runtime, server: &ServerState, before: &CheckInfo, ms: u64, said: Option<&str>) {
    let after = server.health.info();
    if after.status == before.status && after.health == before.health {
        return;
    }
    let (backup, mail) = rt.with_snapshot(|snap| {
        snap.backend(&server.backend).map_or((false, None), |be| {
            (is_backup(be, server), be.email_alert.clone())
        })
    });
    let (h, rise, fall) = (after.health, after.rise, after.fall);
    let (n, of, state) = if h >= rise {
        let state = if server.weight.load(Relaxed) == 0 {
            "DRAIN"
        } else {
            "UP"
        };
        (h - rise + 1, fall, state)
    } else {
        (h, rise, "DOWN")
    };
    let line = format!(
        "Health check for {}server {}/{} {}{}, {}, status: {n}/{of} {state}.",
        if backup { "backup " } else { "" },
        server.backend,
        server.name,
        if after.status == CheckStatus::L7OkC {
            "conditionally "
        } else {
            ""
        },
        if after.status.is_ok() {
            "succeeded"
        } else {
            "failed"
        },
        reason(
            after.status,
            after.code,
            said.unwrap_or(&after.detail),
            Some(ms)
        ),
    );
    tracing::warn!(target: "sluice::event", severity = "notice", "{line}");
    // HAProxy mails these at `info`, though it logs them at `notice`.
    mail::alert(mail.as_ref(), crate::config::log::INFO, &line);
}

/// `, <reason>` after a server's state change, or nothing when `quiet`.
fn told_reason(
    quiet: bool,
    status: CheckStatus,
    code: Option<u16>,
    detail: &str,
    ms: Option<u64>,
) -> String {
    if quiet {
        String::new()
    } else {
        format!(", {}", reason(status, code, detail, ms))
    }
}

/// HAProxy's reason text: `reason: <desc>[, code: <n>][, info: "<d>"]`.
fn reason(status: CheckStatus, code: Option<u16>, detail: &str, ms: Option<u64>) -> String {
    let mut r = format!("reason: {}", status.desc());
    if let Some(c) = code.filter(|_| {
        matches!(
            status,
            CheckStatus::L7Ok
                | CheckStatus::L7OkC
                | CheckStatus::L7Sts
                | CheckStatus::L7Rsp
                | CheckStatus::ProcOk
                | CheckStatus::ProcErr
                | CheckStatus::ProcTout
        )
    }) {
        r.push_str(&format!(", code: {c}"));
    }
    if !detail.is_empty() {
        r.push_str(&format!(", info: \"{detail}\""));
    }
    if let Some(ms) = ms {
        r.push_str(&format!(", check duration: {ms}ms"));
    }
    r
}

/// Logs a server going DOWN (`alert`), then the backend losing its last
/// server (`emerg`), and cuts the server's sessions with
/// `on-marked-down shutdown-sessions`.
/// `quiet`: the reason is left out (`log-health-checks` told it).
pub(crate) fn report_down(
    rt: &Runtime,
    server: &ServerState,
    (status, code, detail, ms): (CheckStatus, Option<u16>, &str, Option<u64>),
    quiet: bool,
) {
    let (act, bck, backup, mail) = rt.with_snapshot(|snap| {
        snap.backend(&server.backend)
            .map_or((0, 0, false, None), |be| {
                let (a, b) = counts(be);
                if a + b == 0 {
                    be.state.went_down.fetch_add(1, Relaxed);
                }
                (a, b, is_backup(be, server), be.email_alert.clone())
            })
    });
    down_event(
        server,
        (act, bck, backup),
        (status, code, detail, ms),
        quiet,
        mail.as_ref(),
    );
}

fn is_backup(be: &BackendRt, server: &ServerState) -> bool {
    be.servers
        .iter()
        .any(|s| s.backup && std::ptr::eq(&*s.state, server))
}

fn down_event(
    server: &ServerState,
    (act, bck, backup): (usize, usize, bool),
    (status, code, detail, ms): (CheckStatus, Option<u16>, &str, Option<u64>),
    quiet: bool,
    mail: Option<&Arc<crate::config::mailers::Alerting>>,
) {
    let cut = server.shutdown_on_down.load(Relaxed);
    let active = server.inflight();
    if cut {
        server.cut_sessions();
    }
    let line = format!(
        "{} {}/{} is DOWN{}. {} active and {} backup servers left.{} {} sessions active, 0 requeued, {} remaining in queue.",
        server_word(backup),
        server.backend,
        server.name,
        told_reason(quiet, status, code, detail, ms),
        act,
        bck,
        on_backup(act, bck),
        active,
        server.waiters.load(Relaxed),
    );
    tracing::error!(target: "sluice::event", severity = "alert", "{line}");
    mail::alert(mail, crate::config::log::ALERT, &line);
    if act + bck == 0 {
        tracing::error!(
            target: "sluice::event",
            severity = "emerg",
            "backend {} has no server available!",
            server.backend
        );
    }
}

/// Logs a server coming UP (`notice`), and with `on-marked-up
/// shutdown-backup-sessions` ends the sessions of the backend's backup
/// servers (HAProxy's `srv_shutdown_backup_streams`).
fn report_up(
    rt: &Runtime,
    server: &ServerState,
    (status, code, detail): (CheckStatus, Option<u16>, &str),
    ms: u64,
    quiet: bool,
) {
    let (act, bck, queued, backup, mail) =
        rt.with_snapshot(|snap| match snap.backend(&server.backend) {
            Some(be) => {
                let me = be.servers.iter().find(|s| std::ptr::eq(&*s.state, server));
                if me.is_some_and(|s| s.opts.shutdown_backup_on_up) {
                    for b in be.servers.iter().filter(|s| s.backup) {
                        b.state.cut_sessions();
                    }
                }
                let (a, b) = counts(be);
                (
                    a,
                    b,
                    be.state.queue.len(),
                    is_backup(be, server),
                    be.email_alert.clone(),
                )
            }
            None => (0, 0, 0, false, None),
        });
    let line = format!(
        "{} {}/{} is UP{}. {} active and {} backup servers online.{} 0 sessions requeued, {} total in queue.",
        server_word(backup),
        server.backend,
        server.name,
        told_reason(quiet, status, code, detail, Some(ms)),
        act,
        bck,
        on_backup(act, bck),
        queued,
    );
    tracing::info!(target: "sluice::event", severity = "notice", "{line}");
    mail::alert(mail.as_ref(), crate::config::log::NOTICE, &line);
}

/// Logs a server going to NOLB after an `L7OKC` check (`http-check
/// disable-on-404`), at `notice` as HAProxy's `srv_set_stopping`, and the
/// backend losing its last server that takes new traffic (`emerg`).
fn report_stopping(rt: &Runtime, server: &ServerState, code: Option<u16>, ms: u64) {
    let (act, bck, queued, backup, mail) =
        rt.with_snapshot(|snap| match snap.backend(&server.backend) {
            Some(be) => {
                let (a, b) = counts(be);
                if a + b == 0 {
                    be.state.went_down.fetch_add(1, Relaxed);
                }
                (
                    a,
                    b,
                    be.state.queue.len(),
                    is_backup(be, server),
                    be.email_alert.clone(),
                )
            }
            None => (0, 0, 0, false, None),
        });
    let line = format!(
        "{} {}/{} is stopping, {}. {} active and {} backup servers online.{} 0 sessions requeued, {} total in queue.",
        server_word(backup),
        server.backend,
        server.name,
        reason(CheckStatus::L7OkC, code, "", Some(ms)),
        act,
        bck,
        on_backup(act, bck),
        queued,
    );
    tracing::info!(target: "sluice::event", severity = "notice", "{line}");
    mail::alert(mail.as_ref(), crate::config::log::NOTICE, &line);
    if act + bck == 0 {
        tracing::error!(
            target: "sluice::event",
            severity = "emerg",
            "backend {} has no server available!",
            server.backend
        );
    }
}

/// A live-traffic outcome of `server` (`observe layer4|layer7`): an error
/// (connection failure for layer4; also 5xx and broken answers for
/// layer7) or a success. After `error-limit` consecutive errors, `on-error`
/// applies, and the next active check comes after `fastinter`.
pub(crate) fn observe(be: &BackendRt, server: &ServerState, error: Option<&str>) {
    let Some(s) = be.servers.iter().find(|s| std::ptr::eq(&*s.state, server)) else {
        return;
    };
    if s.opts.observe.is_none() || s.check.is_none() {
        return;
    }
    let Some(what) = error else {
        if server.consec_errors.load(Relaxed) != 0 {
            server.consec_errors.store(0, Relaxed);
        }
        return;
    };
    let n = server.consec_errors.fetch_add(1, Relaxed) + 1;
    if n < s.opts.error_limit.max(1) {
        return;
    }
    server.consec_errors.store(0, Relaxed);
    use crate::config::model::OnError;
    let detail = format!("Detected {n} consecutive errors, last one was: {what}");
    let t = match s.opts.on_error {
        OnError::FastInter => None,
        OnError::FailCheck => server.health.passive_failure(false, false, detail.clone()),
        OnError::SuddenDeath => server.health.passive_failure(true, false, detail.clone()),
        OnError::MarkDown => server.health.passive_failure(false, true, detail.clone()),
    };
    if t == Some(Transition::WentDown) {
        let (act, bck) = counts(be);
        down_event(
            server,
            (act, bck, s.backup),
            (CheckStatus::Hana, None, &detail, None),
            false,
            be.email_alert.as_ref(),
        );
    }
    server.check_soon.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `spread-checks 50` moves a 2 s interval anywhere within 1 s to 3 s,
    /// not always by the same amount; 0 leaves it exact.
    #[test]
    fn spread_stays_within_its_percentage() {
        let inter = Duration::from_secs(2);
        let drawn: Vec<Duration> = (0..200).map(|_| spread(inter, 50)).collect();
        let range = Duration::from_secs(1)..=Duration::from_secs(3);
        assert!(drawn.iter().all(|d| range.contains(d)), "{drawn:?}");
        assert!(drawn.iter().any(|d| *d < inter) && drawn.iter().any(|d| *d > inter));
        assert_eq!(spread(inter, 0), inter);
    }
    use crate::config::model::Expect;

    #[test]
    fn reasons_in_haproxy_words() {
        assert_eq!(
            reason(CheckStatus::L4Con, None, "Connection refused", Some(0)),
            "reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms"
        );
        assert_eq!(
            reason(CheckStatus::L7Ok, Some(200), "", Some(1)),
            "reason: Layer7 check passed, code: 200, check duration: 1ms"
        );
        assert_eq!(
            reason(
                CheckStatus::L7Sts,
                Some(500),
                "Internal Server Error",
                Some(2)
            ),
            "reason: Layer7 wrong status, code: 500, info: \"Internal Server Error\", check duration: 2ms"
        );
    }

    #[test]
    fn expect_value_matching() {
        let e = Expect {
            negate: false,
            kind: ExpectKind::Status(vec![(200, 299)]),
        };
        assert!(matches!(e.kind, ExpectKind::Status(_)));
    }
}
