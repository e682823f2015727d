//! The settings of proxy keywords that each touch one spot of the data
//! plane: the proxy's `description`, the source address of its server
//! connections (`source`), `dispatch`, `option transparent`, `option
//! originalto`, `http-send-name-header`, `rate-limit sessions` and the TCP
//! keep-alive tuning (`clitcpka-*`, `srvtcpka-*`). Parsed in
//! `parser/extraskw.rs`; kept apart from `model::Proxy`'s own fields so
//! that each keyword's setting and its documentation sit together.

use std::net::SocketAddr;
use std::time::Duration;

/// What a proxy section's extra keywords set. `Default` is HAProxy's
/// behaviour without them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProxyExtras {
    /// `description <text>`: shown on the stats page (the words joined
    /// with one space, as HAProxy joins them).
    pub(crate) description: Option<String>,
    /// `source <addr>[:<port>] [usesrc ...]` (backends and defaults): the
    /// local address of connections to the servers, unless a server sets
    /// its own.
    pub(crate) source: Option<Source>,
    /// `dispatch <addr>:<port>`: the one server of a backend that has no
    /// `server` line.
    pub(crate) dispatch: Option<SocketAddr>,
    /// `use-fcgi-app <name>`: the `fcgi-app` section of the backend's
    /// `proto fcgi` servers.
    pub(crate) use_fcgi_app: Option<String>,
    /// `filter spoe [engine <name>] config <file>`: the engines, each
    /// with what its file says.
    pub(crate) spoe: Vec<crate::config::spoe::SpoeEngine>,
    /// `option transparent`: a backend without servers connects to the
    /// address the client connected to.
    pub(crate) transparent: bool,
    /// `option originalto [except <net>] [header <name>]`.
    pub(crate) originalto: Option<OriginalTo>,
    /// `http-send-name-header [<name>]`: the chosen server's name in this
    /// request header, set when the request is sent to it.
    pub(crate) send_name_header: Option<String>,
    /// `rate-limit sessions <n>`: at most n new sessions a second on the
    /// frontend (0: no limit).
    pub(crate) rate_limit_sessions: Option<u32>,
    /// `clitcpka-cnt|idle|intvl`: the client sockets' keep-alive probes.
    pub(crate) clitcpka: TcpKaTuning,
    /// `srvtcpka-cnt|idle|intvl`: the server sockets' keep-alive probes.
    pub(crate) srvtcpka: TcpKaTuning,
    /// `option checkcache`: a cacheable response that sets a cookie is
    /// refused (502).
    pub(crate) checkcache: bool,
    /// `persist rdp-cookie[(<name>)]`: the RDP cookie (`msts` by default)
    /// naming the server of a TCP session.
    pub(crate) rdp_persist: Option<String>,
    /// `force-persist` and `ignore-persist` rules, in order: the first
    /// whose condition holds decides for the request.
    pub(crate) persist_rules: Vec<PersistRule>,
    /// `errorfiles <name> [<code>...]`, in order: resolved into the
    /// proxy's `errorfiles` once every `http-errors` section is read.
    pub(crate) error_refs: Vec<ErrorsRef>,
    /// `use-server <name> if|unless <cond>`, in order.
    pub(crate) use_servers: Vec<UseServer>,
}

/// `use-server <name> if|unless <cond>`: the request goes to that server
/// (of the same backend) when the condition holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UseServer {
    pub(crate) server: String,
    pub(crate) cond: crate::acl::Condition,
}

/// `force-persist { if | unless } <cond>` (`force`: a persistence cookie
/// or stick entry naming a DOWN server still sends the request there) or
/// `ignore-persist { if | unless } <cond>` (persistence is not looked at).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PersistRule {
    pub(crate) force: bool,
    pub(crate) cond: crate::acl::Condition,
}

/// One `errorfiles <name> [<code>...]` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ErrorsRef {
    /// The `http-errors` section.
    pub(crate) name: String,
    /// The codes taken (none: every page of the section).
    pub(crate) codes: Vec<u16>,
    pub(crate) loc: crate::loc::Loc,
    /// The proxy's own pages (`errorfile`, `errorloc`) when the line was
    /// read: a code whose page changed since was set by a later line,
    /// which wins over this one as in HAProxy.
    pub(crate) before: Vec<(u16, bytes::Bytes)>,
}

impl ProxyExtras {
    /// What the data plane reads: all but the `errorfiles` lines, whose
    /// pages are in the proxy's `errorfiles` already.
    pub(crate) fn compiled(&self) -> ProxyExtras {
        ProxyExtras {
            error_refs: Vec::new(),
            persist_rules: Vec::new(),
            use_servers: Vec::new(),
            ..self.clone()
        }
    }
}

/// `source <addr>[:<port>] [usesrc ...] [interface <name>]`, the proxy's
/// or a server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Source {
    /// The address to bind before connecting (port 0: any).
    pub(crate) addr: SocketAddr,
    /// `<port>-<port>` (a server's `source`): the ports taken in turn.
    pub(crate) ports: Option<(u16, u16)>,
    /// `usesrc ...`: the address the server should see (transparent
    /// proxying, IP_TRANSPARENT).
    pub(crate) usesrc: Option<UseSrc>,
    /// `interface <name>`: SO_BINDTODEVICE.
    pub(crate) interface: Option<IfName>,
}

/// `usesrc <addr>[:<port>] | client | clientip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UseSrc {
    /// A fixed foreign address.
    Addr(SocketAddr),
    /// The client's address and port.
    Client,
    /// The client's address, any port.
    ClientIp,
}

/// A network interface's name, at most 15 bytes as the kernel's
/// (IFNAMSIZ, its NUL included), held inline so that server options stay
/// `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IfName {
    bytes: [u8; 15],
    len: u8,
}

impl IfName {
    pub(crate) fn new(name: &str) -> Option<IfName> {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > 15 || b.contains(&0) {
            return None;
        }
        let mut bytes = [0u8; 15];
        bytes[..b.len()].copy_from_slice(b);
        Some(IfName {
            bytes,
            len: b.len() as u8,
        })
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// `option originalto [except <net>] [header <name>]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OriginalTo {
    /// No header when the destination address is in this network.
    pub(crate) except: Option<(std::net::IpAddr, u8)>,
    /// The header's name (`x-original-to` by default), lower-cased as
    /// HAProxy sends it.
    pub(crate) header: String,
}

/// The keep-alive probes' tuning of one side (None: the system's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TcpKaTuning {
    /// `*tcpka-cnt`: probes sent before the connection is dropped.
    pub(crate) cnt: Option<u32>,
    /// `*tcpka-idle`: idle time before the first probe.
    pub(crate) idle: Option<Duration>,
    /// `*tcpka-intvl`: the time between two probes.
    pub(crate) intvl: Option<Duration>,
}
