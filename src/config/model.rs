//! The typed configuration model: what a `haproxy.cfg` means once parsed and
//! validated. Pure data; the routing layer compiles it into a snapshot.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::acl::{AclDef, Condition};

pub(crate) use crate::config::table::{
    GpIndex, GptValue, IncGpc, KeyType, PeerLine, PeersListen, PeersSection, SetGpt, SrvKey,
    StickKind, StickRule, Stored, TableAction, TableDef, TrackRule,
};
pub(crate) use crate::loc::Loc;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub(crate) global: Global,
    /// Frontends, backends and listens in declaration order.
    pub(crate) proxies: Vec<Proxy>,
}

/// The global `master-worker` line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct MasterWorker {
    /// `no-exit-on-failure`: the master outlives a worker that dies.
    pub(crate) no_exit_on_failure: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Global {
    /// `lua-load`, `lua-prepend-path` and `tune.lua.*`.
    pub(crate) lua: LuaConf,
    pub(crate) maxconn: Option<u32>,
    pub(crate) nbthread: Option<u32>,
    pub(crate) stats_sockets: Vec<StatsSocket>,
    /// `stats timeout`: idle timeout of a CLI connection (default 10s).
    pub(crate) stats_timeout: Option<Duration>,
    pub(crate) daemon: bool,
    /// `master-worker [no-exit-on-failure]`: run as a master process that
    /// supervises the serving worker (as `-W`); the flag is whether the
    /// master stays when the worker dies.
    pub(crate) master_worker: Option<MasterWorker>,
    /// `mworker-max-reloads <n>`.
    pub(crate) mworker_max_reloads: Option<u32>,
    pub(crate) pidfile: Option<PathBuf>,
    pub(crate) node: Option<String>,
    pub(crate) description: Option<String>,
    /// `setenv`, `presetenv`, `unsetenv`, `resetenv`.
    pub(crate) env: crate::sys::env::EnvEdits,
    /// `spread-checks <0..50>`: each check's interval moved by up to this
    /// percentage either way, at random (0: exact intervals).
    pub(crate) spread_checks: u32,
    /// `max-spread-checks <delay>`: the first checks of all the servers
    /// start within this delay (their interval otherwise).
    pub(crate) max_spread_checks: Option<Duration>,
    /// `strict-limits`: a file descriptor limit that cannot be had makes
    /// the start fail.
    pub(crate) strict_limits: bool,
    /// `tune.http.logurilen`: the request line's bytes a log line shows
    /// (`%r`, and the `%HM`, `%HU`, `%HP`, `%HQ`, `%HV` read from them);
    /// 1024 when unset.
    pub(crate) log_uri_len: Option<usize>,
    /// `tune.http.maxhdr`: a request with more lines than this in its
    /// head (its request line counted) is answered 400; unset, the
    /// parser's own bound (100 fields, HAProxy's default of 101 lines).
    pub(crate) max_hdr: Option<u32>,
    /// `h1-accept-payload-with-any-method`: an HTTP/1.0 GET, HEAD or
    /// DELETE request may have a body (else it is answered 413).
    pub(crate) h1_accept_payload_with_any_method: bool,
    /// `h2-workaround-bogus-websocket-clients`: HTTP/2 clients are not
    /// told of extended CONNECT (RFC 8441), so that they open WebSockets
    /// over HTTP/1.1.
    pub(crate) h2_no_websocket: bool,
    /// `expose-experimental-directives`: HAProxy's experimental keywords
    /// (`http-request normalize-uri`) are accepted after it.
    pub(crate) expose_experimental: bool,
    /// `unix-bind [prefix <p>] [mode <m>] [user|uid ...] [group|gid ...]`:
    /// what the UNIX `bind` lines after it take when they say nothing.
    pub(crate) unix_bind: UnixBindDefaults,
    /// `zero-warning`: warnings make the configuration fail (as -dW).
    pub(crate) zero_warning: bool,
    /// `log` targets and `log-tag`.
    pub(crate) log: crate::config::log::GlobalLog,
    /// `hard-stop-after <time>`: how long a soft stop (or connections of
    /// a replaced generation) may last.
    pub(crate) hard_stop_after: Option<Duration>,
    /// `user` / `uid`, `group` / `gid`: dropped to after binding.
    pub(crate) user: Option<IdSpec>,
    pub(crate) group: Option<IdSpec>,
    /// Where `user` / `group` named their id (the look-up's messages
    /// point there).
    pub(crate) user_loc: Option<Loc>,
    pub(crate) group_loc: Option<Loc>,
    /// `chroot <dir>`.
    pub(crate) chroot: Option<PathBuf>,
    /// `ulimit-n <n>`.
    pub(crate) ulimit_n: Option<u32>,
    /// `cpu-map` lines, in order.
    pub(crate) cpu_map: Vec<CpuMap>,
    /// `tune.bufsize` (default 16384) and `tune.maxrewrite` (default 1024):
    /// a message head may use the buffer minus the rewrite reserve.
    pub(crate) tune_bufsize: Option<u32>,
    pub(crate) tune_maxrewrite: Option<u32>,
    /// `tune.vars.*-max-size`.
    pub(crate) vars_limits: crate::sample::vars::Limits,
    /// `userlist` sections, in order.
    pub(crate) userlists: Vec<crate::sample::auth::Userlist>,
    /// `resolvers` sections, in order.
    pub(crate) resolvers: Vec<ResolversSection>,
    /// `cache` sections, in order.
    pub(crate) caches: Vec<CacheSection>,
    /// `external-check`: `option external-check` may run programs.
    pub(crate) external_check: bool,
    /// `insecure-fork-wanted`.
    pub(crate) insecure_fork_wanted: bool,
    /// `fcgi-app` sections, in order.
    pub(crate) fcgi_apps: Vec<crate::config::fcgi::FcgiApp>,
    /// `mailers` sections, in order.
    pub(crate) mailers: Vec<crate::config::mailers::MailersSection>,
    /// `ring` sections, in order.
    pub(crate) rings: Vec<crate::config::ring::RingSection>,
    /// `fd-hard-limit <n>`: the most file descriptors sluice asks for
    /// when it sizes the limit itself (no `ulimit-n`).
    pub(crate) fd_hard_limit: Option<u64>,
    /// `maxconnrate <n>`, `maxsessrate <n>`: the connections and sessions
    /// the process accepts per second at most (0: no limit).
    pub(crate) maxconnrate: Option<u32>,
    pub(crate) maxsessrate: Option<u32>,
    /// `pp2-never-send-local`: see `upstream::check::PP2_NEVER_LOCAL`.
    pub(crate) pp2_never_send_local: bool,
    /// `set-dumpable`: the process may dump core after changing user.
    pub(crate) set_dumpable: bool,
    /// `noreuseport`: listeners are bound without SO_REUSEPORT.
    pub(crate) noreuseport: bool,
    /// `grace <time>`: how long listeners keep accepting after a stop
    /// signal, before the soft stop begins.
    pub(crate) grace: Option<Duration>,
    /// `tune.rcvbuf.client`, `tune.sndbuf.client`, `tune.rcvbuf.server`,
    /// `tune.sndbuf.server`: SO_RCVBUF and SO_SNDBUF of the client and
    /// server sockets.
    pub(crate) sockbufs: SockBufs,
    /// `tune.ssl.cachesize <n>`: sessions a TLS listener keeps for
    /// resumption.
    pub(crate) ssl_cachesize: Option<u32>,
    /// `tune.ssl.hard-maxrecord <n>`: the most plaintext bytes a TLS
    /// record sluice sends carries.
    pub(crate) ssl_hard_maxrecord: Option<u32>,
    /// `log-forward` sections, in order.
    pub(crate) log_forwards: Vec<crate::config::log_forward::LogForward>,
    /// `tune.comp.maxlevel` (1 to 9; HAProxy's default is 1).
    pub(crate) comp_maxlevel: Option<u32>,
    /// `server-state-file` and `server-state-base`: where the servers'
    /// state saved from `show servers state` is read at start-up.
    pub(crate) server_state_file: Option<String>,
    pub(crate) server_state_base: Option<String>,
    /// The pattern files and ACL lines' patterns the configuration read,
    /// for the CLI's `map` and `acl` commands.
    pub(crate) pat_refs: crate::sample::patref::PatRefs,
    /// `nosplice`, `tune.pipesize`, `maxpipes`.
    pub(crate) splice: crate::wire::splice::Tune,
    /// TLS defaults: `ssl-default-bind-options` (words, applied before
    /// each bind line's own), `ssl-default-bind-ciphers` /
    /// `-ciphersuites`, their `server` twins, `ssl-server-verify`,
    /// `crt-base` / `ca-base`.
    pub(crate) ssl: GlobalSsl,
    /// `tune.h2.*`: the HTTP/2 settings sluice announces.
    pub(crate) h2: H2Tune,
    /// `h1-case-adjust <from> <to>` lines, then the lines of the last
    /// `h1-case-adjust-file` (read once the configuration is parsed, as
    /// HAProxy reads it): the spelling each name (the key, compared
    /// exactly with the lower-case name) is sent with to the HTTP/1 peers
    /// of the proxies that ask for it.
    pub(crate) h1_case_adjust: Vec<(String, String)>,
    /// The last `h1-case-adjust-file`.
    pub(crate) h1_case_adjust_file: Option<PathBuf>,
    /// `peers` sections, in order.
    pub(crate) peers: Vec<PeersSection>,
    /// Every stick table's name, in declaration order (proxies' and
    /// `peers` sections' alike).
    pub(crate) table_order: Vec<String>,
    /// `localpeer <name>`: this process's name among the peers (the
    /// host's name without it).
    pub(crate) localpeer: Option<String>,
}

/// `tune.h2.header-table-size`, `tune.h2.initial-window-size`,
/// `tune.h2.max-concurrent-streams`, `tune.h2.max-frame-size` (None: the
/// HAProxy 2.6 default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct H2Tune {
    pub(crate) header_table_size: Option<u32>,
    pub(crate) initial_window_size: Option<u32>,
    pub(crate) max_concurrent_streams: Option<u32>,
    pub(crate) max_frame_size: Option<u32>,
}

impl H2Tune {
    pub(crate) const DEFAULT_HEADER_TABLE_SIZE: u32 = 4096;
    pub(crate) const DEFAULT_INITIAL_WINDOW_SIZE: u32 = 65535;
    pub(crate) const DEFAULT_MAX_CONCURRENT_STREAMS: u32 = 100;
    pub(crate) const DEFAULT_MAX_FRAME_SIZE: u32 = 16384;
}

/// `bind ... proto <name>`: the protocol a listener speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum BindProto {
    /// HTTP/1, or HTTP/2 when the client starts with its preface (or
    /// picks `h2` by ALPN), as HAProxy does without `proto`.
    #[default]
    Auto,
    /// `proto h1`: HTTP/1 only.
    H1,
    /// `proto h2`: HTTP/2 only (cleartext: with prior knowledge).
    H2,
}

/// `bind ... v6only|v4v6`: whether an IPv6 listener also takes IPv4
/// connections (IPv4-mapped addresses). Meaningless on IPv4 addresses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum BindV6 {
    /// Neither: the system's `net.ipv6.bindv6only` decides (normally 0, so
    /// `bind :::80` takes IPv4 too), as HAProxy leaves the option alone.
    #[default]
    System,
    /// `v6only` (wins over `v4v6` when both are given, as in HAProxy).
    V6Only,
    /// `v4v6`: IPv4 too, whatever the system's default.
    V4V6,
}

/// The TLS defaults of the global section.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GlobalSsl {
    pub(crate) bind_options: Vec<String>,
    pub(crate) bind_ciphers: Option<String>,
    /// `ssl-default-bind-curves`: the `curves` of bind lines without.
    pub(crate) bind_curves: Option<String>,
    pub(crate) bind_ciphersuites: Option<String>,
    pub(crate) server_options: Vec<String>,
    pub(crate) server_ciphers: Option<String>,
    pub(crate) server_ciphersuites: Option<String>,
    /// `ssl-server-verify none`: servers are not verified by default.
    pub(crate) server_verify_none: bool,
    pub(crate) crt_base: Option<PathBuf>,
    pub(crate) ca_base: Option<PathBuf>,
    /// `tune.ssl.capture-buffer-size`: the bytes of each TLS client's
    /// ClientHello kept for the `ssl_fc_*list` fetches (0: none kept).
    pub(crate) capture_size: u32,
}

/// The socket buffer sizes of `tune.rcvbuf.*` and `tune.sndbuf.*`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SockBufs {
    pub(crate) rcv_client: Option<u32>,
    pub(crate) snd_client: Option<u32>,
    pub(crate) rcv_server: Option<u32>,
    pub(crate) snd_server: Option<u32>,
}

impl Global {
    pub(crate) const DEFAULT_BUFSIZE: u32 = 16384;
    pub(crate) const DEFAULT_MAXREWRITE: u32 = 1024;

    /// How relays move bytes (`nosplice`, `tune.pipesize`, `maxpipes`).
    pub(crate) fn splice(&self) -> crate::wire::splice::Tune {
        self.splice
    }

    /// `tune.bufsize`.
    pub(crate) fn bufsize(&self) -> usize {
        self.tune_bufsize.unwrap_or(Self::DEFAULT_BUFSIZE) as usize
    }

    /// The largest message head accepted: bufsize - maxrewrite, where
    /// HAProxy caps maxrewrite at half the buffer.
    pub(crate) fn max_head(&self) -> usize {
        let bufsize = self.tune_bufsize.unwrap_or(Self::DEFAULT_BUFSIZE);
        let rewrite = self
            .tune_maxrewrite
            .unwrap_or(Self::DEFAULT_MAXREWRITE)
            .min(bufsize / 2);
        (bufsize - rewrite) as usize
    }
}

/// A user or group, by name (resolved at start-up) or by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdSpec {
    Name(String),
    Id(u32),
}

/// One `cpu-map [auto:]<group>[/<threads>] <cpus>...` line: which threads
/// (1-based; `None` = all) get which CPUs; with `auto`, the threads and
/// CPUs are paired one to one in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CpuMap {
    pub(crate) auto: bool,
    pub(crate) threads: Option<Vec<u32>>,
    pub(crate) cpus: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CliLevel {
    User,
    #[default]
    Operator,
    Admin,
}

impl CliLevel {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CliLevel::User => "user",
            CliLevel::Operator => "operator",
            CliLevel::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatsSocket {
    pub(crate) path: PathBuf,
    /// `mode <octal>` for the UNIX socket file.
    pub(crate) mode: Option<u32>,
    /// `uid <n>` / `user <name>` and `gid <n>` / `group <name>`: the owner
    /// given to the UNIX socket file after bind (names resolved when the
    /// configuration is parsed, as HAProxy does). `None` leaves it as is.
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
    pub(crate) level: CliLevel,
    pub(crate) loc: Loc,
    /// Set for TCP sockets (`ipv4@host:port`, `ipv6@...`); `path` then
    /// holds the address as written.
    pub(crate) tcp: Option<SocketAddr>,
    /// `expose-fd listeners`: the listening sockets can be taken over by a
    /// new process started with `-x <this socket>`.
    pub(crate) expose_fd: bool,
    /// `fd@<n>`: an inherited listening socket (UNIX or TCP);
    /// `addr::UNRESOLVED_FD` under `-c` for a name it cannot resolve.
    pub(crate) fd: Option<i32>,
    /// `v6only` / `v4v6` of a TCP socket.
    pub(crate) v6: BindV6,
    /// `abns@<name>`: a Linux abstract UNIX socket, `path` holding the name.
    pub(crate) abns: bool,
}

impl StatsSocket {
    /// The socket's address as `HAPROXY_CLI` names it: `ipv4@<addr>:<port>`,
    /// `ipv6@...`, `fd@<n>`, `abns@<name>` or `unix@<path>`.
    pub(crate) fn cli_address(&self) -> String {
        match (self.tcp, self.fd) {
            (Some(addr @ SocketAddr::V4(_)), _) => format!("ipv4@{addr}"),
            (Some(addr), _) => format!("ipv6@{addr}"),
            (None, Some(fd)) => format!("fd@{fd}"),
            (None, None) if self.abns => format!("abns@{}", self.path.display()),
            (None, None) => {
                let p = self.path.to_string_lossy();
                let p = p.strip_prefix("unix@").unwrap_or(&p);
                format!("unix@{p}")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProxyKind {
    Frontend,
    Backend,
    Listen,
}

impl ProxyKind {
    pub(crate) fn has_frontend(self) -> bool {
        matches!(self, ProxyKind::Frontend | ProxyKind::Listen)
    }
    pub(crate) fn has_backend(self) -> bool {
        matches!(self, ProxyKind::Backend | ProxyKind::Listen)
    }
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            ProxyKind::Frontend => "frontend",
            ProxyKind::Backend => "backend",
            ProxyKind::Listen => "listen",
        }
    }
}

/// A frontend's capture slots (`%hr`, `%hs`, `capture.req.hdr(<n>)`), in
/// declaration order: for `capture request|response header`, the header
/// name (lower case); an empty name for a slot that rules fill
/// (`declare capture`, `http-request capture ... len`); and the most bytes
/// kept of each value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct HeaderCaptures {
    pub(crate) request: Vec<(String, usize)>,
    pub(crate) response: Vec<(String, usize)>,
}

/// Which sides get SO_KEEPALIVE (`option tcpka|clitcpka|srvtcpka`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TcpKeepAlive {
    pub(crate) client: bool,
    pub(crate) server: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// HAProxy's default when no `mode` is given.
    #[default]
    Tcp,
    Http,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Tcp => "tcp",
            Mode::Http => "http",
        }
    }
}

/// Timeouts as configured; `None` = not set (HAProxy treats that as infinite
/// and warns for client/server/connect).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub(crate) client: Option<Duration>,
    pub(crate) server: Option<Duration>,
    pub(crate) connect: Option<Duration>,
    pub(crate) queue: Option<Duration>,
    pub(crate) http_request: Option<Duration>,
    pub(crate) http_keep_alive: Option<Duration>,
    pub(crate) check: Option<Duration>,
    pub(crate) tunnel: Option<Duration>,
    /// `timeout tarpit` (falls back to `timeout connect`).
    pub(crate) tarpit: Option<Duration>,
    /// `timeout client-fin`, `timeout server-fin`: a side's inactivity
    /// once one direction of a tunnel has ended (else the usual one).
    pub(crate) client_fin: Option<Duration>,
    pub(crate) server_fin: Option<Duration>,
}

impl Timeouts {
    /// `timeout queue` falls back to `timeout connect` (HAProxy rule).
    pub(crate) fn queue_or_connect(&self) -> Option<Duration> {
        self.queue.or(self.connect)
    }
    /// `timeout http-keep-alive` falls back to http-request, then client.
    pub(crate) fn keep_alive(&self) -> Option<Duration> {
        self.http_keep_alive.or(self.http_request).or(self.client)
    }
}

/// `balance <algorithm> [<arguments>]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Balance {
    #[default]
    RoundRobin,
    StaticRr,
    LeastConn,
    First,
    Source,
    /// `uri [len <n>] [depth <n>] [whole] [path-only]` (0 = no limit).
    Uri {
        len: u32,
        depth: u32,
        whole: bool,
        path_only: bool,
    },
    /// `url_param <name> [check_post]`.
    UrlParam {
        name: String,
        check_post: bool,
    },
    /// `hdr(<name>) [use_domain_only]`.
    Hdr {
        name: String,
        domain_only: bool,
    },
    /// `random[(<draws>)]`, 2 draws by default.
    Random {
        draws: u32,
    },
    /// `hash <expr>`: the bytes of a sample expression's value.
    Hash(crate::sample::Expr),
}

impl Balance {
    /// The `algo` column of `show stat`.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Balance::RoundRobin => "roundrobin",
            Balance::StaticRr => "static-rr",
            Balance::LeastConn => "leastconn",
            Balance::First => "first",
            Balance::Source => "source",
            Balance::Uri { .. } => "uri",
            Balance::UrlParam { .. } => "url_param",
            Balance::Hdr { .. } => "hdr",
            Balance::Random { .. } => "random",
            Balance::Hash(_) => "hash",
        }
    }

    /// Hash-based (the key decides the server).
    pub(crate) fn is_hash(&self) -> bool {
        matches!(
            self,
            Balance::Source
                | Balance::Uri { .. }
                | Balance::UrlParam { .. }
                | Balance::Hdr { .. }
                | Balance::Hash(_)
        )
    }
}

/// `hash-type` hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HashFn {
    #[default]
    Sdbm,
    Djb2,
    Wt6,
    Crc32,
}

/// `hash-type map-based|consistent [<function> [avalanche]]`. Without the
/// keyword: map-based sdbm; `consistent` alone adds avalanche.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HashType {
    pub(crate) consistent: bool,
    pub(crate) func: HashFn,
    pub(crate) avalanche: bool,
}

/// `retry-on`: the failures after which a request is tried again, as
/// HAProxy's `PR_RE_*` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryOn(pub(crate) u32);

impl RetryOn {
    pub(crate) const CONN_FAILURE: u32 = 1 << 0;
    pub(crate) const EMPTY_RESPONSE: u32 = 1 << 1;
    pub(crate) const JUNK_RESPONSE: u32 = 1 << 2;
    pub(crate) const RESPONSE_TIMEOUT: u32 = 1 << 3;
    pub(crate) const EARLY_ERROR: u32 = 1 << 4;
    /// Retryable statuses, one bit each after the failure bits.
    pub(crate) const STATUSES: [u16; 10] = [401, 403, 404, 408, 425, 500, 501, 502, 503, 504];
    const STATUS_SHIFT: u32 = 8;

    /// The bit of a retryable status (`None` for a status HAProxy never
    /// retries on).
    pub(crate) fn status_bit(status: u16) -> Option<u32> {
        let i = Self::STATUSES.iter().position(|&s| s == status)?;
        Some(1 << (Self::STATUS_SHIFT + i as u32))
    }

    /// Parses one `retry-on` keyword into its bits.
    pub(crate) fn keyword(word: &str) -> Option<u32> {
        Some(match word {
            "none" => 0,
            "conn-failure" => Self::CONN_FAILURE,
            "empty-response" => Self::EMPTY_RESPONSE,
            "junk-response" => Self::JUNK_RESPONSE,
            "response-timeout" => Self::RESPONSE_TIMEOUT,
            "0rtt-rejected" => Self::EARLY_ERROR,
            "all-retryable-errors" => {
                Self::CONN_FAILURE
                    | Self::EMPTY_RESPONSE
                    | Self::JUNK_RESPONSE
                    | Self::RESPONSE_TIMEOUT
                    | Self::EARLY_ERROR
                    | [500, 502, 503, 504]
                        .iter()
                        .filter_map(|&s| Self::status_bit(s))
                        .fold(0, |a, b| a | b)
            }
            _ => Self::status_bit(word.parse().ok()?)?,
        })
    }

    pub(crate) fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }

    pub(crate) fn on_status(self, status: u16) -> bool {
        Self::status_bit(status).is_some_and(|b| self.has(b))
    }

    /// Anything beyond connection failures: the request must be kept to
    /// be replayed after it was sent (HAProxy's `TX_L7_RETRY`).
    pub(crate) fn layer7(self) -> bool {
        self.0 & !Self::CONN_FAILURE != 0
    }
}

impl Default for RetryOn {
    fn default() -> Self {
        RetryOn(Self::CONN_FAILURE)
    }
}

/// `http-reuse` policy for idle server connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HttpReuse {
    Never,
    #[default]
    Safe,
    Aggressive,
    Always,
}

/// Connection handling modes (`option http-keep-alive` etc.).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HttpConnMode {
    #[default]
    KeepAlive,
    ServerClose,
    Close,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatsPage {
    /// URI prefix; any request whose URI begins with it is answered by the
    /// stats page.
    pub(crate) uri: String,
    /// `stats auth user:pass` (repeatable): HTTP Basic accounts; none = no
    /// authentication.
    pub(crate) auth: Vec<String>,
    /// `stats realm`: the realm of the 401 (default `HAProxy Statistics`).
    pub(crate) realm: Option<String>,
    /// `stats refresh <time>`: the `refresh:` header, in seconds.
    pub(crate) refresh: Option<u64>,
    /// `stats hide-version`
    pub(crate) hide_version: bool,
    /// `stats show-legends`: addr/cookie/algo filled in.
    pub(crate) show_legends: bool,
    /// `stats admin if|unless <cond>` (repeatable): the page offers and
    /// accepts server actions when any of them holds for the request.
    pub(crate) admin: Vec<Condition>,
    /// `stats show-node [<name>]`: the page names the node, `<name>` or
    /// (`Some(None)`) the global `node`, read when the page is made.
    pub(crate) show_node: Option<Option<String>>,
    /// `stats show-desc [<text>]`: the description the page shows, the
    /// global one when the line gave none (taken when the line is read,
    /// as HAProxy does).
    pub(crate) show_desc: Option<String>,
    /// `stats show-modules`: the page has the modules' counters (ssl, h2,
    /// h1) as extra columns.
    pub(crate) show_modules: bool,
    /// `stats http-request allow|deny|auth [realm <r>] [if|unless
    /// <cond>]`, in order: the first that holds decides, before `stats
    /// auth`.
    pub(crate) rules: Vec<(StatsAction, Option<Condition>)>,
}

/// What a `stats http-request` rule does with a request for the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StatsAction {
    /// The page, without asking for credentials.
    Allow,
    /// HAProxy's 403.
    Deny,
    /// A 401 asking for credentials in this realm (the page's without
    /// one).
    Auth(Option<String>),
}

impl StatsPage {
    pub(crate) const DEFAULT_URI: &'static str = "/haproxy?stats";
    pub(crate) const DEFAULT_REALM: &'static str = "HAProxy Statistics";

    /// `stats enable`: the default URI, nothing else.
    pub(crate) fn enabled() -> StatsPage {
        StatsPage {
            uri: Self::DEFAULT_URI.to_string(),
            auth: Vec::new(),
            realm: None,
            refresh: None,
            hide_version: false,
            show_legends: false,
            admin: Vec::new(),
            show_node: None,
            show_desc: None,
            show_modules: false,
            rules: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Bind {
    /// The address as written (for messages).
    pub(crate) text: String,
    /// Resolved addresses (a host name may give several).
    pub(crate) addrs: Vec<SocketAddr>,
    /// `fd@<n>`: an inherited listening socket (no address to bind);
    /// `addr::UNRESOLVED_FD` under `-c` for a name it cannot resolve.
    pub(crate) fd: Option<i32>,
    pub(crate) loc: Loc,
    /// `accept-proxy`: connections start with a PROXY protocol header.
    pub(crate) accept_proxy: bool,
    /// `ssl`: the listener's TLS configuration, certificates loaded.
    pub(crate) tls: Option<std::sync::Arc<crate::tls::ListenTls>>,
    /// `proto h1|h2`.
    pub(crate) proto: BindProto,
    /// `v6only` / `v4v6`.
    pub(crate) v6: BindV6,
    /// `bind /path`, `unix@/path`, `abns@name`: a UNIX stream listener
    /// (`addrs` is then empty).
    pub(crate) unix: Option<UnixBind>,
    /// `id <n>`: the listener's id (`so_id`; HAProxy numbers the others).
    pub(crate) id: Option<u32>,
    /// `name <n>` (`so_name`).
    pub(crate) name: Option<String>,
    /// `backlog`, `defer-accept`, `tfo`, ...: the listening
    /// socket's options.
    pub(crate) sock: BindSock,
}

/// The socket options of a TCP `bind` line, set on the listening socket
/// (an inherited `fd@` one too, as HAProxy does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BindSock {
    /// `backlog <n>`: the accept queue's length (listen(2)).
    pub(crate) backlog: Option<i32>,
    /// `maxconn <n>`: connections this listener serves at once; the next
    /// ones wait in the kernel's backlog.
    pub(crate) maxconn: Option<u32>,
    /// `defer-accept`: TCP_DEFER_ACCEPT, the connection is accepted once
    /// data came.
    pub(crate) defer_accept: bool,
    /// `tfo`: TCP_FASTOPEN.
    pub(crate) tfo: bool,
    /// `interface <name>`: SO_BINDTODEVICE.
    pub(crate) interface: Option<String>,
    /// `mss <n>`: TCP_MAXSEG (a negative one is read and left unset, as
    /// HAProxy 2.6 leaves it on a listener).
    pub(crate) mss: Option<i32>,
    /// `tcp-ut <ms>`: TCP_USER_TIMEOUT, inherited by accepted sockets.
    pub(crate) tcp_ut: Option<u32>,
    /// `transparent`: IP_TRANSPARENT, to take connections to foreign
    /// addresses.
    pub(crate) transparent: bool,
    /// SO_RCVBUF and SO_SNDBUF of the listener, which the connections it
    /// accepts inherit (the global `tune.rcvbuf.client`,
    /// `tune.sndbuf.client`).
    pub(crate) rcvbuf: Option<u32>,
    pub(crate) sndbuf: Option<u32>,
    /// The global `noreuseport`: no SO_REUSEPORT.
    pub(crate) noreuseport: bool,
}

impl BindSock {
    /// The accept queue's length: `backlog`, else (as HAProxy) the
    /// listener's `maxconn`, else `default`.
    pub(crate) fn backlog_or(&self, default: i32) -> i32 {
        self.backlog
            .or(self.maxconn.map(|m| m.min(i32::MAX as u32) as i32))
            .unwrap_or(default)
    }
}

/// The name of a UNIX stream socket: a file, or a Linux abstract name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum UnixName {
    Path(PathBuf),
    Abns(String),
}

impl std::fmt::Display for UnixName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnixName::Path(p) => write!(f, "unix@{}", p.display()),
            UnixName::Abns(n) => write!(f, "abns@{n}"),
        }
    }
}

/// A UNIX stream listener: its name and what the socket file is given
/// (`mode`, `uid`/`user`, `gid`/`group`; meaningless for an abstract
/// socket, which has no file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnixBind {
    pub(crate) name: UnixName,
    pub(crate) perms: UnixPerms,
}

/// `unix-bind`: a prefix put before the path of every UNIX `bind`, and
/// the permissions a `bind` line does not set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UnixBindDefaults {
    pub(crate) prefix: Option<String>,
    pub(crate) perms: UnixPerms,
}

/// `mode`, `uid`/`user`, `gid`/`group` of a UNIX socket file (`None`
/// leaves what the system gives).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnixPerms {
    pub(crate) mode: Option<u32>,
    pub(crate) uid: Option<u32>,
    pub(crate) gid: Option<u32>,
}

/// What a listening socket is known by: its IP address and port, or its
/// UNIX name. Listeners are matched on it across reloads.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ListenAddr {
    Ip(SocketAddr),
    Unix(UnixName),
}

impl ListenAddr {
    pub(crate) fn ip(&self) -> Option<SocketAddr> {
        match self {
            ListenAddr::Ip(a) => Some(*a),
            ListenAddr::Unix(_) => None,
        }
    }
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Ip(a) => a.fmt(f),
            ListenAddr::Unix(n) => n.fmt(f),
        }
    }
}

/// Bind lines compare on what was written: the loaded TLS by whether there
/// is one (its certificates are loaded again by every load, and a rustls
/// configuration has no equality).
impl PartialEq for Bind {
    fn eq(&self, o: &Bind) -> bool {
        // Destructured whole: a new field cannot be left out by mistake.
        let Bind {
            text,
            addrs,
            fd,
            loc,
            accept_proxy,
            tls,
            proto,
            v6,
            unix,
            id,
            name,
            sock,
        } = self;
        *text == o.text
            && *addrs == o.addrs
            && *fd == o.fd
            && *loc == o.loc
            && *accept_proxy == o.accept_proxy
            && tls.is_some() == o.tls.is_some()
            && *proto == o.proto
            && *v6 == o.v6
            && *unix == o.unix
            && *id == o.id
            && *name == o.name
            && *sock == o.sock
    }
}

/// What a `tcp-request connection|session|content` or `tcp-response
/// content` rule does when it applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TcpAction {
    Accept,
    Reject,
    /// `tcp-response content close`: the server's side is closed, what
    /// was read from it still goes to the client.
    Close,
    /// `set-log-level <level>|silent`: the session's log line.
    SetLogLevel(LogLevel),
    /// `set-tos`, `set-mark`: the client socket's, as
    /// [`HttpRequestAction::SetTos`].
    SetTos(u32),
    SetMark(u32),
    /// `set-nice`: accepted, without effect (see
    /// [`HttpRequestAction::SetNice`]).
    SetNice(i32),
    /// `tcp-request connection expect-proxy layer4`: a PROXY header is
    /// read before anything else, as `bind ... accept-proxy` asks.
    ExpectProxy,
    /// `tcp-request content capture <expr> len <n>`: the value into the
    /// frontend's request capture slot `slot`, cut to `len` bytes.
    Capture {
        expr: crate::sample::Expr,
        slot: usize,
        len: usize,
    },
    /// `set-src|set-src-port|set-dst|set-dst-port <expr>`: the session's
    /// addresses from then on, as [`HttpRequestAction::SetAddr`].
    SetAddr {
        part: AddrPart,
        expr: crate::sample::Expr,
    },
    /// `silent-drop`: the connection is closed without the client being
    /// told.
    SilentDrop,
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`: the next rule is
    /// evaluated after it.
    Table(TableAction),
    /// `set-var(...)`, `set-var-fmt(...)`, `unset-var(...)`: the next rule
    /// is evaluated after it.
    Var(VarRule),
    /// `set-priority-class <expr>`, `set-priority-offset <expr>`.
    Priority(PriorityRule),
    /// `tcp-request content lua.<name> [args]`: an action a script
    /// registered for `tcp-req` (under a `tcp-request inspect-delay` it
    /// may wait: `tcp::rules::run_waiting`).
    Lua(LuaAction),
    /// `tcp-response content lua.<name> [args]`: an action a script
    /// registered for `tcp-res`, run on the server's bytes held (under a
    /// `tcp-response inspect-delay` it may wait), which it reads and
    /// edits through `txn.res`.
    LuaRes(LuaAction),
    /// `send-spoe-group <engine> <group>` of `tcp-request content` and
    /// `tcp-response content`: the group's messages sent to the engine's
    /// agent, the rules after it waiting for its answer.
    SendSpoeGroup {
        engine: String,
        group: String,
    },
    /// `tcp-request content use-service lua.<name>`: the TCP service a
    /// script registered serves the connection in a server's place.
    LuaService(String),
}

/// What a proxy does, once its `http-request` rules have run, with the
/// request's header fields whose names hold a character outside
/// `[A-Za-z0-9-]` (`option http-restrict-req-hdr-names`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HdrNamePolicy {
    #[default]
    Preserve,
    Delete,
    /// HAProxy's 403.
    Reject,
}

/// `set-priority-class <expr>` or `set-priority-offset <expr>`, of
/// `http-request` and `tcp-request content`: the stream's place in the
/// backend queue (`sample::tune`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PriorityRule {
    Class(crate::sample::Expr),
    Offset(crate::sample::Expr),
}

impl PriorityRule {
    /// Sets the class or offset to the expression's integer; a sample that
    /// is not one leaves it as it was, as in HAProxy.
    pub(crate) fn run(&self, cx: &crate::sample::Ctx<'_>) {
        let (Self::Class(e) | Self::Offset(e)) = self;
        let Some(tune) = cx.vars.map(|v| &v.tune) else {
            return;
        };
        let Some(n) = sample_int(e, cx) else {
            return;
        };
        match self {
            Self::Class(_) => tune.set_class(n),
            Self::Offset(_) => tune.set_offset(n),
        }
    }
}

/// The normalizers of `http-request normalize-uri` (`http::normalize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UriNormalizer {
    FragmentEncode,
    FragmentStrip,
    PathMergeSlashes,
    PathStripDot,
    PathStripDotdot { full: bool },
    PercentDecodeUnreserved { strict: bool },
    PercentToUppercase { strict: bool },
    QuerySortByName,
}

/// `do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>`: the name `expr`
/// gives is resolved with the nameservers of section `resolvers`, and
/// the address found stored in `var` (left alone on any failure).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DoResolve {
    pub(crate) var: crate::sample::vars::VarName,
    pub(crate) resolvers: String,
    /// `ipv4`: A records first; IPv6 is preferred by default.
    pub(crate) ipv4: bool,
    pub(crate) expr: crate::sample::Expr,
}

/// `expr`'s value as an integer, None when it has none.
fn sample_int(expr: &crate::sample::Expr, cx: &crate::sample::Ctx<'_>) -> Option<i64> {
    match expr.eval(cx)?.cast(crate::sample::value::SmpType::Sint)? {
        crate::sample::value::Sample::Sint(n) => Some(n),
        _ => None,
    }
}

/// `http-request set-timeout server|tunnel <time>|<expr>`: the stream's own
/// server or tunnel timeout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetTimeout {
    pub(crate) kind: crate::sample::tune::TimeoutKind,
    pub(crate) value: TimeoutValue,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TimeoutValue {
    Fixed(Duration),
    /// An integer of milliseconds.
    Expr(crate::sample::Expr),
}

impl SetTimeout {
    /// Sets the timeout; an expression that gives no integer changes
    /// nothing, 0 gives the configuration's timeout back (HAProxy's unset
    /// tick) and a negative one has expired already (its tick in the
    /// past).
    pub(crate) fn run(&self, cx: &crate::sample::Ctx<'_>) {
        let Some(tune) = cx.vars.map(|v| &v.tune) else {
            return;
        };
        let ms = match &self.value {
            TimeoutValue::Fixed(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            TimeoutValue::Expr(e) => match sample_int(e, cx) {
                Some(n) => n,
                None => return,
            },
        };
        tune.set_timeout(self.kind, ms);
    }
}

/// One `tcp-request connection|content <action> [if|unless <cond>]` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TcpRule {
    pub(crate) action: TcpAction,
    pub(crate) cond: Option<Condition>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HttpRequestAction {
    /// `lua.<name> [args]`: an action a script registered.
    Lua(LuaAction),
    /// `use-service lua.<name>`: an HTTP service a script registered
    /// (its name without `lua.`).
    LuaService(String),
    /// `http-request capture <expr> len <n> | id <n>`: the value into the
    /// frontend's request capture slot `slot`, cut to the slot's length.
    Capture {
        expr: crate::sample::Expr,
        slot: usize,
    },
    /// `http-request return [status <code>] [content-type <t>]
    /// [string|lf-string|file|lf-file <x>] [hdr <name> <fmt>]...`
    Return(HttpReply),
    /// `http-request deny [deny_status <code>] [<reply arguments>]`: the
    /// error page of the status unless the reply has its own content.
    Deny(HttpReply),
    /// `http-request tarpit [deny_status <code>] [<reply arguments>]`: a
    /// deny answered after `timeout tarpit` (500 by default).
    Tarpit(HttpReply),
    /// `http-request use-service prometheus-exporter`: the metrics in
    /// HAProxy's exporter format (`crate::observe::stats::prometheus`).
    PrometheusExporter,
    /// `http-request allow`: stops the evaluation of the rules.
    Allow,
    /// `http-request send-spoe-group <engine> <group>`: the group's
    /// messages sent to the engine's agent, its answer awaited.
    SendSpoeGroup {
        engine: String,
        group: String,
    },
    /// `http-request set-header <name> <fmt>` (name kept as written).
    SetHeader {
        name: String,
        fmt: LogFmt,
    },
    /// `http-request add-header <name> <fmt>`
    AddHeader {
        name: String,
        fmt: LogFmt,
    },
    /// `http-request del-header <name> [-m <meth>]`
    DelHeader {
        name: String,
        how: NameMatch,
    },
    /// `http-request replace-header <name> <regex> <fmt>`: a value the
    /// regex matches is replaced whole by `<fmt>` (`\1`... back-references).
    ReplaceHeader(HeaderRewrite),
    /// `http-request replace-value <name> <regex> <fmt>`: the same, on
    /// each comma-separated value.
    ReplaceValue(HeaderRewrite),
    /// `http-request set-path|set-query|set-pathq|set-uri <fmt>`.
    SetTarget {
        part: UriPart,
        fmt: LogFmt,
    },
    /// `http-request replace-path|replace-pathq|replace-uri <regex>
    /// <fmt>`: the part, if the regex matches it, replaced whole.
    ReplaceTarget {
        part: UriPart,
        re: ByteRegex,
        fmt: LogFmt,
    },
    /// `http-request set-method <fmt>`.
    SetMethod(LogFmt),
    /// `http-request reject`: the connection is closed at once, without
    /// an answer.
    Reject,
    /// `http-request set-log-level <level>|silent`.
    SetLogLevel(LogLevel),
    /// `set-tos <n>`, `set-mark <n>`: the client socket's IP TOS (IPv6
    /// traffic class) and netfilter mark.
    SetTos(u32),
    SetMark(u32),
    /// `set-nice <n>`: a stream's scheduling weight in HAProxy; tokio
    /// has no such thing, so it is taken and changes nothing.
    SetNice(i32),
    /// `http-request set-src|set-src-port|set-dst|set-dst-port <expr>`.
    SetAddr {
        part: AddrPart,
        expr: crate::sample::Expr,
    },
    /// `http-request strict-mode on|off`: sluice's rewrites cannot fail,
    /// so there is nothing for it to change (kept for `-c` and docs).
    StrictMode(bool),
    /// `http-request redirect location|prefix|scheme <fmt> [code <n>]
    /// [drop-query] [append-slash]`, and the `redirect` keyword.
    Redirect {
        kind: RedirectKind,
        fmt: LogFmt,
        code: u16,
        /// `drop-query`: the query string is not carried over.
        drop_query: bool,
        /// `append-slash`: a `/` is added to a path that lacks one.
        append_slash: bool,
    },
    /// `set-var(...)`, `set-var-fmt(...)`, `unset-var(...)`.
    Var(VarRule),
    /// `set-map(...)`, `del-map(...)`, `add-acl(...)`, `del-acl(...)`.
    Map(MapRule),
    /// `http-request auth [realm <realm>]`: a 401 asking for credentials
    /// (the realm defaults to the proxy's name).
    Auth {
        realm: String,
    },
    /// `http-request wait-for-body time <time> [at-least <bytes>]`.
    WaitForBody(WaitForBody),
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`.
    Table(TableAction),
    /// `http-request silent-drop`: the connection is closed without a
    /// response, the client not told.
    SilentDrop,
    /// `http-request cache-use <name>`.
    CacheUse(CacheRef),
    /// `http-request set-timeout server|tunnel <time>|<expr>`.
    SetTimeout(SetTimeout),
    /// `http-request set-priority-class|set-priority-offset <expr>`.
    Priority(PriorityRule),
    /// `http-request disable-l7-retry`: no `retry-on` of a response
    /// status or of a response that failed for this request.
    DisableL7Retry,
    /// `http-request do-resolve(<var>,<resolvers>[,ipv4|ipv6]) <expr>`.
    DoResolve(DoResolve),
    /// `http-request normalize-uri <normalizer> [full|strict]`.
    NormalizeUri(UriNormalizer),
    /// `http-request early-hint <name> <fmt>`: a field of the `103 Early
    /// Hints` sent before the answer.
    EarlyHint {
        name: String,
        fmt: LogFmt,
    },
    /// `http-request wait-for-handshake`: waits for a TLS handshake that
    /// took early data to finish. sluice's listeners take no early data
    /// (rustls's `max_early_data_size` is left at 0), so the handshake is
    /// always over when rules run and the rule goes on at once.
    WaitForHandshake,
}

/// `wait-for-body time <time> [at-least <bytes>]`: the message's body is
/// waited for, whole or as much as the buffer holds, or its first
/// `at_least` bytes (0: no such bound), for at most `time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitForBody {
    pub(crate) time: std::time::Duration,
    pub(crate) at_least: u64,
}

/// `set-var(<name>[,<cond>...]) <expr>`, `set-var-fmt(<name>[,<cond>...])
/// <fmt>`, `unset-var(<name>)`, as any rule set has them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VarRule {
    pub(crate) var: crate::sample::vars::VarName,
    pub(crate) conds: crate::sample::vars::Conds,
    pub(crate) value: VarValue,
}

impl VarRule {
    /// Runs the rule where `cx` is (the `global` section, the CLI, a TCP
    /// rule; the HTTP rules format through `http::rules`): false when the
    /// value could not be stored. A format's request fields print as in a
    /// log line without a request.
    pub(crate) fn run(&self, cx: &crate::sample::Ctx<'_>) -> bool {
        use crate::sample::value::Sample;
        match &self.value {
            VarValue::Unset => {
                cx.unset_var(&self.var);
                true
            }
            VarValue::Expr(e) => e
                .eval(cx)
                .is_some_and(|s| cx.set_var(&self.var, &s, self.conds)),
            VarValue::Fmt(f) => {
                let mut text = Vec::new();
                for part in &f.0 {
                    match part {
                        FmtPart::Lit(l) => text.extend_from_slice(l.as_bytes()),
                        FmtPart::Sample(e) => {
                            if let Some(s) = e.eval(cx) {
                                s.write_text(&mut text);
                            }
                        }
                        // An IPv4-mapped address prints as IPv4, as HAProxy.
                        FmtPart::Src => match cx.src {
                            Some(std::net::IpAddr::V6(v6)) => {
                                let shown = v6
                                    .to_ipv4_mapped()
                                    .map_or(v6.to_string(), |v4| v4.to_string());
                                text.extend_from_slice(shown.as_bytes());
                            }
                            Some(v4) => text.extend_from_slice(v4.to_string().as_bytes()),
                            None => text.extend_from_slice(b"unix"),
                        },
                        FmtPart::Frontend => text.extend_from_slice(cx.frontend.as_bytes()),
                        FmtPart::Backend => {
                            text.extend_from_slice(cx.backend.unwrap_or(cx.frontend).as_bytes())
                        }
                        FmtPart::Server => {
                            text.extend_from_slice(cx.server.unwrap_or("<NOSRV>").as_bytes())
                        }
                    }
                }
                cx.set_var(&self.var, &Sample::Str(text.into()), self.conds)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum VarValue {
    Expr(crate::sample::Expr),
    Fmt(LogFmt),
    Unset,
}

/// What a `redirect` rule builds its Location from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirectKind {
    Location,
    Prefix,
    Scheme,
}

/// The answer of `http-request return|deny` and `http-response deny`
/// (HAProxy's `http_reply`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpReply {
    pub(crate) status: u16,
    /// Sent only with a non-empty payload (HAProxy ignores it otherwise).
    pub(crate) content_type: Option<String>,
    pub(crate) body: ReplyBody,
    /// `hdr <name> <fmt>`, names lower-cased as HAProxy sends them, in
    /// the order written.
    pub(crate) headers: Vec<(String, LogFmt)>,
}

impl HttpReply {
    /// A reply with nothing but the error page of `status`.
    pub(crate) fn error_page(status: u16) -> Self {
        HttpReply {
            status,
            content_type: None,
            body: ReplyBody::ErrorPage,
            headers: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReplyBody {
    /// The error page of the status (`errorfile` or the built-in one):
    /// a deny without reply arguments.
    ErrorPage,
    /// `string`, `file`, or nothing: sent as is.
    Static(Vec<u8>),
    /// `lf-string`, `lf-file`: evaluated for each request.
    Format(LogFmt),
    /// `errorfile <file>`: a whole HTTP response, sent as is.
    Message(Vec<u8>),
    /// `errorfiles <name>`: the page of `http-errors` section `<name>`
    /// for the status, once every section is read (`finish_errorfiles`
    /// makes it a `Message`, or an empty `Static` when the section has
    /// none, as HAProxy answers).
    Section(String),
}

/// A log-format string as the header rules use it: literal text, a few
/// variables and sample expressions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogFmt(pub(crate) Vec<FmtPart>);

impl LogFmt {
    /// The string for one request: `%f`, `%b`, `%s` and `%ci` read the
    /// names and the client of `cx`, the expressions evaluate on it.
    pub(crate) fn render(&self, cx: &crate::sample::Ctx<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.0 {
            match part {
                FmtPart::Frontend => out.extend_from_slice(cx.frontend.as_bytes()),
                FmtPart::Backend => {
                    out.extend_from_slice(cx.backend.unwrap_or(cx.frontend).as_bytes())
                }
                FmtPart::Server => out.extend_from_slice(cx.server.unwrap_or("<NOSRV>").as_bytes()),
                FmtPart::Lit(s) => out.extend_from_slice(s.as_bytes()),
                // A client on a UNIX socket: HAProxy prints `unix`.
                FmtPart::Src => match cx.src {
                    // An IPv4-mapped IPv6 address prints as IPv4.
                    Some(ip) => {
                        let ip = match ip {
                            std::net::IpAddr::V6(v6) => {
                                v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4)
                            }
                            v4 => v4,
                        };
                        out.extend_from_slice(ip.to_string().as_bytes());
                    }
                    None => out.extend_from_slice(b"unix"),
                },
                FmtPart::Sample(expr) => {
                    if let Some(s) = expr.eval(cx) {
                        let start = out.len();
                        s.write_text(&mut out);
                        escape_controls(&mut out, start);
                    }
                }
            }
        }
        out
    }
}

/// HAProxy writes the control characters of a sample (but the tab) and
/// DEL as `%XX` in a rule's log-format string (`req.hdrs` shows its line
/// ends so); the text from `start` on is rewritten only when it has one.
fn escape_controls(out: &mut Vec<u8>, start: usize) {
    let esc = |b: u8| (b < 0x20 && b != b'\t') || b == 0x7f;
    if !out[start..].iter().any(|&b| esc(b)) {
        return;
    }
    let tail = out.split_off(start);
    for b in tail {
        if esc(b) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FmtPart {
    Lit(String),
    /// `%ci`: the client's address.
    Src,
    /// `%[<sample expression>]`.
    Sample(crate::sample::Expr),
    /// `%f`: the frontend's name.
    Frontend,
    /// `%b`: the backend's name (the frontend's before one is chosen, as
    /// in HAProxy).
    Backend,
    /// `%s`: the server's name (`<NOSRV>` before one is).
    Server,
}

/// `http-response set-header|add-header|del-header|deny`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HttpResponseAction {
    /// `lua.<name> [args]`: an action a script registered (its sleeps
    /// and I/O wait, as on the request).
    Lua(LuaAction),
    /// `http-response send-spoe-group <engine> <group>`: the group's
    /// messages sent to the engine's agent, its answer awaited.
    SendSpoeGroup {
        engine: String,
        group: String,
    },
    SetHeader {
        name: String,
        fmt: LogFmt,
    },
    AddHeader {
        name: String,
        fmt: LogFmt,
    },
    DelHeader {
        name: String,
        how: NameMatch,
    },
    /// `http-response deny [deny_status <code>] [<reply arguments>]`.
    Deny(HttpReply),
    /// `http-response capture <expr> id <n>`: the value into the
    /// frontend's response capture slot `slot`, cut to the slot's length.
    Capture {
        expr: crate::sample::Expr,
        slot: usize,
    },
    /// `set-var(...)`, `set-var-fmt(...)`, `unset-var(...)`.
    Var(VarRule),
    /// `http-response wait-for-body time <time> [at-least <bytes>]`.
    WaitForBody(WaitForBody),
    /// `set-map(...)`, `del-map(...)`, `add-acl(...)`, `del-acl(...)`.
    Map(MapRule),
    /// `track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`.
    Table(TableAction),
    /// `http-response cache-store <name>`.
    CacheStore(CacheRef),
    /// `allow`: the rest of the section's rules are skipped.
    Allow,
    /// `set-status <code> [reason <fmt>]`: the status line's code and
    /// reason (the code's usual one without `reason`).
    SetStatus {
        code: u16,
        reason: Option<LogFmt>,
    },
    /// `replace-header <name> <regex> <fmt>`.
    ReplaceHeader(HeaderRewrite),
    /// `replace-value <name> <regex> <fmt>`.
    ReplaceValue(HeaderRewrite),
    /// `strict-mode on|off`: see [`HttpRequestAction::StrictMode`].
    StrictMode(bool),
    /// `set-log-level <level>|silent`.
    SetLogLevel(LogLevel),
    /// `set-tos`, `set-mark`, `set-nice`: see [`HttpRequestAction::SetTos`].
    SetTos(u32),
    SetMark(u32),
    SetNice(i32),
    /// `http-response return [<reply arguments>]`: the server's answer is
    /// replaced by this one (logged `LH`, not a denial).
    Return(HttpReply),
    /// `http-response silent-drop`: the client connection is closed
    /// without the answer.
    SilentDrop,
    /// `http-response redirect location|prefix|scheme <fmt> [code <n>]
    /// [drop-query] [append-slash]`: the server's answer replaced by the
    /// redirect.
    Redirect {
        kind: RedirectKind,
        fmt: LogFmt,
        code: u16,
        drop_query: bool,
        append_slash: bool,
    },
}

impl HttpResponseAction {
    /// Whether the action may wait for something (a script's sleep or
    /// I/O, an agent's answer).
    pub(crate) fn waits(&self) -> bool {
        matches!(self, Self::Lua(_) | Self::SendSpoeGroup { .. })
    }
}

/// The address or port a `set-src`-like rule replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddrPart {
    Src,
    SrcPort,
    Dst,
    DstPort,
}

/// What `set-log-level` makes of the request's access log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogLevel {
    /// Not logged at all.
    Silent,
    /// Logged at this syslog severity (0 emerg .. 7 debug).
    Severity(u8),
}

/// The part of a request target a rule sets or replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UriPart {
    /// The path, without the query.
    Path,
    /// The query string, without its `?`.
    Query,
    /// The path and the query.
    PathQ,
    /// The whole target, absolute or not.
    Uri,
}

/// `replace-header` and `replace-value`: the header, the regex its values
/// are matched against and the format a matching value becomes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeaderRewrite {
    pub(crate) name: String,
    pub(crate) re: ByteRegex,
    pub(crate) fmt: LogFmt,
}

/// What a map or ACL action does to the entries of a pattern file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MapOp {
    /// `add-acl(<file>) <key>`: the key, unless the file has it.
    AddAcl,
    /// `set-map(<file>) <key> <value>`: the value of the key's entries,
    /// or a new entry.
    SetMap,
    /// `del-acl(<file>) <key>`, `del-map(<file>) <key>`: the key's
    /// entries go.
    Delete,
}

/// `set-map(<file>) <key fmt> <value fmt>`, `del-map(<file>) <key fmt>`,
/// `add-acl(<file>) <key fmt>`, `del-acl(<file>) <key fmt>`: the file is
/// looked up among the running configuration's pattern files when the
/// rule runs (nothing happens when no converter or ACL reads it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MapRule {
    pub(crate) op: MapOp,
    pub(crate) file: String,
    pub(crate) key: LogFmt,
    pub(crate) value: Option<LogFmt>,
}

/// What a `req*` / `rsp*` filter of HAProxy ≤ 2.0 does to the head line
/// its regex matches (HAProxy 1.8's `ACT_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LegacyAction {
    /// `reqallow`: later allow/deny/tarpit/pass filters are skipped.
    Allow,
    /// `reqdeny` (403) / `rspdeny` (502).
    Deny,
    /// `reqtarpit`: held for `timeout tarpit`, then 500.
    Tarpit,
    /// `reqpass`: no later `req*` filter of the proxy runs.
    Pass,
    /// `reqdel` / `rspdel`: the header line is removed.
    Remove,
    /// `reqrep` / `rsprep`: the line becomes this string, `\N` standing
    /// for the regex's groups.
    Replace(Vec<u8>),
}

/// How `del-header <name> -m <meth>` matches the names of the fields:
/// without case (`str`, the default, `beg`, `end`, `sub`), or a regex
/// tested on the name in lower case (HAProxy keeps names so).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NameMatch {
    Str,
    Beg,
    End,
    Sub,
    Reg(ByteRegex),
}

impl NameMatch {
    /// Whether the field `name` is one `pattern` (lower case) designates.
    pub(crate) fn matches(&self, pattern: &str, name: &[u8]) -> bool {
        let p = pattern.as_bytes();
        let lower = |n: &[u8]| n.to_ascii_lowercase();
        match self {
            NameMatch::Str => name.eq_ignore_ascii_case(p),
            NameMatch::Beg => name.len() >= p.len() && name[..p.len()].eq_ignore_ascii_case(p),
            NameMatch::End => {
                name.len() >= p.len() && name[name.len() - p.len()..].eq_ignore_ascii_case(p)
            }
            NameMatch::Sub => p.is_empty() || lower(name).windows(p.len()).any(|w| w == p),
            NameMatch::Reg(re) => re.is_match(&lower(name)),
        }
    }
}

/// A compiled regex of a rule, equal to another written the same way (the
/// regex crate has no equality of its own).
#[derive(Debug, Clone)]
pub(crate) struct ByteRegex {
    re: regex::bytes::Regex,
    /// Compiled case-insensitive (`reqirep` & co.).
    icase: bool,
}

impl ByteRegex {
    pub(crate) fn new(pattern: &str, icase: bool) -> Result<ByteRegex, regex::Error> {
        let re = regex::bytes::RegexBuilder::new(pattern)
            .case_insensitive(icase)
            .build()?;
        Ok(ByteRegex { re, icase })
    }
}

impl PartialEq for ByteRegex {
    fn eq(&self, other: &ByteRegex) -> bool {
        self.re.as_str() == other.re.as_str() && self.icase == other.icase
    }
}

impl std::ops::Deref for ByteRegex {
    type Target = regex::bytes::Regex;
    fn deref(&self) -> &regex::bytes::Regex {
        &self.re
    }
}

/// One `req*` / `rsp*` filter line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegacyFilter {
    pub(crate) re: ByteRegex,
    pub(crate) action: LegacyAction,
    pub(crate) cond: Option<Condition>,
}

/// `reqadd` / `rspadd`: a literal header line added after the others.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegacyAdd {
    pub(crate) line: Vec<u8>,
    pub(crate) cond: Option<Condition>,
}

/// The header-rewriting keywords HAProxy 2.1 removed, for one direction:
/// the filters in order, then the added lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LegacyRules {
    pub(crate) filters: Vec<LegacyFilter>,
    pub(crate) adds: Vec<LegacyAdd>,
}

impl LegacyRules {
    pub(crate) fn is_empty(&self) -> bool {
        self.filters.is_empty() && self.adds.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpResponseRule {
    pub(crate) action: HttpResponseAction,
    pub(crate) cond: Option<Condition>,
}

/// `option forwardfor [except <net>] [header <name>] [if-none]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForwardFor {
    /// Clients in this network get no header.
    pub(crate) except: Option<(std::net::IpAddr, u8)>,
    /// Header name, lower-cased as HAProxy emits it.
    pub(crate) header: String,
    pub(crate) if_none: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpRequestRule {
    pub(crate) action: HttpRequestAction,
    pub(crate) cond: Option<Condition>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UseBackend {
    /// The name as written (for a dynamic one, its log-format text).
    pub(crate) backend: String,
    /// A name made per request (`use_backend be_%[req.hdr(host)]`): a
    /// log-format with more than text in it, as HAProxy tells them apart.
    pub(crate) dynamic: Option<LogFmt>,
    pub(crate) cond: Condition,
    /// Where the rule was written. Only the unit tests read it today; it is
    /// kept for the run-time messages of dynamic backend names.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) loc: Loc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckParams {
    pub(crate) inter: Duration,
    /// Interval while the server is in a transitional state (`UP 1/3`,
    /// `DOWN 1/2`); defaults to `inter`.
    pub(crate) fastinter: Option<Duration>,
    /// Interval while the server is fully DOWN; defaults to `inter`.
    pub(crate) downinter: Option<Duration>,
    pub(crate) rise: u32,
    pub(crate) fall: u32,
    /// `addr <ip>`: check this address instead of the server's.
    pub(crate) addr: Option<std::net::IpAddr>,
    /// `port <port>`: check this port instead of the server's.
    pub(crate) port: Option<u16>,
    /// `check-proto h1|h2`: the protocol of HTTP checks (None: the
    /// server's `proto`, as HAProxy).
    pub(crate) proto_h2: Option<bool>,
    /// `check-ssl`: checks over TLS (the server's TLS options) even when
    /// the server has no `ssl` or checks go elsewhere (`addr`/`port`).
    pub(crate) ssl: bool,
    /// `check-send-proxy`: checks start with a PROXY header wherever
    /// they go (v2 when the server has `send-proxy-v2`, else v1).
    pub(crate) send_proxy: bool,
}

impl Default for CheckParams {
    fn default() -> Self {
        CheckParams {
            inter: Duration::from_secs(2),
            fastinter: None,
            downinter: None,
            rise: 2,
            fall: 3,
            addr: None,
            port: None,
            proto_h2: None,
            ssl: false,
            send_proxy: false,
        }
    }
}

/// A `resolvers` section: the DNS servers and timers the servers that
/// name it (`resolvers <name>`) are resolved with at run time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResolversSection {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `nameserver <name> <ip>:<port>` (`tcp@` for DNS over TCP).
    pub(crate) nameservers: Vec<Nameserver>,
    /// `accepted_payload_size`: the EDNS0 size announced (512 by default).
    pub(crate) accepted_payload_size: u16,
    /// `resolve_retries`: queries sent before a timeout is reported.
    pub(crate) resolve_retries: u32,
    /// `timeout resolve`: between two resolutions of a name.
    pub(crate) timeout_resolve: Duration,
    /// `timeout retry`: before a query is sent again.
    pub(crate) timeout_retry: Duration,
    pub(crate) hold: Hold,
}

/// One `nameserver` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Nameserver {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    /// `tcp@`: queried over TCP only.
    pub(crate) tcp: bool,
    pub(crate) loc: Loc,
}

/// `hold <status> <period>`: how long the last valid answer stands after
/// each kind of failure, and how long a record missing from the answers
/// still counts (`obsolete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hold {
    pub(crate) nx: Duration,
    pub(crate) other: Duration,
    pub(crate) refused: Duration,
    pub(crate) timeout: Duration,
    pub(crate) valid: Duration,
    pub(crate) obsolete: Duration,
}

impl ResolversSection {
    /// HAProxy 2.6's defaults.
    pub(crate) fn new(name: &str, loc: Loc) -> Self {
        let s30 = Duration::from_secs(30);
        ResolversSection {
            name: name.to_string(),
            loc,
            nameservers: Vec::new(),
            accepted_payload_size: 512,
            resolve_retries: 3,
            timeout_resolve: Duration::from_secs(1),
            timeout_retry: Duration::from_secs(1),
            hold: Hold {
                nx: s30,
                other: s30,
                refused: s30,
                timeout: s30,
                valid: Duration::from_secs(10),
                obsolete: Duration::ZERO,
            },
        }
    }
}

/// What a server resolved at run time asks of its resolution: `resolvers
/// <name>` and the `resolve-*` options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerResolve {
    pub(crate) resolvers: String,
    /// `resolve-prefer ipv4` (IPv6 is preferred by default).
    pub(crate) prefer_v4: bool,
    /// `resolve-net`: preferred networks, address and prefix length.
    pub(crate) nets: Vec<(std::net::IpAddr, u8)>,
    /// `resolve-opts allow-dup-ip` (`prevent-dup-ip` is the default).
    pub(crate) allow_dup_ip: bool,
    /// `resolve-opts ignore-weight`: SRV weights are not applied.
    pub(crate) ignore_weight: bool,
}

/// An agent check (`agent-check` and its options): a TCP service beside
/// the server that reports its state in a line of words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentParams {
    pub(crate) port: u32,
    /// `agent-addr` (else `addr`, else the server's address).
    pub(crate) addr: Option<std::net::IpAddr>,
    /// `agent-inter` (else the server's `inter`).
    pub(crate) inter: Option<Duration>,
    /// `agent-send`: sent once connected.
    pub(crate) send: String,
}

/// `load-server-state-from-file`: which file a backend's servers take
/// their state from at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadServerState {
    /// The global `server-state-file`.
    Global,
    /// The backend's own, `server-state-file-name` in `server-state-base`.
    Local,
    None,
}

/// One method of `init-addr`, tried in order at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InitAddr {
    /// The address a server-state file kept.
    Last,
    /// The system's resolver.
    Libc,
    /// No address: the server waits in maintenance for its resolution.
    None,
    Ip(std::net::IpAddr),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Server {
    pub(crate) name: String,
    /// `host:port` as written.
    pub(crate) addr_text: String,
    /// Resolved at start-up.
    pub(crate) addr: SocketAddr,
    /// `/path`, `unix@path`, `abns@name`: a UNIX stream socket server
    /// (`addr` is then unspecified, port 0).
    pub(crate) unix: Option<Arc<UnixName>>,
    pub(crate) weight: u32,
    /// 0 = unlimited.
    pub(crate) maxconn: u32,
    /// `check` given: health checks enabled with these parameters.
    pub(crate) check: Option<CheckParams>,
    pub(crate) opts: ServerOpts,
    /// `id <n>`: explicit server id (`sid`); others are numbered around it.
    pub(crate) id: Option<u32>,
    /// `cookie <value>`: the persistence cookie value naming this server.
    pub(crate) cookie: Option<String>,
    pub(crate) loc: Loc,
    /// `ssl`: TLS to the server.
    pub(crate) tls: Option<std::sync::Arc<crate::tls::upstream::UpstreamTls>>,
    /// `check-ssl`: the TLS of the checks, built from the same options.
    pub(crate) check_tls: Option<std::sync::Arc<crate::tls::upstream::UpstreamTls>>,
    /// The host name of the address when it is not an IP address
    /// (`srv_fqdn` of `show servers state`).
    pub(crate) fqdn: Option<String>,
    /// `resolvers <name>` and its options: the address follows the DNS.
    pub(crate) resolve: Option<ServerResolve>,
    /// `init-addr`; None: `last,libc`.
    pub(crate) init_addr: Option<Vec<InitAddr>>,
    /// A `server-template` slot of an SRV name (`_http._tcp.name`): the
    /// records' targets and ports fill it.
    pub(crate) srvrecord: Option<String>,
    /// `agent-check` with its port.
    pub(crate) agent: Option<AgentParams>,
    /// `redir <prefix>`: GET and HEAD requests to this server are answered
    /// with a 302 to `<prefix><path>` instead.
    pub(crate) redir: Option<String>,
}

/// `observe layer4|layer7`: passive health from live traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observe {
    Layer4,
    Layer7,
}

/// `on-error`: what `error-limit` consecutive live errors do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum OnError {
    #[default]
    FailCheck,
    FastInter,
    SuddenDeath,
    MarkDown,
}

/// Load-balancing and life-cycle options of a server line (also set by
/// `default-server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ServerOpts {
    pub(crate) backup: bool,
    /// Starts in maintenance (`disabled`).
    pub(crate) disabled: bool,
    /// `enabled` was said (a dynamic server then starts ready).
    pub(crate) enabled: bool,
    /// `id` was given on the line (`srv_f_forced_id`).
    pub(crate) forced_id: bool,
    /// 0 = unlimited.
    pub(crate) maxqueue: u32,
    /// Dynamic maxconn floor (with `fullconn`); 0 = none.
    pub(crate) minconn: u32,
    pub(crate) slowstart: Option<Duration>,
    /// `on-marked-down shutdown-sessions`.
    pub(crate) shutdown_on_down: bool,
    /// `on-marked-up shutdown-backup-sessions`.
    pub(crate) shutdown_backup_on_up: bool,
    pub(crate) observe: Option<Observe>,
    /// Consecutive live errors before `on-error` applies (default 10).
    pub(crate) error_limit: u32,
    pub(crate) on_error: OnError,
    /// `send-proxy` (1) / `send-proxy-v2` (2): the PROXY protocol header
    /// written first on each new connection to the server; 0 none.
    pub(crate) send_proxy: u8,
    /// `proto h2`: HTTP/2 to the server (h2c in clear).
    pub(crate) h2: bool,
    /// `proto fcgi`: FastCGI to the server (the backend's `use-fcgi-app`).
    pub(crate) fcgi: bool,
    /// `tfo`: TCP Fast Open on connections to the server (the request's
    /// first bytes go with the SYN when the kernel has a cookie).
    pub(crate) tfo: bool,
    /// `srv_use_ssl` of `show servers state`, as HAProxy keeps it: 1 for
    /// `ssl`, -1 for `no-ssl`, 0 when neither was said.
    pub(crate) use_ssl: i8,
    /// Added by the CLI's `add server`: starts in maintenance with its
    /// checks disabled, as HAProxy's dynamic servers.
    pub(crate) dynamic: bool,
    /// `non-stick`: `stick` rules never store it.
    pub(crate) non_stick: bool,
    /// `pool-max-conn <n>` (`pool-purge-delay 0`: 0): idle connections
    /// kept for reuse at most; None: no limit but the process's.
    pub(crate) pool_max_conn: Option<u32>,
    /// `source <addr>[:<port>[-<port>]] [usesrc ...] [interface <name>]`:
    /// the local address of its connections (else the backend's).
    pub(crate) source: Option<crate::config::extras::Source>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proxy {
    pub(crate) name: String,
    pub(crate) kind: ProxyKind,
    pub(crate) loc: Loc,
    pub(crate) mode: Mode,
    pub(crate) timeouts: Timeouts,
    pub(crate) balance: Balance,
    pub(crate) hash_type: HashType,
    /// `option allbackups`: all usable backups share the load, not only the
    /// first one.
    pub(crate) allbackups: bool,
    /// `option log-health-checks`: every change of a check's result is
    /// logged, not only the server's state changes.
    pub(crate) log_health_checks: bool,
    /// `fullconn` (None: HAProxy's default, 10% of the frontends' maxconn).
    pub(crate) fullconn: Option<u32>,
    /// `id <n>`: the proxy's number (`iid`, `pxid`), else one is given.
    pub(crate) id: Option<u32>,
    /// `disabled` (`enabled` undoes it): the proxy is not started, not
    /// checked, not shown; it keeps its number.
    pub(crate) disabled: bool,
    /// `load-server-state-from-file global|local|none` (None: none).
    pub(crate) load_server_state: Option<LoadServerState>,
    /// `server-state-file-name [<file>|use-backend-name]` (None: the
    /// backend's name).
    pub(crate) server_state_file_name: Option<String>,
    /// Active check type (`option httpchk`, `option tcp-check`).
    pub(crate) check_type: CheckType,
    /// The `option httpchk` request and `http-check` rules.
    pub(crate) http_check: HttpCheck,
    /// `tcp-check` rules.
    pub(crate) tcp_check: Vec<TcpCheckRule>,
    /// `external-check command|path`.
    pub(crate) external_check: crate::config::external_check::ExternalCheckCfg,
    /// `email-alert` lines.
    pub(crate) email_alert: crate::config::mailers::EmailAlert,
    /// `backlog <n>`: the accept queue of the proxy's `bind` lines that
    /// set none.
    pub(crate) backlog: Option<i32>,
    /// Frontend `maxconn` (defaults to the global one).
    pub(crate) maxconn: Option<u32>,
    pub(crate) retries: u32,
    /// `option redispatch [<interval>]`: None when off, else HAProxy's
    /// `redispatch_after` (-1 by default: the last retry).
    pub(crate) redispatch: Option<i32>,
    /// `retry-on` (default `conn-failure`).
    pub(crate) retry_on: RetryOn,
    pub(crate) http_reuse: HttpReuse,
    pub(crate) conn_mode: HttpConnMode,
    /// `option http-ignore-probes`: a connection that sends nothing gets
    /// no 408, no log line and no counter.
    pub(crate) ignore_probes: bool,
    /// `option disable-h2-upgrade`: a cleartext HTTP/1 listener does not
    /// switch to HTTP/2 on the preface.
    pub(crate) disable_h2_upgrade: bool,
    /// `option http-buffer-request`: the request's body is waited for
    /// (whole, or as much as the buffer holds) before the proxy's
    /// `http-request` rules and before a server is chosen.
    pub(crate) buffer_request: bool,
    /// `option accept-invalid-http-request` (frontends) and
    /// `accept-invalid-http-response` (backends): HAProxy's relaxed parsing.
    pub(crate) accept_invalid_req: bool,
    pub(crate) accept_invalid_resp: bool,
    /// `option http-restrict-req-hdr-names preserve|delete|reject`.
    pub(crate) restrict_hdr_names: HdrNamePolicy,
    /// `option h1-case-adjust-bogus-client` (frontends: the answers to
    /// HTTP/1 clients) and `-bogus-server` (backends: the requests to
    /// HTTP/1 servers) apply the global `h1-case-adjust` names.
    pub(crate) h1_case_bogus_client: bool,
    pub(crate) h1_case_bogus_server: bool,
    pub(crate) stats: Option<StatsPage>,
    pub(crate) binds: Vec<Bind>,
    /// ACL definitions in order; a repeated name adds patterns (ORed).
    pub(crate) acls: Vec<AclDef>,
    pub(crate) http_request: Vec<HttpRequestRule>,
    /// `block [{if|unless} <cond>]` (HAProxy ≤ 2.2): `http-request deny`
    /// rules run before all `http-request` rules.
    pub(crate) blocks: Vec<HttpRequestRule>,
    /// `reqadd`, `reqdel`, `reqrep`... (HAProxy ≤ 2.0): run after the
    /// `http-request` rules, before the `redirect` rules.
    pub(crate) legacy_req: LegacyRules,
    /// `rspadd`, `rspdel`, `rsprep`, `rspdeny`: run after the
    /// `http-response` rules.
    pub(crate) legacy_rsp: LegacyRules,
    /// `redirect` rules: run after the `http-request` rules.
    pub(crate) redirects: Vec<HttpRequestRule>,
    /// `capture request|response header <name> len <n>`, in order.
    pub(crate) captures: HeaderCaptures,
    /// The conditions that read the connection's buffer (layer 6
    /// fetches: `req.len`, `req.ssl_sni`...), with the rank of their rule
    /// set in HAProxy's checks and where they were written: an HTTP proxy
    /// gets HAProxy's warning for each.
    pub(crate) l6_conds: Vec<(u8, Loc)>,
    /// `unique-id-format <fmt>` (the log-format text, checked) and
    /// `unique-id-header <name>`: a frontend's request id.
    pub(crate) unique_id_format: Option<String>,
    pub(crate) unique_id_header: Option<String>,
    /// `option clitcpka` / `srvtcpka` (`tcpka`: both): TCP keep-alive
    /// probes on client / server connections.
    pub(crate) tcpka: TcpKeepAlive,
    /// `monitor-uri <uri>`: answered 200 by sluice itself, not logged.
    pub(crate) monitor_uri: Option<String>,
    /// `monitor fail if|unless <cond>`: the monitor URI answers 503.
    pub(crate) monitor_fail: Option<Condition>,
    pub(crate) http_response: Vec<HttpResponseRule>,
    /// `http-after-response` rules (`set-header`, `add-header`,
    /// `del-header`): every response, the ones sluice makes included.
    pub(crate) http_after_response: Vec<HttpResponseRule>,
    /// `tcp-request connection` rules (at accept, on the real peer).
    pub(crate) tcp_connection: Vec<TcpRule>,
    /// `tcp-request session` rules (once the connection is a session).
    pub(crate) tcp_session: Vec<TcpRule>,
    /// `tcp-request content` rules (on the buffered request bytes).
    pub(crate) tcp_content: Vec<TcpRule>,
    /// `tcp-request inspect-delay`: how long content rules wait for data.
    pub(crate) inspect_delay: Option<Duration>,
    /// `tcp-response content` rules (a backend's, on the server's bytes).
    pub(crate) tcp_response: Vec<TcpRule>,
    /// `tcp-response inspect-delay`: how long they wait for them.
    pub(crate) res_inspect_delay: Option<Duration>,
    /// `option forwardfor` (None: off).
    pub(crate) forwardfor: Option<ForwardFor>,
    /// `errorfile <code> <file>`: the response each code is answered with.
    pub(crate) errorfiles: Vec<(u16, bytes::Bytes)>,
    pub(crate) use_backends: Vec<UseBackend>,
    pub(crate) default_backend: Option<(String, Loc)>,
    pub(crate) servers: Vec<Server>,
    /// `cookie <name> ...`: cookie-based persistence.
    pub(crate) cookie: Option<Arc<CookiePersist>>,
    /// `option persist`: a cookie naming a DOWN server still goes to it.
    pub(crate) persist: bool,
    /// `log`, `no log`, `log-format`, `option httplog` & co.
    pub(crate) log: crate::config::log::ProxyLog,
    /// `stick-table ...`: the proxy's table.
    pub(crate) table: Option<TableDef>,
    /// `stick match|on|store-request|store-response` rules, in order.
    pub(crate) stick_rules: Vec<StickRule>,
    /// `compression algo|type|offload` (None: none of them).
    pub(crate) compression: Option<Compression>,
    /// `filter compression`, `filter cache <name>` and the filters the
    /// cache actions declare implicitly, in order.
    pub(crate) filters: Vec<FilterDecl>,
    /// The settings of the keywords `config/extras.rs` describes
    /// (`description`, `source`, `dispatch`, `option originalto`...).
    pub(crate) extras: crate::config::extras::ProxyExtras,
}

impl Proxy {
    pub(crate) fn new(name: String, kind: ProxyKind, loc: Loc) -> Self {
        Proxy {
            name,
            kind,
            loc,
            mode: Mode::default(),
            timeouts: Timeouts::default(),
            balance: Balance::default(),
            hash_type: HashType::default(),
            allbackups: false,
            log_health_checks: false,
            fullconn: None,
            id: None,
            disabled: false,
            load_server_state: None,
            server_state_file_name: None,
            check_type: CheckType::default(),
            http_check: HttpCheck::default(),
            tcp_check: Vec::new(),
            email_alert: Default::default(),
            backlog: None,
            external_check: Default::default(),
            maxconn: None,
            retries: 3,
            redispatch: None,
            retry_on: RetryOn::default(),
            http_reuse: HttpReuse::default(),
            conn_mode: HttpConnMode::default(),
            ignore_probes: false,
            disable_h2_upgrade: false,
            buffer_request: false,
            accept_invalid_req: false,
            restrict_hdr_names: HdrNamePolicy::Preserve,
            accept_invalid_resp: false,
            h1_case_bogus_client: false,
            h1_case_bogus_server: false,
            stats: None,
            binds: Vec::new(),
            acls: Vec::new(),
            http_request: Vec::new(),
            blocks: Vec::new(),
            legacy_req: LegacyRules::default(),
            legacy_rsp: LegacyRules::default(),
            redirects: Vec::new(),
            captures: HeaderCaptures::default(),
            unique_id_format: None,
            unique_id_header: None,
            tcpka: TcpKeepAlive::default(),
            monitor_uri: None,
            monitor_fail: None,
            tcp_connection: Vec::new(),
            tcp_session: Vec::new(),
            tcp_content: Vec::new(),
            inspect_delay: None,
            tcp_response: Vec::new(),
            res_inspect_delay: None,
            http_response: Vec::new(),
            http_after_response: Vec::new(),
            l6_conds: Vec::new(),
            forwardfor: None,
            errorfiles: Vec::new(),
            use_backends: Vec::new(),
            default_backend: None,
            servers: Vec::new(),
            cookie: None,
            persist: false,
            log: Default::default(),
            table: None,
            stick_rules: Vec::new(),
            compression: None,
            filters: Vec::new(),
            extras: Default::default(),
        }
    }
}

/// How the persistence cookie is handled (`cookie <name> <mode>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CookieMode {
    /// No mode word: the cookie is only read (the server sets it).
    #[default]
    Passive,
    Insert,
    Rewrite,
    Prefix,
}

/// `cookie <name> [rewrite|insert|prefix] [indirect] [nocache] [postonly]
/// [preserve] [httponly] [secure] [domain <d>]* [attr <a>]*`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CookiePersist {
    pub(crate) name: String,
    pub(crate) mode: CookieMode,
    pub(crate) indirect: bool,
    pub(crate) nocache: bool,
    pub(crate) postonly: bool,
    pub(crate) preserve: bool,
    pub(crate) httponly: bool,
    pub(crate) secure: bool,
    /// `domain` values in order.
    pub(crate) domains: Vec<String>,
    /// `attr` values in order.
    pub(crate) attrs: Vec<String>,
}

impl CookiePersist {
    /// HAProxy's `PR_CK_ANY`: a mode or `indirect` is set; only then does
    /// the log's termination state show the persistence characters.
    pub(crate) fn logged(&self) -> bool {
        self.mode != CookieMode::Passive || self.indirect
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CheckType {
    #[default]
    Tcp,
    Http,
    TcpCheck,
    /// `option external-check`.
    External,
}

impl Proxy {
    /// What the active checks of this proxy's servers do.
    pub(crate) fn check_kind(&self) -> CheckKind {
        match self.check_type {
            CheckType::Tcp => CheckKind::Tcp,
            CheckType::Http => CheckKind::Http(self.http_check.clone()),
            CheckType::TcpCheck => CheckKind::TcpCheck(self.tcp_check.clone()),
            CheckType::External => {
                CheckKind::External(crate::config::external_check::ExternalCheck::of(self))
            }
        }
    }
}

/// What an active check does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum CheckKind {
    /// A TCP connect.
    #[default]
    Tcp,
    /// `option httpchk`: an HTTP request, judged by `http-check expect`.
    Http(HttpCheck),
    /// `option tcp-check`: `tcp-check connect|send|expect` rules.
    TcpCheck(Vec<TcpCheckRule>),
    /// `option external-check`: a program's exit status.
    External(crate::config::external_check::ExternalCheck),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpCheck {
    pub(crate) method: String,
    pub(crate) uri: String,
    pub(crate) version: String,
    /// `http-check send hdr <name> <value>`.
    pub(crate) headers: Vec<(String, String)>,
    /// `http-check send body <string>`.
    pub(crate) body: String,
    /// `http-check expect`; None: 2xx and 3xx pass.
    pub(crate) expect: Option<Expect>,
    /// `http-check disable-on-404`: a 404 to the check of a server that is
    /// not DOWN passes "conditionally" (L7OKC) and puts it in NOLB.
    pub(crate) disable_on_404: bool,
    /// `http-check send-state`: the request tells the server its state
    /// (`X-Haproxy-Server-State`).
    pub(crate) send_state: bool,
    /// The request and expect rules came from `defaults` (the section has
    /// written none): its own `option httpchk` or `http-check` rule then
    /// starts them afresh, as HAProxy gives it a rule set of its own.
    pub(crate) inherited: bool,
}

impl Default for HttpCheck {
    fn default() -> Self {
        HttpCheck {
            method: "OPTIONS".into(),
            uri: "/".into(),
            version: "HTTP/1.0".into(),
            headers: Vec::new(),
            body: String::new(),
            expect: None,
            disable_on_404: false,
            send_state: false,
            inherited: false,
        }
    }
}

/// `expect [!] <match> <pattern>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expect {
    pub(crate) negate: bool,
    pub(crate) kind: ExpectKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpectKind {
    /// `status <code>[,<code>...]` (ranges `200-399` allowed).
    Status(Vec<(u16, u16)>),
    /// `rstatus <regex>`, `rstring <regex>`: a small regex subset.
    RStatus(String),
    String(String),
    RString(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TcpCheckRule {
    /// `tcp-check connect [port <n>]`.
    Connect { port: Option<u16> },
    /// `tcp-check send <string>` (`\r\n` escapes decoded).
    Send(Vec<u8>),
    /// `tcp-check expect [!] string|rstring <pattern>`.
    Expect(Expect),
    /// A reply judged by a protocol check's rules (`option redis-check`
    /// and the like, `config/check_proto.rs`).
    Proto(crate::config::check_proto::ProtoStep),
    /// `option ssl-hello-chk`'s SSLv3 ClientHello (it carries the time).
    SslHello,
}

/// An encoding of `compression algo`: HAProxy 2.6's four, and sluice's
/// `br` and `zstd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CompAlgo {
    Identity,
    Deflate,
    RawDeflate,
    Gzip,
    /// Brotli: sluice's addition (haproxy -c refuses it).
    Br,
    /// Zstandard: sluice's addition (haproxy -c refuses it).
    Zstd,
}

impl CompAlgo {
    pub(crate) const ALL: [CompAlgo; 6] = [
        CompAlgo::Identity,
        CompAlgo::Deflate,
        CompAlgo::RawDeflate,
        CompAlgo::Gzip,
        CompAlgo::Br,
        CompAlgo::Zstd,
    ];

    /// The name `compression algo` and `res.comp_algo` use.
    pub(crate) fn cfg_name(self) -> &'static str {
        match self {
            CompAlgo::Identity => "identity",
            CompAlgo::Deflate => "deflate",
            CompAlgo::RawDeflate => "raw-deflate",
            CompAlgo::Gzip => "gzip",
            CompAlgo::Br => "br",
            CompAlgo::Zstd => "zstd",
        }
    }

    /// The content-coding clients ask for and `Content-Encoding` says
    /// (`raw-deflate` is announced as `deflate`, as HAProxy does).
    pub(crate) fn coding(self) -> &'static str {
        match self {
            CompAlgo::RawDeflate => "deflate",
            a => a.cfg_name(),
        }
    }

    pub(crate) fn by_name(name: &str) -> Option<CompAlgo> {
        Self::ALL.into_iter().find(|a| a.cfg_name() == name)
    }
}

/// `compression algo <a>...`, `compression type <t>...`,
/// `compression offload` of one proxy (or `defaults` section).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Compression {
    /// In HAProxy's order: each `algo` word goes in front of the ones
    /// before it, so the last one named is tried first (and is what `*`
    /// chooses).
    pub(crate) algos: Vec<CompAlgo>,
    /// The `Content-Type` prefixes that are compressed (none: all).
    pub(crate) types: Vec<String>,
    /// `compression offload`: `Accept-Encoding` is taken out of the
    /// request, so the server does not compress.
    pub(crate) offload: bool,
}

/// One filter of a proxy, declared by `filter` or implicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilterDecl {
    pub(crate) kind: FilterKind,
    /// Declared by a `filter` line (not implied by an action).
    pub(crate) explicit: bool,
    pub(crate) loc: Loc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FilterKind {
    Compression,
    /// The cache of this name.
    Cache(String),
}

/// A `cache <name>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheSection {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `total-max-size`, in 1 KiB blocks as HAProxy counts them.
    pub(crate) max_blocks: u32,
    /// `max-object-size` in bytes (0 until the section ends: then a 256th
    /// of the total, as HAProxy sets it).
    pub(crate) max_object_size: u32,
    /// `max-age` in seconds (60 by default).
    pub(crate) max_age: u32,
    /// `process-vary on`.
    pub(crate) process_vary: bool,
    /// `max-secondary-entries` (10 by default).
    pub(crate) max_secondary_entries: u32,
}

impl CacheSection {
    pub(crate) fn new(name: String, loc: Loc) -> CacheSection {
        CacheSection {
            name,
            loc,
            max_blocks: 0,
            max_object_size: 0,
            max_age: 60,
            process_vary: false,
            max_secondary_entries: 10,
        }
    }
}

/// The cache a `cache-use` or `cache-store` action names: its name, and
/// its place in `Global::caches` once every section is read (the snapshot
/// holds the caches in that order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheRef {
    pub(crate) name: String,
    pub(crate) idx: usize,
}

/// The global section's Lua lines: the scripts run while the
/// configuration was read, and the bounds their code runs under.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LuaConf {
    /// `lua-load` and `lua-load-per-thread` lines, in order.
    pub(crate) loads: Vec<LuaLoad>,
    /// `lua-prepend-path <path> [path|cpath]`: (path, is cpath).
    pub(crate) prepend: Vec<(String, bool)>,
    /// `tune.lua.forced-yield` (instructions between forced yields).
    pub(crate) forced_yield: Option<u32>,
    /// `tune.lua.maxmem` in bytes (its megabytes as written).
    pub(crate) maxmem: Option<usize>,
    /// `tune.lua.session-timeout`, `task-timeout`, `service-timeout`.
    pub(crate) session_timeout: Option<Duration>,
    pub(crate) task_timeout: Option<Duration>,
    pub(crate) service_timeout: Option<Duration>,
    /// `tune.lua.log.loggers on|off` (on by default).
    pub(crate) log_loggers: Option<bool>,
    /// `tune.lua.log.stderr on|auto|off` (auto by default).
    pub(crate) log_stderr: Option<LuaStderr>,
    /// The scripts the `lua-load` lines ran (None: no `lua-load`).
    pub(crate) scripts: ScriptsHandle,
}

/// One `lua-load` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LuaLoad {
    pub(crate) file: String,
    pub(crate) args: Vec<String>,
    pub(crate) per_thread: bool,
}

/// `tune.lua.log.stderr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LuaStderr {
    On,
    Auto,
    Off,
}

/// The loaded scripts; two configurations with the same `lua-load`
/// lines compare equal whatever their scripts' states (the lines are
/// compared in [`LuaConf`]).
#[derive(Clone, Default)]
pub(crate) struct ScriptsHandle(
    pub(crate) Option<std::sync::Arc<dyn crate::sample::script::Scripts>>,
);

impl PartialEq for ScriptsHandle {
    fn eq(&self, _: &ScriptsHandle) -> bool {
        true
    }
}

impl std::fmt::Debug for ScriptsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ScriptsHandle(loaded)"
        } else {
            "ScriptsHandle(none)"
        })
    }
}

/// A rule's `lua.<name> [args]`: the action's name (without `lua.`) and
/// the words after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LuaAction {
    pub(crate) name: String,
    pub(crate) args: Vec<String>,
}
