//! The typed configuration model: what a `haproxy.cfg` means once parsed and
//! validated. Pure data; the routing layer compiles it into a snapshot.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::acl::{AclDef, Condition};

/// Where a statement was written: the original file and line, never a line
/// of some merged text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: Arc<str>,
    pub line: u32,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub global: Global,
    /// Frontends, backends and listens in declaration order.
    pub proxies: Vec<Proxy>,
}

impl Config {
    pub fn proxy(&self, name: &str, want_backend: bool) -> Option<&Proxy> {
        self.proxies.iter().find(|p| {
            p.name == name
                && if want_backend {
                    p.kind.has_backend()
                } else {
                    p.kind.has_frontend()
                }
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Global {
    pub maxconn: Option<u32>,
    pub nbthread: Option<u32>,
    pub stats_sockets: Vec<StatsSocket>,
    /// `stats timeout`: idle timeout of a CLI connection (default 10s).
    pub stats_timeout: Option<Duration>,
    pub daemon: bool,
    pub pidfile: Option<PathBuf>,
    pub node: Option<String>,
    pub description: Option<String>,
    /// `zero-warning`: warnings make the configuration fail (as -dW).
    pub zero_warning: bool,
    /// `tune.bufsize` (default 16384) and `tune.maxrewrite` (default 1024):
    /// a message head may use the buffer minus the rewrite reserve.
    pub tune_bufsize: Option<u32>,
    pub tune_maxrewrite: Option<u32>,
}

impl Global {
    pub const DEFAULT_BUFSIZE: u32 = 16384;
    pub const DEFAULT_MAXREWRITE: u32 = 1024;

    /// The largest message head accepted: bufsize - maxrewrite, where
    /// HAProxy caps maxrewrite at half the buffer.
    pub fn max_head(&self) -> usize {
        let bufsize = self.tune_bufsize.unwrap_or(Self::DEFAULT_BUFSIZE);
        let rewrite = self
            .tune_maxrewrite
            .unwrap_or(Self::DEFAULT_MAXREWRITE)
            .min(bufsize / 2);
        (bufsize - rewrite) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CliLevel {
    User,
    #[default]
    Operator,
    Admin,
}

impl CliLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            CliLevel::User => "user",
            CliLevel::Operator => "operator",
            CliLevel::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StatsSocket {
    pub path: PathBuf,
    /// `mode <octal>` for the UNIX socket file.
    pub mode: Option<u32>,
    pub level: CliLevel,
    pub loc: Loc,
    /// Set for TCP sockets (`ipv4@host:port`, `ipv6@...`); `path` then
    /// holds the address as written.
    pub tcp: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    Frontend,
    Backend,
    Listen,
}

impl ProxyKind {
    pub fn has_frontend(self) -> bool {
        matches!(self, ProxyKind::Frontend | ProxyKind::Listen)
    }
    pub fn has_backend(self) -> bool {
        matches!(self, ProxyKind::Backend | ProxyKind::Listen)
    }
    pub fn keyword(self) -> &'static str {
        match self {
            ProxyKind::Frontend => "frontend",
            ProxyKind::Backend => "backend",
            ProxyKind::Listen => "listen",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// HAProxy's default when no `mode` is given.
    #[default]
    Tcp,
    Http,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Tcp => "tcp",
            Mode::Http => "http",
        }
    }
}

/// Timeouts as configured; `None` = not set (HAProxy treats that as infinite
/// and warns for client/server/connect).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub client: Option<Duration>,
    pub server: Option<Duration>,
    pub connect: Option<Duration>,
    pub queue: Option<Duration>,
    pub http_request: Option<Duration>,
    pub http_keep_alive: Option<Duration>,
    pub check: Option<Duration>,
    pub tunnel: Option<Duration>,
}

impl Timeouts {
    /// `timeout queue` falls back to `timeout connect` (HAProxy rule).
    pub fn queue_or_connect(&self) -> Option<Duration> {
        self.queue.or(self.connect)
    }
    /// `timeout http-keep-alive` falls back to http-request, then client.
    pub fn keep_alive(&self) -> Option<Duration> {
        self.http_keep_alive.or(self.http_request).or(self.client)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Balance {
    #[default]
    RoundRobin,
}

impl Balance {
    pub fn as_str(self) -> &'static str {
        match self {
            Balance::RoundRobin => "roundrobin",
        }
    }
}

/// `http-reuse` policy for idle server connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpReuse {
    Never,
    #[default]
    Safe,
    Aggressive,
    Always,
}

/// Connection handling modes (`option http-keep-alive` etc.).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpConnMode {
    #[default]
    KeepAlive,
    ServerClose,
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsPage {
    /// URI prefix; any request whose URI begins with it is answered by the
    /// stats page.
    pub uri: String,
}

impl StatsPage {
    pub const DEFAULT_URI: &'static str = "/haproxy?stats";
}

#[derive(Debug, Clone)]
pub struct Bind {
    /// The address as written (for messages).
    pub text: String,
    /// Resolved addresses (a host name may give several).
    pub addrs: Vec<SocketAddr>,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub enum HttpRequestAction {
    /// `http-request return status <code> [content-type <t>] [string <s>]`
    Return {
        status: u16,
        content_type: Option<String>,
        body: Option<String>,
    },
    /// `http-request deny [deny_status <code>]`
    Deny { status: u16 },
}

#[derive(Debug, Clone)]
pub struct HttpRequestRule {
    pub action: HttpRequestAction,
    pub cond: Option<Condition>,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub struct UseBackend {
    pub backend: String,
    pub cond: Condition,
    pub loc: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckParams {
    pub inter: Duration,
    pub rise: u32,
    pub fall: u32,
}

impl Default for CheckParams {
    fn default() -> Self {
        CheckParams {
            inter: Duration::from_secs(2),
            rise: 2,
            fall: 3,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    /// `host:port` as written.
    pub addr_text: String,
    /// Resolved at start-up.
    pub addr: SocketAddr,
    pub weight: u32,
    /// 0 = unlimited.
    pub maxconn: u32,
    /// `check` given: health checks enabled with these parameters.
    pub check: Option<CheckParams>,
    pub loc: Loc,
}

#[derive(Debug, Clone)]
pub struct Proxy {
    pub name: String,
    pub kind: ProxyKind,
    pub loc: Loc,
    pub mode: Mode,
    pub timeouts: Timeouts,
    pub balance: Balance,
    /// Frontend `maxconn` (defaults to the global one).
    pub maxconn: Option<u32>,
    pub retries: u32,
    pub http_reuse: HttpReuse,
    pub conn_mode: HttpConnMode,
    pub stats: Option<StatsPage>,
    pub binds: Vec<Bind>,
    /// ACL definitions in order; a repeated name adds patterns (ORed).
    pub acls: Vec<AclDef>,
    pub http_request: Vec<HttpRequestRule>,
    pub use_backends: Vec<UseBackend>,
    pub default_backend: Option<(String, Loc)>,
    pub servers: Vec<Server>,
}

impl Proxy {
    pub fn new(name: String, kind: ProxyKind, loc: Loc) -> Self {
        Proxy {
            name,
            kind,
            loc,
            mode: Mode::default(),
            timeouts: Timeouts::default(),
            balance: Balance::default(),
            maxconn: None,
            retries: 3,
            http_reuse: HttpReuse::default(),
            conn_mode: HttpConnMode::default(),
            stats: None,
            binds: Vec::new(),
            acls: Vec::new(),
            http_request: Vec::new(),
            use_backends: Vec::new(),
            default_backend: None,
            servers: Vec::new(),
        }
    }
}
