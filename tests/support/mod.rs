//! Test harness shared by the integration tests.
//!
//! * [`Listen`] / [`Port`]: where a test's frontends listen. A `Listen` is a
//!   socket the test binds and hands to sluice as `bind fd@N`; a `Port` is a
//!   number the test holds bound (never listening) for sluice to bind, when
//!   the config must name an address. Never a number picked then released:
//!   another test could get it meanwhile.
//! * [`Sluice`]: runs the built binary on a config (written to a private temp
//!   dir), passes it the config's [`Listen`]s, waits until every `bind`
//!   address and `stats socket` of the config accepts connections, kills the
//!   process on drop.
//! * [`Backend`]: a small real HTTP/1.1 server (hyper) answering with its own
//!   name (body `<name>\n`, header `x-backend: <name>`), counting requests and
//!   concurrency, optionally slow or gated, killable and restartable on the
//!   same port.
//! * [`HttpConn`]: a raw `TcpStream` HTTP/1.1 client (keep-alive aware) so the
//!   tests see the bytes on the wire.
//! * [`cli`] / [`socat`] / [`Csv`]: the stats socket, as users drive it.
//!
//! Everything waits on observable readiness with deadlines, never on fixed
//! sleeps.

#![allow(dead_code)]

pub mod dnsmasq;
pub mod fuzz;
pub mod haproxy;
pub mod raw;
pub mod syslog;
pub mod ws;

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Read;
use std::net::{SocketAddr, TcpListener as StdListener, TcpStream as StdStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

/// The binary under test: the crate's `sluice`, or `$SLUICE_TEST_BIN` (e.g.
/// `/usr/sbin/haproxy`, to check the tests' expectations against the real
/// thing where configs are compatible).
pub fn bin() -> String {
    std::env::var("SLUICE_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sluice").to_string())
}

/// Passes descriptors to `cmd`'s child at the numbers given, as systemd
/// does: `(ours, theirs)` makes our `ours` its inheritable `theirs`. Every
/// other descriptor from 3 to 15 is closed in the child, so low numbers are
/// exactly as given, whatever another test made inheritable meanwhile.
#[allow(dead_code)]
pub fn pass_fds(cmd: &mut Command, fds: Vec<(i32, i32)>) {
    pass_fds_keeping(cmd, fds, Vec::new());
}

/// Lets `cmd`'s child inherit these listening sockets under their own
/// numbers (what their `fd@N` text says), and nothing else of ours.
pub fn inherit(cmd: &mut Command, listens: &[&Listen]) {
    pass_fds_keeping(cmd, Vec::new(), listens.iter().map(|l| l.fd()).collect());
}

/// [`pass_fds`], and also `keep`: descriptors the child inherits under the
/// same number (a [`Listen`]'s `fd@N`). Only the child's copies lose
/// close-on-exec, so children of concurrent tests never inherit them.
fn pass_fds_keeping(cmd: &mut Command, fds: Vec<(i32, i32)>, keep: Vec<i32>) {
    use std::os::unix::process::CommandExt;
    assert!(fds.len() <= 8 && fds.iter().all(|&(_, t)| (3..=15).contains(&t)));
    assert!(
        fds.iter().all(|&(_, t)| !keep.contains(&t)),
        "harness: a passed descriptor would land on an inherited Listen"
    );
    // SAFETY: only async-signal-safe calls (fcntl, dup2, close) on
    // descriptors of the child; no allocation (both vectors were built
    // before the fork).
    unsafe {
        cmd.pre_exec(move || {
            // Out of the way first: a target may be another source.
            let mut high = [-1; 8];
            for (i, &(ours, _)) in fds.iter().enumerate() {
                high[i] = libc::fcntl(ours, libc::F_DUPFD_CLOEXEC, 100);
                if high[i] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if !fds.is_empty() {
                for n in 3..=15 {
                    if !keep.contains(&n) {
                        libc::close(n);
                    }
                }
            }
            for (i, &(_, theirs)) in fds.iter().enumerate() {
                // dup2 clears close-on-exec on the copy.
                if libc::dup2(high[i], theirs) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for &fd in &keep {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// How long sluice may take to start listening.
pub const START_DEADLINE: Duration = Duration::from_secs(20);

/// HAProxy 2.6.12's exact `show stat` header (reference §1.3), without the
/// line feed.
pub const SHOW_STAT_HEADER: &str = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,hanafail,req_rate,req_rate_max,req_tot,cli_abrt,srv_abrt,comp_in,comp_out,comp_byp,comp_rsp,lastsess,last_chk,last_agt,qtime,ctime,rtime,ttime,agent_status,agent_code,agent_duration,check_desc,agent_desc,check_rise,check_fall,check_health,agent_rise,agent_fall,agent_health,addr,cookie,mode,algo,conn_rate,conn_rate_max,conn_tot,intercepted,dcon,dses,wrew,connect,reuse,cache_lookups,cache_hits,srv_icur,src_ilim,qtime_max,ctime_max,rtime_max,ttime_max,eint,idle_conn_cur,safe_conn_cur,used_conn_cur,need_conn_est,uweight,agg_server_status,agg_server_check_status,agg_check_status,-,ssl_sess,ssl_reused_sess,ssl_failed_handshake,h2_headers_rcvd,h2_data_rcvd,h2_settings_rcvd,h2_rst_stream_rcvd,h2_goaway_rcvd,h2_detected_conn_protocol_errors,h2_detected_strm_protocol_errors,h2_rst_stream_resp,h2_goaway_resp,h2_open_connections,h2_backend_open_streams,h2_total_connections,h2_backend_total_streams,h1_open_connections,h1_open_streams,h1_total_connections,h1_total_streams,h1_bytes_in,h1_bytes_out,h1_spliced_bytes_in,h1_spliced_bytes_out,";

/// HAProxy's built-in 503 body (reference §2.13), exactly 107 bytes.
pub const BODY_503: &str = "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n";

// ---------------------------------------------------------------------------
// Ports, temp dirs, waiting

/// Listening sockets of this test binary that a spawned process may
/// inherit, by descriptor, with their addresses: how the harness finds the
/// `fd@N` of a config and what to wait for.
static LISTENS: Mutex<Vec<(RawFd, SocketAddr)>> = Mutex::new(Vec::new());

fn listen_addr(fd: RawFd) -> Option<SocketAddr> {
    let held = LISTENS.lock().unwrap_or_else(|e| e.into_inner());
    held.iter().find(|(f, _)| *f == fd).map(|(_, a)| *a)
}

/// A socket listening on an ephemeral 127.0.0.1 port, bound by the test
/// and handed to sluice already listening: written into a config it reads
/// `fd@N`, and [`Sluice`] (or [`inherit`]) passes descriptor `N` to the
/// child. No other test can take the port in between, since it is never
/// free. The test keeps its copy (it never accepts on it): connections
/// only ever reach the process it was passed to.
pub struct Listen {
    listener: StdListener,
    addr: SocketAddr,
}

impl Listen {
    pub fn new() -> Listen {
        let listener = StdListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("local_addr of a bound listener");
        LISTENS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((listener.as_raw_fd(), addr));
        Listen { listener, addr }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn fd(&self) -> RawFd {
        self.listener.as_raw_fd()
    }
}

/// How many connections wait in the accept queue of listening socket `fd`
/// (TCP_INFO's `tcpi_unacked`, for a listener).
fn accept_queue(fd: RawFd) -> std::io::Result<u32> {
    // SAFETY: getsockopt on an open descriptor, into a zeroed tcp_info of
    // the size given.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(info.tcpi_unacked)
    }
}

/// The TCP state (`TCP_ESTABLISHED`, `TCP_FIN_WAIT2`...) of the socket
/// `fd` (TCP_INFO's `tcpi_state`).
pub fn tcp_state(fd: RawFd) -> u8 {
    // SAFETY: getsockopt on an open descriptor, into a zeroed tcp_info of
    // the size given.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        if rc != 0 { 0 } else { info.tcpi_state }
    }
}

/// Whether the process a [`Listen`] was passed to accepts on it: a probe
/// connection (kept in `probes` between calls, until taken) has left the
/// accept queue.
/// The test never accepts on its copy, so only that process can take it.
fn probe_taken(probes: &mut HashMap<RawFd, StdStream>, fd: RawFd, addr: SocketAddr) -> bool {
    if let std::collections::hash_map::Entry::Vacant(e) = probes.entry(fd) {
        match StdStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(c) => {
                e.insert(c);
            }
            Err(_) => return false,
        }
    }
    let taken = accept_queue(fd).is_ok_and(|n| n == 0);
    if taken {
        // Closed at once: under a small `maxconn` the probe holds a slot
        // another listener's probe may be waiting for.
        probes.remove(&fd);
    }
    taken
}

impl Listen {
    /// Whether the process serving this socket has taken every connection
    /// made to it off its accept queue.
    pub fn all_accepted(&self) -> bool {
        accept_queue(self.fd()).is_ok_and(|n| n == 0)
    }

    /// How many connections made to this socket wait in its accept queue.
    pub fn queued(&self) -> u32 {
        accept_queue(self.fd()).unwrap_or(0)
    }

    /// Waits until `child`, given this socket, accepts on it (see
    /// [`Ready::Inherited`]); panics if it exits first or after
    /// [`START_DEADLINE`].
    pub fn wait_accepting(&self, child: &mut Child) {
        let end = Instant::now() + START_DEADLINE;
        let mut probes = HashMap::new();
        while !probe_taken(&mut probes, self.fd(), self.addr) {
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "the process exited ({st}) before accepting on {}",
                    self.addr
                );
            }
            assert!(
                Instant::now() < end,
                "nothing accepted on {} within {START_DEADLINE:?}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Default for Listen {
    fn default() -> Self {
        Listen::new()
    }
}

/// `fd@N`, the `bind` address of the socket.
impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fd@{}", self.fd())
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        // Unregistered before the descriptor closes (the fields drop after
        // this): its number may be reused at once by another test.
        let fd = self.fd();
        LISTENS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(f, _)| *f != fd);
    }
}

/// `n` [`Listen`]s.
pub fn listens(n: usize) -> Vec<Listen> {
    (0..n).map(|_| Listen::new()).collect()
}

/// A 127.0.0.1 port held for the test's life without listening: bound
/// (SO_REUSEADDR) so the kernel gives it to no other socket, neither an
/// ephemeral bind nor an outgoing connection, while a process that binds
/// the number itself with SO_REUSEADDR (sluice, haproxy, a backend's
/// restart) still can. For the few tests that need a number before anything
/// listens (a config's address across a reload or an upgrade, a refused
/// port, an address named in a message); connections to it are refused
/// until something listens.
pub struct Port {
    _sock: socket2::Socket,
    addr: SocketAddr,
}

impl Port {
    pub fn new() -> Port {
        use socket2::{Domain, Socket, Type};
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
        sock.set_reuse_address(true).expect("SO_REUSEADDR");
        let any: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
        sock.bind(&any.into()).expect("bind 127.0.0.1:0");
        let addr = sock
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .expect("local_addr of a bound socket");
        Port { _sock: sock, addr }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Default for Port {
    fn default() -> Self {
        Port::new()
    }
}

/// The number alone, as the configs' `127.0.0.1:{port}` expect.
impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.addr.port())
    }
}

/// A held [`Port`] and its number: `let (_hold, port) = hold_port();`
/// keeps the port until the end of the scope (a shadowed `_hold` lives on).
pub fn hold_port() -> (Port, u16) {
    let p = Port::new();
    let n = p.port();
    (p, n)
}

/// `N` distinct held ports and their numbers.
pub fn hold_ports<const N: usize>() -> (Vec<Port>, [u16; N]) {
    let held: Vec<Port> = (0..N).map(|_| Port::new()).collect();
    let nums = std::array::from_fn(|i| held[i].port());
    (held, nums)
}

/// `n` distinct held ports and their numbers, `n` known at run time.
pub fn hold_port_vec(n: usize) -> (Vec<Port>, Vec<u16>) {
    let held: Vec<Port> = (0..n).map(|_| Port::new()).collect();
    let nums = held.iter().map(Port::port).collect();
    (held, nums)
}

/// A raw TCP server on an ephemeral 127.0.0.1 port: each accepted
/// connection is handed to `handler` in a task of its own.
pub async fn tcp_server<F, Fut>(handler: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(handler(s));
        }
    });
    addr
}

/// The start the reload tests share: an admin stats socket, HTTP defaults
/// (30 s client and server, 20 s queue) and frontend `fe` on `port` (a
/// [`Port`]'s: the reloads keep the address); the frontend's other lines follow.
pub fn reload_test_head(port: u16) -> String {
    format!(
        "global
    stats socket @DIR@/stats.sock level admin
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout queue 20s
frontend fe
    bind 127.0.0.1:{port}
"
    )
}

/// A private directory under the system temp dir, removed on drop. Its path
/// is kept short: UNIX socket paths are limited to 107 bytes.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let n = SEQ.fetch_add(1, SeqCst);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let path =
            std::env::temp_dir().join(format!("sluice-{tag}-{}-{n}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `text` to `<dir>/<name>` and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Polls `cond` every few milliseconds until it holds; panics with `what`
/// after `deadline`.
pub async fn wait_until<F, Fut>(deadline: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = Instant::now() + deadline;
    loop {
        if cond().await {
            return;
        }
        if Instant::now() >= end {
            panic!("timed out after {deadline:?} waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs a future with a deadline, panicking with `what` when it expires.
pub async fn within<T>(
    deadline: Duration,
    what: &str,
    fut: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout(deadline, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {deadline:?}: {what}"),
    }
}

// ---------------------------------------------------------------------------
// Running the binary

/// Output of a finished sluice run.
#[derive(Debug)]
pub struct RunOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Runs sluice with `args` in `cwd` to completion (killed and reported after
/// 30 s, so a binary that wrongly starts serving cannot hang the suite).
pub fn run_sluice(args: &[&str], cwd: Option<&Path>) -> RunOutput {
    let dir = TempDir::new("run");
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    if let Some(c) = cwd {
        cmd.current_dir(c);
    }
    let mut child = cmd.spawn().expect("spawn sluice");
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "sluice {args:?} did not exit within 30 s; stderr:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    RunOutput {
        status,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// Something that must accept connections before sluice counts as ready.
#[derive(Debug, Clone)]
pub enum Ready {
    Tcp(SocketAddr),
    Unix(PathBuf),
    /// A [`Listen`] (its descriptor here): it accepts connections from the
    /// start, so the process is ready once it takes them off its queue.
    Inherited(RawFd, SocketAddr),
    /// `abns@<name>`: a Linux abstract socket.
    Abns(String),
}

/// Connects to `abns@<name>` as HAProxy 2.6 names it: the name padded with
/// NULs to the whole `sun_path` (107 bytes after the leading NUL).
pub fn abns_connect(name: &str) -> std::io::Result<StdUnixStream> {
    StdUnixStream::connect_addr(&abns_addr(name))
}

/// The padded abstract address of `abns@<name>` (see [`abns_connect`]).
pub fn abns_addr(name: &str) -> std::os::unix::net::SocketAddr {
    use std::os::linux::net::SocketAddrExt;
    let mut padded = [0u8; 107];
    padded[..name.len()].copy_from_slice(name.as_bytes());
    std::os::unix::net::SocketAddr::from_abstract_name(padded).expect("abstract address")
}

/// A running sluice process, killed on drop.
pub struct Sluice {
    child: Child,
    pub dir: TempDir,
    pub cfg: PathBuf,
    stderr_path: PathBuf,
    ready: Vec<Ready>,
}

/// Builder for [`Sluice`].
pub struct SluiceBuilder {
    dir: TempDir,
    cfg: PathBuf,
    cfg_text: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    extra_ready: Vec<Ready>,
    cwd: Option<PathBuf>,
    fds: Vec<(i32, i32)>,
}

impl SluiceBuilder {
    /// Passes our descriptor `ours` to sluice as its descriptor `theirs`
    /// (see [`pass_fds`]).
    #[allow(dead_code)]
    pub fn pass_fd(mut self, ours: i32, theirs: i32) -> Self {
        self.fds.push((ours, theirs));
        self
    }

    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    pub fn ready(mut self, r: Ready) -> Self {
        self.extra_ready.push(r);
        self
    }

    /// The private temp dir (what `@DIR@` stands for).
    #[allow(dead_code)]
    pub fn dir_path(&self) -> &Path {
        self.dir.path()
    }

    pub fn cwd(mut self, p: &Path) -> Self {
        self.cwd = Some(p.to_path_buf());
        self
    }

    pub fn start(self) -> Sluice {
        let env: HashMap<String, String> = self.env.iter().cloned().collect();
        let mut ready = ready_targets(&self.cfg_text, &env);
        ready.extend(self.extra_ready);
        let stderr_path = self.dir.join("sluice.stderr");
        let mut cmd = Command::new(bin());
        cmd.arg("-f")
            .arg(&self.cfg)
            .arg("-d")
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(self.dir.join("sluice.stdout")).unwrap())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        if let Some(c) = &self.cwd {
            cmd.current_dir(c);
        }
        let keep = listen_fds(&self.cfg_text, &env);
        if !self.fds.is_empty() || !keep.is_empty() {
            pass_fds_keeping(&mut cmd, self.fds, keep);
        }
        let child = cmd.spawn().expect("spawn sluice");
        let mut s = Sluice {
            child,
            dir: self.dir,
            cfg: self.cfg,
            stderr_path,
            ready,
        };
        s.wait_ready();
        s
    }
}

impl Sluice {
    /// Writes `cfg` (with every `@DIR@` replaced by the private temp dir) to
    /// `<dir>/sluice.cfg` and prepares to run it.
    pub fn builder(cfg: &str) -> SluiceBuilder {
        let dir = TempDir::new("sl");
        let text = cfg.replace("@DIR@", dir.path().to_str().unwrap());
        let path = dir.write("sluice.cfg", &text);
        SluiceBuilder {
            dir,
            cfg: path,
            cfg_text: text,
            args: Vec::new(),
            env: Vec::new(),
            extra_ready: Vec::new(),
            cwd: None,
            fds: Vec::new(),
        }
    }

    /// Uses an existing config file instead (e.g. one in `conf/`).
    pub fn builder_file(path: &Path) -> SluiceBuilder {
        let dir = TempDir::new("sl");
        let text = std::fs::read_to_string(path).expect("read config");
        SluiceBuilder {
            dir,
            cfg: path.to_path_buf(),
            cfg_text: text,
            args: Vec::new(),
            env: Vec::new(),
            extra_ready: Vec::new(),
            cwd: None,
            fds: Vec::new(),
        }
    }

    /// `sluice -f <cfg> -d`, returned once every listener accepts.
    pub fn start(cfg: &str) -> Sluice {
        Self::builder(cfg).start()
    }

    /// Path of `name` inside the private temp dir (what `@DIR@/name` became).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Waits for the process to exit on its own, at most `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + deadline;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Panics if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            panic!("sluice exited ({st}); stderr:\n{}", self.stderr());
        }
    }

    fn wait_ready(&mut self) {
        assert!(
            !self.ready.is_empty(),
            "harness: nothing to wait for (no bind / stats socket found in the config)"
        );
        let end = Instant::now() + START_DEADLINE;
        let mut pending = self.ready.clone();
        let mut probes = HashMap::new();
        while !pending.is_empty() {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!(
                    "sluice exited ({st}) before listening on {pending:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            pending.retain(|r| match r {
                Ready::Tcp(a) => StdStream::connect_timeout(a, Duration::from_millis(200)).is_err(),
                Ready::Unix(p) => StdUnixStream::connect(p).is_err(),
                Ready::Inherited(fd, a) => !probe_taken(&mut probes, *fd, *a),
                Ready::Abns(n) => abns_connect(n).is_err(),
            });
            if pending.is_empty() {
                break;
            }
            if Instant::now() >= end {
                panic!(
                    "sluice not ready after {START_DEADLINE:?}: still not accepting on {pending:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The first `stats socket` path of the config.
    pub fn stats_socket(&self) -> PathBuf {
        self.ready
            .iter()
            .find_map(|r| match r {
                Ready::Unix(p) => Some(p.clone()),
                _ => None,
            })
            .expect("config has no stats socket")
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "---- sluice stderr ({}) ----\n{}",
                self.cfg.display(),
                self.stderr()
            );
        }
    }
}

/// Expands `${VAR}`, `${VAR-default}` and `$VAR` like the config lexer, for
/// the harness's own scan of listener addresses.
fn expand_env(word: &str, env: &HashMap<String, String>) -> String {
    let lookup = |k: &str| env.get(k).cloned().or_else(|| std::env::var(k).ok());
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix('{') {
            let close = r.find('}').unwrap_or(r.len());
            let inner = &r[..close];
            let (name, default) = match inner.find('-') {
                Some(d) => (&inner[..d], Some(&inner[d + 1..])),
                None => (inner, None),
            };
            match (lookup(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {}
            }
            rest = &r[(close + 1).min(r.len())..];
        } else {
            let n = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push_str(&lookup(&rest[..n]).unwrap_or_default());
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

fn unquote(w: &str) -> String {
    w.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// The address words of every `bind` and `stats socket` of a config, each
/// `a,b` list split, `${VAR}`s expanded.
fn listener_words(cfg: &str, env: &HashMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for line in cfg.lines() {
        let line = line.split('#').next().unwrap_or("");
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| expand_env(&unquote(w), env))
            .collect();
        let addr_word = match words.as_slice() {
            [b, a, ..] if b == "bind" => a.clone(),
            [s, k, a, ..] if s == "stats" && k == "socket" => a.clone(),
            _ => continue,
        };
        out.extend(addr_word.split(',').map(str::to_string));
    }
    out
}

/// The [`Listen`]s a config names as `bind fd@N`: what its process must
/// inherit.
pub fn listen_fds(cfg: &str, env: &HashMap<String, String>) -> Vec<RawFd> {
    let mut out: Vec<RawFd> = listener_words(cfg, env)
        .iter()
        .filter_map(|a| a.strip_prefix("fd@")?.parse().ok())
        .filter(|&fd| listen_addr(fd).is_some())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Every `bind` address and `stats socket` of a config (a [`Listen`]'s
/// `fd@N` stands for its address).
pub fn ready_targets(cfg: &str, env: &HashMap<String, String>) -> Vec<Ready> {
    let mut out = Vec::new();
    for a in listener_words(cfg, env) {
        let a = a.strip_prefix("ipv4@").unwrap_or(&a);
        if let Some(fd) = a.strip_prefix("fd@") {
            if let Some(addr) = fd.parse().ok().and_then(listen_addr) {
                out.push(Ready::Inherited(fd.parse().unwrap_or(-1), addr));
            }
        } else if let Some(p) = a.strip_prefix("unix@") {
            out.push(Ready::Unix(PathBuf::from(p)));
        } else if let Some(n) = a.strip_prefix("abns@") {
            out.push(Ready::Abns(n.to_string()));
        } else if a.starts_with('/') {
            out.push(Ready::Unix(PathBuf::from(a)));
        } else if let Some((host, port)) = a.rsplit_once(':') {
            let host = match host {
                "" | "*" | "0.0.0.0" => "127.0.0.1",
                h => h,
            };
            if let Some(sa) = format!("{host}:{port}")
                .to_socket_addrs()
                .ok()
                .and_then(|mut it| it.find(|s| s.is_ipv4()))
            {
                out.push(Ready::Tcp(sa));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Backends

/// What a backend saw, in order, across all its connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A request arrived (method, path).
    Start(String, String),
    /// Its response is about to be sent (method, path).
    End(String, String),
}

struct BackendState {
    name: String,
    hits: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    delay_ms: AtomicU64,
    gated: AtomicBool,
    gate: Semaphore,
    events: Mutex<Vec<Event>>,
    bodies: Mutex<Vec<Vec<u8>>>,
}

/// A small real HTTP/1.1 server on 127.0.0.1 (keep-alive, hyper).
pub struct Backend {
    pub name: String,
    pub addr: SocketAddr,
    st: Arc<BackendState>,
    task: Option<JoinHandle<()>>,
    /// Holds the port while killed, so that a restart finds it free.
    _port: Port,
}

fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let sock = TcpSocket::new_v4()?;
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(1024)
}

impl Backend {
    /// Starts a backend on a fresh ephemeral port. Needs a tokio runtime.
    pub async fn start(name: &str) -> Backend {
        let port = Port::new();
        let addr = port.addr();
        let listener = listen(addr).expect("bind backend");
        let st = Arc::new(BackendState {
            name: name.to_string(),
            hits: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            delay_ms: AtomicU64::new(0),
            gated: AtomicBool::new(false),
            gate: Semaphore::new(0),
            events: Mutex::new(Vec::new()),
            bodies: Mutex::new(Vec::new()),
        });
        let task = tokio::spawn(serve(listener, st.clone()));
        Backend {
            name: name.to_string(),
            addr,
            st,
            task: Some(task),
            _port: port,
        }
    }

    /// `127.0.0.1:<port>` as written in a `server` line.
    pub fn hostport(&self) -> String {
        self.addr.to_string()
    }

    pub fn hits(&self) -> usize {
        self.st.hits.load(SeqCst)
    }

    pub fn in_flight(&self) -> usize {
        self.st.in_flight.load(SeqCst)
    }

    pub fn max_in_flight(&self) -> usize {
        self.st.max_in_flight.load(SeqCst)
    }

    pub fn events(&self) -> Vec<Event> {
        self.st.events.lock().unwrap().clone()
    }

    pub fn bodies(&self) -> Vec<Vec<u8>> {
        self.st.bodies.lock().unwrap().clone()
    }

    /// Every response waits this long before being sent.
    pub fn set_delay(&self, d: Duration) {
        self.st.delay_ms.store(d.as_millis() as u64, SeqCst);
    }

    /// While gated, each request waits for one [`Backend::release`] permit.
    pub fn set_gated(&self, on: bool) {
        self.st.gated.store(on, SeqCst);
    }

    /// Lets `n` gated requests answer.
    pub fn release(&self, n: usize) {
        self.st.gate.add_permits(n);
    }

    /// Waits until the backend has seen `Start` for `path`.
    pub async fn wait_started(&self, path: &str, deadline: Duration) {
        let st = self.st.clone();
        let what = format!("backend {} to receive {path}", self.name);
        wait_until(deadline, &what, || {
            let st = st.clone();
            async move {
                st.events
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|e| matches!(e, Event::Start(_, p) if p == path))
            }
        })
        .await;
    }

    /// Stops listening and drops every open connection (the port then
    /// refuses connections).
    pub async fn kill(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }

    /// Listens again on the same port (held all along: see [`Port`]).
    pub async fn restart(&mut self) {
        assert!(self.task.is_none(), "backend {} still running", self.name);
        let listener = listen(self.addr)
            .unwrap_or_else(|e| panic!("cannot rebind {} on {}: {e}", self.name, self.addr));
        self.task = Some(tokio::spawn(serve(listener, self.st.clone())));
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

async fn serve(listener: tokio::net::TcpListener, st: Arc<BackendState>) {
    // Connection tasks live in this set: aborting the accept task drops it,
    // which aborts (and closes) every connection.
    let mut conns = JoinSet::new();
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        let st = st.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| handle(req, st.clone()));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(sock), svc)
                .await;
        });
        while conns.try_join_next().is_some() {}
    }
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    st: Arc<BackendState>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    st.hits.fetch_add(1, SeqCst);
    let now = st.in_flight.fetch_add(1, SeqCst) + 1;
    st.max_in_flight.fetch_max(now, SeqCst);
    st.bodies.lock().unwrap().push(body);
    st.events
        .lock()
        .unwrap()
        .push(Event::Start(method.clone(), path.clone()));
    // `.../sleep/<ms>...`: this request alone waits that long.
    let own_delay = path
        .split_once("/sleep/")
        .map(|(_, rest)| rest)
        .and_then(|r| r.split(['/', '?']).next())
        .and_then(|ms| ms.parse::<u64>().ok());
    let delay = own_delay.unwrap_or_else(|| st.delay_ms.load(SeqCst));
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if st.gated.load(SeqCst) {
        st.gate.acquire().await.expect("gate").forget();
    }
    st.events
        .lock()
        .unwrap()
        .push(Event::End(method.clone(), path));
    st.in_flight.fetch_sub(1, SeqCst);
    let resp = hyper::Response::builder()
        .status(200)
        .header("x-backend", st.name.as_str())
        .header("x-method", method)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(format!("{}\n", st.name))))
        .unwrap();
    Ok(resp)
}

// ---------------------------------------------------------------------------
// HTTP client

/// A parsed HTTP/1.1 response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    /// Status line and header lines as received (CRLFs kept), up to and
    /// including the empty line.
    pub head: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `x-backend` header our test backends set.
    pub fn backend(&self) -> String {
        self.header("x-backend")
            .unwrap_or_else(|| {
                panic!(
                    "no x-backend header in response:\n{}{}",
                    self.head,
                    self.text()
                )
            })
            .to_string()
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// One client connection, reused for successive requests (keep-alive).
pub struct HttpConn {
    stream: BufReader<TcpStream>,
    pub addr: SocketAddr,
    closed: bool,
}

/// Deadline of any single request made through the helpers.
pub const REQ_DEADLINE: Duration = Duration::from_secs(15);

impl HttpConn {
    /// This end's address (where the proxy sees the client).
    #[allow(dead_code)]
    pub fn local_addr(&self) -> SocketAddr {
        self.stream.get_ref().local_addr().expect("local address")
    }

    pub async fn connect(addr: SocketAddr) -> HttpConn {
        let s = within(REQ_DEADLINE, "connect to sluice", TcpStream::connect(addr))
            .await
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        s.set_nodelay(true).unwrap();
        HttpConn {
            stream: BufReader::new(s),
            addr,
            closed: false,
        }
    }

    /// True once the server announced `connection: close` or closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Sends raw request bytes and reads one response.
    pub async fn raw(&mut self, req: &[u8], head_request: bool) -> std::io::Result<Response> {
        self.stream.get_mut().write_all(req).await?;
        let r = read_response(&mut self.stream, head_request).await;
        match &r {
            Ok(resp) if resp.closes() => self.closed = true,
            Err(_) => self.closed = true,
            _ => {}
        }
        r
    }

    /// `METHOD path HTTP/1.1` with a Host header and an optional body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> std::io::Result<Response> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\nuser-agent: sluice-tests\r\n",
            self.addr
        );
        if !body.is_empty() || matches!(method, "POST" | "PUT") {
            req.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.raw(&bytes, method == "HEAD").await
    }

    /// Like [`HttpConn::send`], panicking on I/O errors or after
    /// [`REQ_DEADLINE`].
    pub async fn req(&mut self, method: &str, path: &str, body: &[u8]) -> Response {
        let what = format!("{method} {path} via {}", self.addr);
        within(REQ_DEADLINE, &what, self.send(method, path, body))
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    pub async fn get(&mut self, path: &str) -> Response {
        self.req("GET", path, b"").await
    }
}

/// One request on a new connection.
pub async fn request(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Response {
    HttpConn::connect(addr).await.req(method, path, body).await
}

/// `GET path` on a new connection.
pub async fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, b"").await
}

/// Reads one response from any buffered stream (plain or TLS).
pub async fn read_response<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    head_request: bool,
) -> std::io::Result<Response> {
    use std::io::{Error, ErrorKind};
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).await?;
        if n == 0 {
            return Err(Error::new(
                ErrorKind::UnexpectedEof,
                format!("connection closed before end of response head; got {head:?}"),
            ));
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            if head.trim().is_empty() {
                head.clear();
                continue;
            }
            break;
        }
    }
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("bad status line {status_line:?}"),
        ));
    }
    let status: u16 = parts.next().and_then(|s| s.parse().ok()).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidData,
            format!("bad status line {status_line:?}"),
        )
    })?;
    let reason = parts.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    let find = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    let no_body = head_request || status < 200 || status == 204 || status == 304;
    if no_body {
    } else if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        loop {
            let mut size_line = String::new();
            if r.read_line(&mut size_line).await? == 0 {
                return Err(Error::new(ErrorKind::UnexpectedEof, "eof in chunk size"));
            }
            let size_hex = size_line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidData,
                    format!("bad chunk size {size_line:?}"),
                )
            })?;
            if size == 0 {
                // trailers until empty line
                loop {
                    let mut t = String::new();
                    if r.read_line(&mut t).await? == 0 || t == "\r\n" || t == "\n" {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).await?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).await?;
        }
    } else if let Some(cl) = find("content-length") {
        let n: usize = cl.parse().map_err(|_| {
            Error::new(ErrorKind::InvalidData, format!("bad content-length {cl:?}"))
        })?;
        body.resize(n, 0);
        r.read_exact(&mut body).await?;
    } else {
        r.read_to_end(&mut body).await?;
    }
    Ok(Response {
        status,
        reason,
        head,
        headers,
        body,
    })
}

/// Asserts that `r` is HAProxy's built-in 503, byte for byte in the body and
/// with its headers (reference §2.13).
pub fn assert_haproxy_503(r: &Response) {
    assert_eq!(r.status, 503, "expected 503, got:\n{}{}", r.head, r.text());
    assert!(
        r.head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "status line: {:?}",
        r.head
    );
    assert_eq!(r.text(), BODY_503, "503 body");
    assert_eq!(r.header("content-length"), Some("107"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("content-type"), Some("text/html"));
}

// ---------------------------------------------------------------------------
// Stats socket

/// Sends one command line over the UNIX stats socket and returns everything
/// sluice wrote until it closed the connection (non-interactive mode closes
/// after answering, reference §1.2).
pub async fn cli(path: &Path, cmd: &str) -> String {
    let what = format!("stats socket {} command {cmd:?}", path.display());
    within(Duration::from_secs(10), &what, async {
        let mut s = tokio::net::UnixStream::connect(path)
            .await
            .unwrap_or_else(|e| panic!("connect {}: {e}", path.display()));
        s.write_all(format!("{cmd}\n").as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    })
    .await
}

/// [`cli`] for tests that are not async (or that talk to haproxy's
/// socket from a blocking section): one command line on a new connection,
/// the whole reply.
pub fn cli_blocking(path: &Path, line: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut c = std::os::unix::net::UnixStream::connect(path).expect("connect to the CLI");
    c.write_all(format!("{line}\n").as_bytes()).expect("send");
    let mut out = Vec::new();
    c.read_to_end(&mut out).expect("reply");
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `socat` is on PATH.
pub fn have_socat() -> bool {
    Command::new("socat")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `echo "<cmd>" | socat unix-connect:<path> stdio`, as users do; `None` when
/// socat is not installed. Blocking: call through `spawn_blocking`.
pub fn socat(path: &Path, cmd: &str) -> Option<String> {
    if !have_socat() {
        return None;
    }
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("echo \"$1\" | socat unix-connect:\"$2\" stdio")
        .arg("sh")
        .arg(cmd)
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn socat");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "socat failed: {st}");
    Some(out)
}

/// A parsed `show stat` CSV.
#[derive(Debug, Clone)]
pub struct Csv {
    /// The header line as received (no line feed).
    pub header_line: String,
    pub names: Vec<String>,
    /// Raw data lines (no line feed).
    pub lines: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Splits one CSV line; a field is quoted only if it contains `,` or `"`.
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

impl Csv {
    /// Parses `show stat` output: a header line, data lines, then (CLI only)
    /// the empty terminating line.
    pub fn parse(text: &str) -> Csv {
        let mut lines = text.lines();
        let header_line = lines.next().unwrap_or("").to_string();
        let names = split_csv(header_line.strip_prefix("# ").unwrap_or(&header_line));
        let lines: Vec<String> = lines
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        let rows = lines.iter().map(|l| split_csv(l)).collect();
        Csv {
            header_line,
            names,
            lines,
            rows,
        }
    }

    pub fn col(&self, name: &str) -> usize {
        self.names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no column {name:?}"))
    }

    pub fn row(&self, px: &str, sv: &str) -> &Vec<String> {
        self.rows
            .iter()
            .find(|r| r.len() > 1 && r[0] == px && r[1] == sv)
            .unwrap_or_else(|| panic!("no row {px},{sv} in:\n{}", self.lines.join("\n")))
    }

    pub fn try_row(&self, px: &str, sv: &str) -> Option<&Vec<String>> {
        self.rows
            .iter()
            .find(|r| r.len() > 1 && r[0] == px && r[1] == sv)
    }

    /// Field `name` of row `px,sv`.
    pub fn get(&self, px: &str, sv: &str, name: &str) -> String {
        self.row(px, sv)[self.col(name)].clone()
    }

    /// Field `name` of row `px,sv` as a number (panics if empty / not one).
    pub fn num(&self, px: &str, sv: &str, name: &str) -> u64 {
        let v = self.get(px, sv, name);
        v.parse()
            .unwrap_or_else(|_| panic!("{px},{sv} {name} = {v:?} is not a number"))
    }
}

/// `show stat` over the socket, parsed. Panics on a reply that is not CSV.
pub async fn show_stat(path: &Path) -> Csv {
    let text = cli(path, "show stat").await;
    assert!(
        text.starts_with("# pxname,"),
        "show stat did not answer CSV:\n{text}"
    );
    Csv::parse(&text)
}

/// Polls `show stat` until server `px/sv` shows `status` with
/// `check_status` (10 s at most) and returns that CSV.
pub async fn wait_check(sock: &Path, px: &str, sv: &str, status: &str, check: &str) -> Csv {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let csv = show_stat(sock).await;
        let last = (csv.get(px, sv, "status"), csv.get(px, sv, "check_status"));
        if last.0 == status && last.1 == check {
            return csv;
        }
        assert!(
            Instant::now() < end,
            "{px}/{sv}: {last:?}, expected ({status}, {check})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `status` of server `px/sv`, or an explanatory placeholder when the socket
/// does not answer CSV (so that polling loops keep going until their
/// deadline).
pub async fn server_status(path: &Path, px: &str, sv: &str) -> String {
    let text = cli(path, "show stat").await;
    if !text.starts_with("# pxname,") {
        return format!("<no csv: {text:?}>");
    }
    let csv = Csv::parse(&text);
    match csv.try_row(px, sv) {
        Some(r) => r.get(csv.col("status")).cloned().unwrap_or_default(),
        None => "<no row>".to_string(),
    }
}

/// A listening socket that never accepts, with its backlog filled, so
/// further handshakes are dropped by the kernel (no SYN-ACK).
pub fn black_hole() -> (
    std::net::SocketAddr,
    Vec<std::net::TcpStream>,
    socket2::Socket,
) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    s.listen(0).unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    // Fill the accept queue: with backlog 0, a connection or two.
    let mut held = Vec::new();
    for _ in 0..4 {
        let c = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        c.set_nonblocking(true).unwrap();
        let _ = c.connect(&addr.into());
        held.push(std::net::TcpStream::from(c));
    }
    std::thread::sleep(Duration::from_millis(100));
    (addr, held, s)
}
