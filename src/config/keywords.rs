//! Keyword inventories: what sluice implements, and the well-known HAProxy
//! keywords it does not implement yet (so they are reported as such instead
//! of "unknown", and feed the "did you mean" suggestions).

use crate::config::parser::{self, Kwd};

/// The names of a keyword table, in its order (evaluated at compile time,
/// so the lists stay plain slices).
const fn names<H, const N: usize>(table: &[Kwd<H>]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].name;
        i += 1;
    }
    out
}

/// Section keywords sluice parses.
pub const SECTIONS: &[&str] = &[
    "global",
    "defaults",
    "frontend",
    "backend",
    "listen",
    "userlist",
    "resolvers",
    "peers",
    "cache",
    "mailers",
    "http-errors",
    "fcgi-app",
    "ring",
    "log-forward",
];

/// Directives (lines starting with a dot).
pub const DIRECTIVES: &[&str] = &[
    ".if", ".elif", ".else", ".endif", ".notice", ".warning", ".alert", ".diag",
];

/// HAProxy sections sluice does not support.
pub(crate) const UNSUPPORTED_SECTIONS: &[&str] =
    &["program", "namespace_list", "crt-store", "traces"];

/// The `global` keywords sluice parses: the names of its table.
pub const GLOBAL_SUPPORTED: &[&str] = &names::<_, { parser::GLOBAL.len() }>(parser::GLOBAL);

/// `global` keywords of HAProxy 2.6 that have no meaning for sluice
/// (`tune.*` of OpenSSL, Lua or HAProxy's scheduler, the choice of a
/// poller): accepted with a notice giving the reason, so that a tuned
/// HAProxy configuration still starts.
pub(crate) const GLOBAL_IGNORED: &[(&str, &str)] = &[
    (
        "insecure-setuid-wanted",
        "sluice never forbids setuid programs (it sets no PR_SET_NO_NEW_PRIVS), so external checks may run them already",
    ),
    (
        "tune.ssl.lifetime",
        "rustls keeps cached TLS sessions until the cache is full and rotates its ticket keys itself",
    ),
    (
        "tune.ssl.maxrecord",
        "rustls has no dynamic record sizing, records are cut only at 'tune.ssl.hard-maxrecord'",
    ),
    (
        "tune.idle-pool.shared",
        "each of sluice's threads keeps the idle server connections it made, they are never shared",
    ),
    (
        "tune.http.cookielen",
        "it bounds `capture cookie`, which sluice does not have yet",
    ),
    (
        "tune.ssl.default-dh-param",
        "rustls has no DHE cipher suites, so no Diffie-Hellman parameters are used",
    ),
    (
        "tune.ssl.force-private-cache",
        "sluice's TLS session cache is private to its process already",
    ),
    (
        "tune.ssl.ssl-ctx-cache-size",
        "sluice generates no certificates, so it keeps no cache of them",
    ),
    (
        "tune.fd.edge-triggered",
        "the tokio reactor always polls edge-triggered",
    ),
    (
        "tune.maxpollevents",
        "the tokio reactor sizes its own event batches",
    ),
    (
        "tune.runqueue-depth",
        "sluice runs on tokio's scheduler, not HAProxy's run queue",
    ),
    (
        "tune.sched.low-latency",
        "sluice runs on tokio's scheduler, not HAProxy's run queue",
    ),
    (
        "tune.fail-alloc",
        "a test aid of HAProxy's memory pools, which sluice does not have",
    ),
    (
        "tune.buffers.limit",
        "sluice has no shared pool of buffers, each connection holds its own",
    ),
    (
        "tune.buffers.reserve",
        "sluice has no shared pool of buffers, each connection holds its own",
    ),
    (
        "tune.listener.multi-queue",
        "each of sluice's threads accepts on every listener itself",
    ),
    (
        "noepoll",
        "sluice's reactor (tokio) polls with epoll on Linux, HAProxy's choice of poller has no counterpart",
    ),
    (
        "nopoll",
        "sluice's reactor (tokio) polls with epoll on Linux, HAProxy's choice of poller has no counterpart",
    ),
    (
        "nokqueue",
        "sluice's reactor (tokio) polls with epoll on Linux, HAProxy's choice of poller has no counterpart",
    ),
    (
        "noevports",
        "sluice's reactor (tokio) polls with epoll on Linux, HAProxy's choice of poller has no counterpart",
    ),
    (
        "busy-polling",
        "sluice's reactor (tokio) sleeps in epoll_wait, it cannot spin",
    ),
    (
        "profiling.tasks",
        "sluice runs on tokio's scheduler, HAProxy's task profiler has no counterpart",
    ),
    (
        "numa-cpu-mapping",
        "sluice leaves its threads where the system and cpu-map put them",
    ),
    (
        "nogetaddrinfo",
        "sluice resolves the names of its configuration with the system's getaddrinfo either way",
    ),
    (
        "tune.zlib.memlevel",
        "sluice's zlib encoder (zlib-rs) keeps its default memory level",
    ),
    (
        "tune.zlib.windowsize",
        "sluice's zlib encoder (zlib-rs) keeps its default window",
    ),
    (
        "tune.quic.frontend.conn-tx-buffers.limit",
        "sluice does not speak QUIC",
    ),
    (
        "tune.quic.frontend.max-idle-timeout",
        "sluice does not speak QUIC",
    ),
    (
        "tune.quic.frontend.max-streams-bidi",
        "sluice does not speak QUIC",
    ),
    ("tune.quic.retry-threshold", "sluice does not speak QUIC"),
    (
        "cluster-secret",
        "it keys HAProxy's QUIC retry tokens, and sluice does not speak QUIC",
    ),
    (
        "httpclient.resolvers.id",
        "sluice has no internal HTTP client (HAProxy's serves Lua and its CLI)",
    ),
    (
        "httpclient.resolvers.prefer",
        "sluice has no internal HTTP client (HAProxy's serves Lua and its CLI)",
    ),
    (
        "httpclient.ssl.ca-file",
        "sluice has no internal HTTP client (HAProxy's serves Lua and its CLI)",
    ),
    (
        "httpclient.ssl.verify",
        "sluice has no internal HTTP client (HAProxy's serves Lua and its CLI)",
    ),
    (
        "ssl-dh-param-file",
        "rustls has no DHE cipher suites, so no Diffie-Hellman parameters are used",
    ),
    (
        "ssl-mode-async",
        "OpenSSL's asynchronous engines: rustls has none",
    ),
    ("ssl-propquery", "OpenSSL's providers: rustls has none"),
    ("ssl-provider", "OpenSSL's providers: rustls has none"),
    ("ssl-provider-path", "OpenSSL's providers: rustls has none"),
    (
        "no-memory-trimming",
        "sluice does not give memory back to the system at reload (no malloc_trim)",
    ),
    (
        "tune.idletimer",
        "sluice does not size what it forwards by how idle a stream is",
    ),
    (
        "tune.maxaccept",
        "each of sluice's threads accepts what the listener has at each wake-up",
    ),
    (
        "tune.pattern.cache-size",
        "sluice's maps and ACL lists are indexed (hash, tree), it keeps no cache of match results",
    ),
    (
        "tune.pool-high-fd-ratio",
        "sluice does not size its idle server connection pools from the file descriptor limit",
    ),
    (
        "tune.pool-low-fd-ratio",
        "sluice does not size its idle server connection pools from the file descriptor limit",
    ),
    (
        "tune.recv_enough",
        "sluice reads what the socket has at once",
    ),
    (
        "tune.ssl.keylog",
        "it feeds the fetches of TLS secrets, which rustls keeps to itself and sluice does not offer",
    ),
    (
        "maxcompcpuusage",
        "sluice compresses every response its compression settings select, whatever the CPU load",
    ),
    (
        "maxcomprate",
        "sluice compresses every response its compression settings select, whatever the rate",
    ),
    (
        "maxzlibmem",
        "each of sluice's compressors has its own memory, without a process-wide budget",
    ),
];

pub(crate) const GLOBAL_UNSUPPORTED: &[&str] = &[
    "ssl-engine",
    "maxsslconn",
    "maxconnrate",
    "maxsessrate",
    "maxsslrate",
    "noreuseport",
    "insecure-setuid-wanted",
    "set-dumpable",
    "debug",
    "thread-groups",
    "default-path",
    "grace",
    "pp2-never-send-local",
    "issuers-chain-path",
    "stats-file",
    "deviceatlas-json-file",
    "51degrees-data-file",
    "wurfl-data-file",
    "node-id",
    "fd-hard-limit",
    "anonkey",
];

/// Proxy keywords sluice implements.
/// Proxy keywords sluice implements: the names of their table.
pub const PROXY_SUPPORTED: &[&str] = &names::<_, { parser::PROXY.len() }>(parser::PROXY);

/// The header-rewriting keywords HAProxy 2.1 removed, accepted with
/// HAProxy 2.0's deprecation warning (see `parser/legacykw.rs`).
pub const PROXY_LEGACY: &[&str] = &[
    "reqadd",
    "reqdel",
    "reqidel",
    "reqrep",
    "reqirep",
    "reqallow",
    "reqiallow",
    "reqdeny",
    "reqideny",
    "reqtarpit",
    "reqitarpit",
    "reqpass",
    "reqipass",
    "rspadd",
    "rspdel",
    "rspidel",
    "rsprep",
    "rspirep",
    "rspdeny",
    "rspideny",
    "block",
];

pub(crate) const PROXY_UNSUPPORTED: &[&str] = &[
    "log-format-sd",
    "hash-balance-factor",
    "bind-process",
    "backlog",
    "grace",
    "guid",
    "max-session-srv-conns",
    "dynamic-cookie-key",
    "appsession",
];

/// The `option` names sluice implements: the names of their table.
pub const OPTIONS_SUPPORTED: &[&str] = &names::<_, { parser::OPTIONS.len() }>(parser::OPTIONS);

/// Options of old configurations that need no work from sluice: accepted
/// with a warning giving the reason, so such a file still starts.
pub(crate) const OPTIONS_IGNORED: &[(&str, &str)] = &[
    ("contstats", "sluice updates its counters continuously"),
    (
        "http-no-delay",
        "sluice sends what it has at once (TCP_NODELAY is always set)",
    ),
    (
        "http-use-htx",
        "HTX was HAProxy 2.0's switch to its internal HTTP representation",
    ),
    (
        "http-pretend-keepalive",
        "sluice speaks keep-alive to servers unless the connection mode says otherwise",
    ),
    (
        "socket-stats",
        "sluice has no per-listener rows in show stat yet",
    ),
    (
        "tcp-smart-accept",
        "a kernel accept optimisation sluice does not use",
    ),
    (
        "tcp-smart-connect",
        "a kernel connect optimisation sluice does not use",
    ),
    (
        "independent-streams",
        "sluice already times each direction of a transfer on its own",
    ),
    ("nolinger", "sluice closes sockets normally"),
    (
        "prefer-last-server",
        "sluice balances each request with the configured algorithm",
    ),
    (
        "abortonclose",
        "sluice does not abort queued requests whose client closed (HAProxy's behaviour without the option)",
    ),
];

pub(crate) const OPTIONS_UNSUPPORTED: &[&str] =
    &["idle-close-on-response", "log-health-check", "http-tunnel"];

/// The `server` and `default-server` options sluice implements: the names
/// of their table.
pub const SERVER_SUPPORTED: &[&str] = &names::<_, { parser::SERVER.len() }>(parser::SERVER);

pub(crate) const SERVER_UNSUPPORTED: &[&str] = &[
    "track",
    "namespace",
    "socks4",
    "tcp-ut",
    "check-via-socks4",
    "health-check",
];

/// Options of a `bind` line sluice takes (PROXY protocol, TLS termination).
pub const BIND_SUPPORTED: &[&str] = &[
    "accept-proxy",
    "ssl",
    "crt",
    "crt-list",
    "alpn",
    "ssl-min-ver",
    "ssl-max-ver",
    "ciphers",
    "ciphersuites",
    "verify",
    "ca-file",
    "name",
    "id",
    "no-sslv3",
    "no-tlsv10",
    "no-tlsv11",
    "no-tlsv12",
    "no-tlsv13",
    "no-tls-tickets",
    "force-tlsv12",
    "prefer-client-ciphers",
    "strict-sni",
    "proto",
    "v6only",
    "v4v6",
    "mode",
    "uid",
    "gid",
    "user",
    "group",
    "force-tlsv13",
    "curves",
    "ecdhe",
    "no-ca-names",
    "crl-file",
    "ca-verify-file",
    "backlog",
    "maxconn",
    "defer-accept",
    "tfo",
    "interface",
    "mss",
    "tcp-ut",
    "transparent",
];

pub(crate) const BIND_UNSUPPORTED: &[&str] = &[
    "accept-netscaler-cip",
    "expose-fd",
    "quic-cc-algo",
    "ocsp-update",
    "label",
];

/// `bind` options of HAProxy 2.6 that change nothing under sluice:
/// accepted with a notice giving the reason, so a tuned HAProxy
/// configuration still starts. (name, words it takes after it, why)
pub(crate) const BIND_IGNORED: &[(&str, usize, &str)] = &[
    (
        "allow-0rtt",
        0,
        "sluice takes no TLS 1.3 early data, clients send their request once the handshake is done",
    ),
    (
        "ca-ignore-err",
        1,
        "rustls has no OpenSSL verify error ids to skip, a client certificate that fails verification is refused",
    ),
    (
        "crt-ignore-err",
        1,
        "rustls has no OpenSSL verify error ids to skip, a client certificate that fails verification is refused",
    ),
    (
        "ca-sign-file",
        1,
        "sluice generates no certificates, clients get the listener's 'crt'",
    ),
    (
        "ca-sign-pass",
        1,
        "sluice generates no certificates, clients get the listener's 'crt'",
    ),
    (
        "generate-certificates",
        0,
        "sluice generates no certificates, clients get the listener's 'crt'",
    ),
    (
        "level",
        1,
        "only a 'stats socket' listener serves the CLI, where it sets the level",
    ),
    (
        "severity-output",
        1,
        "only a 'stats socket' listener serves the CLI, where it sets the output",
    ),
    (
        "nice",
        1,
        "sluice's threads serve every listener's connections alike, tokio's scheduler has no priorities",
    ),
    (
        "npn",
        1,
        "rustls has no NPN (replaced by ALPN), protocols are negotiated with 'alpn'",
    ),
    (
        "process",
        1,
        "sluice is one process, each of its threads accepts on every listener",
    ),
    (
        "thread",
        1,
        "each of sluice's threads accepts on every listener",
    ),
    (
        "shards",
        1,
        "each of sluice's threads accepts on every listener, through one socket",
    ),
    ("quic-force-retry", 0, "sluice does not speak QUIC"),
    (
        "tls-ticket-keys",
        1,
        "rustls makes and rotates its own ticket keys (kept across reloads), it takes none from a file",
    ),
];

/// `server` options of HAProxy 2.6 that change nothing under sluice, as
/// [`BIND_IGNORED`].
pub(crate) const SERVER_IGNORED: &[(&str, usize, &str)] = &[
    (
        "allow-0rtt",
        0,
        "sluice sends no TLS 1.3 early data to servers",
    ),
    (
        "npn",
        1,
        "rustls has no NPN (replaced by ALPN), protocols are negotiated with 'alpn'",
    ),
    (
        "log-proto",
        1,
        "a proxy's servers are sent no logs: only a 'ring' section's servers forward them, where 'log-proto' is read",
    ),
];

/// The reason an option of `table` ([`BIND_IGNORED`], [`SERVER_IGNORED`])
/// is ignored, and the words it takes after it.
pub(crate) fn ignored(
    table: &[(&str, usize, &'static str)],
    name: &str,
) -> Option<(usize, &'static str)> {
    table
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, args, why)| (*args, *why))
}

pub(crate) const STATS_PROXY_UNSUPPORTED: &[&str] = &["scope", "bind-process"];

/// The `http-request` actions sluice implements: the names of their table.
pub const HTTP_REQUEST_SUPPORTED: &[&str] =
    &names::<_, { parser::HTTP_REQUEST.len() }>(parser::HTTP_REQUEST);

/// The `http-response` actions sluice implements: the names of their table.
pub const HTTP_RESPONSE_SUPPORTED: &[&str] =
    &names::<_, { parser::HTTP_RESPONSE.len() }>(parser::HTTP_RESPONSE);

pub(crate) const HTTP_REQUEST_UNSUPPORTED: &[&str] = &["set-bandwidth-limit"];

/// Every keyword a proxy section may start with, for suggestions.
pub(crate) fn proxy_keywords() -> impl Iterator<Item = &'static str> {
    PROXY_SUPPORTED
        .iter()
        .chain(PROXY_LEGACY)
        .chain(PROXY_UNSUPPORTED)
        .copied()
        .filter(|k| !k.contains(' '))
}

pub(crate) fn global_keywords() -> impl Iterator<Item = &'static str> {
    GLOBAL_SUPPORTED
        .iter()
        .chain(GLOBAL_UNSUPPORTED)
        .copied()
        .chain(GLOBAL_IGNORED.iter().map(|(k, _)| *k))
}

pub(crate) use crate::haproxy26::{Kind, haproxy_has, haproxy26};
