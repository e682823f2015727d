//! Keyword inventories: what sluice implements, and the well-known HAProxy
//! keywords it does not implement yet (so they are reported as such instead
//! of "unknown", and feed the "did you mean" suggestions).

/// Section keywords sluice parses.
pub const SECTIONS: &[&str] = &["global", "defaults", "frontend", "backend", "listen"];

/// Directives (lines starting with a dot).
pub const DIRECTIVES: &[&str] = &[
    ".if", ".elif", ".else", ".endif", ".notice", ".warning", ".alert", ".diag",
];

/// HAProxy sections sluice does not support.
pub(crate) const UNSUPPORTED_SECTIONS: &[&str] = &[
    "userlist",
    "peers",
    "resolvers",
    "mailers",
    "program",
    "http-errors",
    "ring",
    "log-forward",
    "cache",
    "fcgi-app",
    "namespace_list",
    "crt-store",
    "traces",
];

pub const GLOBAL_SUPPORTED: &[&str] = &[
    "maxconn",
    "log",
    "log-tag",
    "nbthread",
    "stats",
    "nbproc",
    "daemon",
    "pidfile",
    "node",
    "description",
    "zero-warning",
    "hard-stop-after",
    "user",
    "group",
    "uid",
    "gid",
    "chroot",
    "ulimit-n",
    "cpu-map",
    "tune.bufsize",
    "tune.maxrewrite",
    "tune.pipesize",
    "nosplice",
    "maxpipes",
    "tune.h2.header-table-size",
    "tune.h2.initial-window-size",
    "tune.h2.max-concurrent-streams",
    "tune.h2.max-frame-size",
    "ssl-default-bind-ciphers",
    "ssl-default-bind-ciphersuites",
    "ssl-default-bind-options",
    "ssl-default-server-ciphers",
    "ssl-default-server-ciphersuites",
    "ssl-default-server-options",
    "ssl-server-verify",
    "ca-base",
    "crt-base",
];

pub(crate) const GLOBAL_UNSUPPORTED: &[&str] = &[
    "log-send-hostname",
    "master-worker",
    "ssl-dh-param-file",
    "ssl-engine",
    "lua-load",
    "lua-prepend-path",
    "spread-checks",
    "server-state-file",
    "server-state-base",
    "localpeer",
    "setenv",
    "presetenv",
    "resetenv",
    "unsetenv",
    "h1-case-adjust",
    "h1-case-adjust-file",
    "maxsslconn",
    "maxconnrate",
    "maxsessrate",
    "maxsslrate",
    "maxzlibmem",
    "noepoll",
    "nopoll",
    "nokqueue",
    "nogetaddrinfo",
    "noreuseport",
    "insecure-fork-wanted",
    "insecure-setuid-wanted",
    "external-check",
    "expose-experimental-directives",
    "busy-polling",
    "set-dumpable",
    "quiet",
    "debug",
    "strict-limits",
    "profiling.tasks",
    "unix-bind",
    "thread-groups",
    "numa-cpu-mapping",
    "default-path",
    "grace",
    "mworker-max-reloads",
    "pp2-never-send-local",
    "issuers-chain-path",
    "stats-file",
    "httpclient.resolvers.prefer",
    "h2-workaround-bogus-websocket-clients",
    "cluster-secret",
    "deviceatlas-json-file",
    "51degrees-data-file",
    "wurfl-data-file",
    "node-id",
    "fd-hard-limit",
    "anonkey",
];

/// Proxy keywords sluice implements.
pub const PROXY_SUPPORTED: &[&str] = &[
    "capture",
    "cookie",
    "redirect",
    "monitor-uri",
    "monitor",
    "mode",
    "timeout",
    "clitimeout",
    "srvtimeout",
    "contimeout",
    "balance",
    "maxconn",
    "retries",
    "retry-on",
    "http-reuse",
    "option",
    "stats",
    "bind",
    "acl",
    "use_backend",
    "default_backend",
    "http-request",
    "server",
    "default-server",
    "hash-type",
    "fullconn",
    "http-check",
    "tcp-check",
    "log",
    "log-format",
    "log-tag",
    "errorfile",
    "http-response",
    "tcp-request",
];

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
    "errorfiles",
    "errorloc",
    "errorloc302",
    "errorloc303",
    "http-after-response",
    "http-error",
    "tcp-response",
    "stick-table",
    "stick",
    "stick on",
    "stick match",
    "stick store-request",
    "stick store-response",
    "compression",
    "dispatch",
    "hash-balance-factor",
    "email-alert",
    "external-check",
    "force-persist",
    "ignore-persist",
    "rate-limit",
    "persist",
    "server-template",
    "source",
    "unique-id-format",
    "unique-id-header",
    "use-server",
    "filter",
    "declare",
    "description",
    "id",
    "disabled",
    "enabled",
    "bind-process",
    "backlog",
    "grace",
    "guid",
    "http-send-name-header",
    "load-server-state-from-file",
    "server-state-file-name",
    "max-keep-alive-queue",
    "max-session-srv-conns",
    "use-fcgi-app",
    "dynamic-cookie-key",
    "srvtcpka-cnt",
    "srvtcpka-idle",
    "srvtcpka-intvl",
    "clitcpka-cnt",
    "clitcpka-idle",
    "clitcpka-intvl",
    "appsession",
];

pub const OPTIONS_SUPPORTED: &[&str] = &[
    "forceclose",
    "tcpka",
    "clitcpka",
    "srvtcpka",
    "http-keep-alive",
    "http-server-close",
    "httpclose",
    "httpchk",
    "allbackups",
    "tcp-check",
    "httplog",
    "tcplog",
    "dontlognull",
    "log-separate-errors",
    "logasap",
    "forwardfor",
    "http-ignore-probes",
    "disable-h2-upgrade",
    "redispatch",
    "persist",
    "splice-auto",
    "splice-request",
    "splice-response",
];

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
        "http-buffer-request",
        "sluice streams request bodies to the server without waiting for them",
    ),
    (
        "log-health-checks",
        "sluice logs server state changes, not every check",
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

pub(crate) const OPTIONS_UNSUPPORTED: &[&str] = &[
    "checkcache",
    "dontlog-normal",
    "http-use-proxy-header",
    "ldap-check",
    "mysql-check",
    "originalto",
    "pgsql-check",
    "redis-check",
    "smtpchk",
    "spop-check",
    "ssl-hello-chk",
    "transparent",
    "idle-close-on-response",
    "h1-case-adjust-bogus-client",
    "h1-case-adjust-bogus-server",
    "accept-invalid-http-request",
    "accept-invalid-http-response",
    "external-check",
    "http-restrict-req-hdr-names",
    "httpslog",
    "log-health-check",
    "http-tunnel",
];

pub const SERVER_SUPPORTED: &[&str] = &[
    "proto",
    "check-proto",
    "check-ssl",
    "no-check-ssl",
    "cookie",
    "send-proxy",
    "send-proxy-v2",
    "no-send-proxy",
    "no-send-proxy-v2",
    "weight",
    "maxconn",
    "check",
    "no-check",
    "inter",
    "rise",
    "fall",
    "backup",
    "no-backup",
    "disabled",
    "enabled",
    "maxqueue",
    "minconn",
    "slowstart",
    "fastinter",
    "downinter",
    "addr",
    "port",
    "id",
    "on-marked-down",
    "on-marked-up",
    "observe",
    "error-limit",
    "on-error",
    "ssl",
    "verify",
    "ca-file",
    "crt",
    "sni",
    "alpn",
    "no-ssl",
    "ciphers",
    "ciphersuites",
    "ssl-min-ver",
    "ssl-max-ver",
];

pub(crate) const SERVER_UNSUPPORTED: &[&str] = &[
    "verifyhost",
    "agent-check",
    "agent-port",
    "agent-inter",
    "agent-addr",
    "agent-send",
    "track",
    "init-addr",
    "resolvers",
    "resolve-prefer",
    "resolve-net",
    "resolve-opts",
    "check-send-proxy",
    "check-sni",
    "check-alpn",
    "redir",
    "source",
    "namespace",
    "pool-max-conn",
    "pool-purge-delay",
    "pool-low-conn",
    "max-reuse",
    "tfo",
    "usesrc",
    "socks4",
    "ws",
    "non-stick",
    "stick",
    "tcp-ut",
    "allow-0rtt",
    "check-via-socks4",
    "health-check",
    "force-sslv3",
    "force-tlsv10",
    "force-tlsv11",
    "force-tlsv12",
    "force-tlsv13",
    "no-sslv3",
    "no-tlsv10",
    "no-tlsv11",
    "no-tlsv12",
    "no-tlsv13",
    "ssl-reuse",
    "no-ssl-reuse",
    "npn",
    "crl-file",
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
];

/// The TLS options of a `server` line (also in [`SERVER_SUPPORTED`]).
pub(crate) const SERVER_TLS: &[&str] = &[
    "ssl",
    "no-ssl",
    "verify",
    "ca-file",
    "crt",
    "sni",
    "alpn",
    "ssl-min-ver",
    "ssl-max-ver",
    "ciphers",
    "ciphersuites",
];

pub(crate) const BIND_UNSUPPORTED: &[&str] = &[
    "npn",
    "accept-netscaler-cip",
    "maxconn",
    "id",
    "process",
    "thread",
    "v4v6",
    "v6only",
    "transparent",
    "defer-accept",
    "mode",
    "user",
    "group",
    "uid",
    "gid",
    "level",
    "severity-output",
    "expose-fd",
    "interface",
    "tfo",
    "backlog",
    "nice",
    "namespace",
    "mss",
    "tcp-ut",
    "curves",
    "ecdhe",
    "allow-0rtt",
    "quic-cc-algo",
    "generate-certificates",
    "crl-file",
    "no-ca-names",
    "ocsp-update",
    "label",
];

pub(crate) const STATS_PROXY_UNSUPPORTED: &[&str] = &[
    "scope",
    "show-node",
    "show-desc",
    "http-request",
    "bind-process",
    "show-modules",
];

pub const HTTP_REQUEST_SUPPORTED: &[&str] = &[
    "return",
    "deny",
    "tarpit",
    "use-service",
    "allow",
    "redirect",
    "set-header",
    "add-header",
    "del-header",
    "replace-header",
    "set-path",
    "set-query",
];

pub(crate) const HTTP_RESPONSE_SUPPORTED: &[&str] =
    &["set-header", "add-header", "del-header", "deny"];

pub(crate) const HTTP_REQUEST_UNSUPPORTED: &[&str] = &[
    "auth",
    "replace-value",
    "set-pathq",
    "set-uri",
    "set-method",
    "set-var",
    "unset-var",
    "capture",
    "track-sc0",
    "track-sc1",
    "track-sc2",
    "set-log-level",
    "set-nice",
    "set-tos",
    "set-mark",
    "add-acl",
    "del-acl",
    "set-map",
    "del-map",
    "lua",
    "cache-use",
    "early-hint",
    "normalize-uri",
    "reject",
    "silent-drop",
    "wait-for-body",
    "wait-for-handshake",
    "send-spoe-group",
    "set-src",
    "set-dst",
    "set-src-port",
    "set-dst-port",
    "set-timeout",
    "strict-mode",
    "disable-l7-retry",
    "do-resolve",
    "replace-path",
    "replace-pathq",
    "replace-uri",
    "sc-inc-gpc",
    "sc-inc-gpc0",
    "sc-inc-gpc1",
    "sc-set-gpt0",
    "set-var-fmt",
    "set-bandwidth-limit",
];

pub(crate) const TIMEOUTS_UNSUPPORTED: &[&str] = &["client-fin", "server-fin"];

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
    GLOBAL_SUPPORTED.iter().chain(GLOBAL_UNSUPPORTED).copied()
}

/// Every keyword HAProxy 2.6 documents, one `<kind>\t<keyword>\t<where>`
/// a line: generated by `tools/haproxy_keywords.py` from HAProxy 2.6.0's
/// doc/configuration.txt. A name in here that sluice does not implement is
/// reported as "not supported by sluice yet", never as unknown.
const HAPROXY26: &str = include_str!("haproxy26_keywords.tsv");

/// Kinds of [`HAPROXY26`] entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Global,
    Proxy,
    Option,
    HttpRequest,
    HttpResponse,
    Bind,
    Server,
    Fetch,
    Converter,
}

impl Kind {
    fn tag(self) -> &'static str {
        match self {
            Kind::Global => "global",
            Kind::Proxy => "proxy",
            Kind::Option => "option",
            Kind::HttpRequest => "http-request",
            Kind::HttpResponse => "http-response",
            Kind::Bind => "bind",
            Kind::Server => "server",
            Kind::Fetch => "fetch",
            Kind::Converter => "converter",
        }
    }
}

/// The HAProxy 2.6 keywords of one kind.
pub(crate) fn haproxy26(kind: Kind) -> impl Iterator<Item = &'static str> {
    let tag = kind.tag();
    HAPROXY26.lines().filter_map(move |l| {
        let mut f = l.split('\t');
        (f.next() == Some(tag)).then(|| f.next()).flatten()
    })
}

/// Whether HAProxy 2.6 has `name` as a keyword of `kind`. An action or a
/// fetch is looked up by its name before any `(` (`set-var(txn.x)`,
/// `req.hdr(host)`).
pub(crate) fn haproxy_has(kind: Kind, name: &str) -> bool {
    let name = name.split('(').next().unwrap_or(name);
    !name.is_empty() && haproxy26(kind).any(|k| k == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample of each kind, against HAProxy 2.6's manual.
    #[test]
    fn haproxy26_list_has_each_kind() {
        for (kind, name) in [
            (Kind::Global, "lua-load"),
            (Kind::Global, "tune.ssl.default-dh-param"),
            (Kind::Proxy, "stick-table"),
            (Kind::Proxy, "http-after-response"),
            (Kind::Option, "mysql-check"),
            (Kind::HttpRequest, "set-var(txn.x)"),
            (Kind::HttpRequest, "do-resolve(txn.ip,dns,ipv4)"),
            (Kind::HttpResponse, "set-status"),
            (Kind::Bind, "v6only"),
            (Kind::Server, "resolvers"),
            (Kind::Fetch, "base"),
            (Kind::Fetch, "req.hdr(host)"),
            (Kind::Converter, "map_reg"),
            (Kind::Converter, "lower"),
        ] {
            assert!(haproxy_has(kind, name), "{kind:?} {name}");
        }
        assert!(!haproxy_has(Kind::Converter, "nosuchconv"));
        assert!(!haproxy_has(Kind::Fetch, ""));
        // Entries are well formed: three fields, a known kind.
        for l in HAPROXY26.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{l:?}");
        }
    }
}
