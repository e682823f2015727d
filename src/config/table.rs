//! Stick tables as a configuration declares and uses them: `stick-table`
//! lines and the tables of `peers` sections, the `peers` sections
//! themselves, the `track-sc*`, `sc-inc-gpc*` and `sc-set-gpt*` actions
//! and the `stick` rules. Pure data, as the rest of the model; the store
//! is built from it in `state/table/`.

use crate::acl::Condition;
use crate::loc::Loc;
use crate::sample::stick::{DataType, TableRef};

/// What a table's keys are (`type ...`), with their size in bytes as
/// HAProxy keeps them: a string's includes its terminating NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyType {
    Ip,
    Ipv6,
    Integer,
    String(u32),
    Binary(u32),
}

impl KeyType {
    /// The name `show table` gives the type.
    pub(crate) fn name(self) -> &'static str {
        match self {
            KeyType::Ip => "ip",
            KeyType::Ipv6 => "ipv6",
            KeyType::Integer => "integer",
            KeyType::String(_) => "string",
            KeyType::Binary(_) => "binary",
        }
    }

    /// The bytes a key takes.
    pub(crate) fn size(self) -> u32 {
        match self {
            KeyType::Ip | KeyType::Integer => 4,
            KeyType::Ipv6 => 16,
            KeyType::String(n) | KeyType::Binary(n) => n,
        }
    }

    /// The sample type keys are cast to.
    pub(crate) fn sample_type(self) -> crate::sample::value::SmpType {
        use crate::sample::value::SmpType;
        match self {
            KeyType::Ip => SmpType::Ipv4,
            KeyType::Ipv6 => SmpType::Ipv6,
            KeyType::Integer => SmpType::Sint,
            KeyType::String(_) => SmpType::Str,
            KeyType::Binary(_) => SmpType::Bin,
        }
    }
}

/// How a table names the servers its entries stick to (`srvkey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SrvKey {
    #[default]
    Name,
    Addr,
}

/// One data type a table stores: its array size (1 but for `gpc(<n>)`
/// and the like) and its period in milliseconds (rates only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) data: DataType,
    pub(crate) count: u32,
    pub(crate) period: u32,
}

/// A `stick-table` line, or a `table` line of a `peers` section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableDef {
    /// The table's name: its proxy's, or `<peers>/<table>`.
    pub(crate) name: String,
    pub(crate) key: KeyType,
    /// `size`: the most entries it holds.
    pub(crate) size: u32,
    /// `expire` in milliseconds, 0 when the entries do not expire.
    pub(crate) expire: u32,
    pub(crate) nopurge: bool,
    /// `peers <section>` (the section of a `peers` table).
    pub(crate) peers: Option<String>,
    pub(crate) srvkey: SrvKey,
    /// The stored data, in HAProxy's order of data types.
    pub(crate) store: Vec<Stored>,
    pub(crate) loc: Loc,
}

impl TableDef {
    /// What the table stores of `data`, if it does.
    pub(crate) fn stored(&self, data: DataType) -> Option<&Stored> {
        self.store.iter().find(|s| s.data == data)
    }

    /// The same table for a reload: everything but where it is written
    /// (a table whose definition changed starts empty).
    pub(crate) fn same_as(&self, other: &TableDef) -> bool {
        self == other
    }
}

/// A `peers` section: the peers, the local one among them, where it
/// listens, and the tables declared in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeersSection {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `disabled` (an `enabled` after it turns it off again).
    pub(crate) disabled: bool,
    /// `peer <name> <addr>` and `server <name> [<addr>]` lines, in order.
    pub(crate) peers: Vec<PeerLine>,
    /// Where the local peer listens: its `peer` line's address or the
    /// `bind` line's, with the options of `default-bind` and `bind`.
    pub(crate) listen: Option<PeersListen>,
    pub(crate) tables: Vec<TableDef>,
}

impl PeersSection {
    /// Whether the section names this process (`local`) among its peers:
    /// a section without it is dropped, one with it listens for the
    /// other peers (on its `peer` line's address, or its `bind`).
    pub(crate) fn has_local(&self, local: &str) -> bool {
        self.peers.iter().any(|p| p.name == local)
    }
}

/// The local peer's listening socket.
#[derive(Debug, Clone)]
pub(crate) struct PeersListen {
    pub(crate) addr: std::net::SocketAddr,
    /// `ssl` and its options.
    pub(crate) tls: Option<std::sync::Arc<crate::tls::ListenTls>>,
    pub(crate) loc: Loc,
}

/// Two listeners are the same when their address, place and TLS use are
/// (as a proxy's `bind`: certificates are loaded anew by each reading).
impl PartialEq for PeersListen {
    fn eq(&self, o: &PeersListen) -> bool {
        let PeersListen { addr, tls, loc } = self;
        *addr == o.addr && *loc == o.loc && tls.is_some() == o.tls.is_some()
    }
}

/// This process's name among the peers: `localpeer`, else `-L`, else the
/// host's name, as HAProxy picks it.
pub(crate) fn local_peer(global: &crate::config::model::Global) -> String {
    global
        .localpeer
        .clone()
        .or_else(|| crate::sys::process::local_peer().map(str::to_string))
        .unwrap_or_else(|| crate::sys::process::hostname().to_string())
}

/// One peer of a `peers` section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeerLine {
    pub(crate) name: String,
    /// The address as written (the local peer's `server` line has none,
    /// and a peer may have none: it is then never connected to).
    pub(crate) addr: Option<String>,
    /// The address resolved.
    pub(crate) sockaddr: Option<std::net::SocketAddr>,
    /// `server` rather than `peer`.
    pub(crate) server: bool,
    /// `ssl` and its options, `default-server`'s first.
    pub(crate) tls: Option<std::sync::Arc<crate::tls::upstream::UpstreamTls>>,
    pub(crate) loc: Loc,
}

/// `track-sc<n> <key> [table <table>]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrackRule {
    /// The stick counter, 0 to 2.
    pub(crate) sc: u8,
    pub(crate) key: crate::sample::Expr,
    /// The table named, else the proxy's own.
    pub(crate) table: TableRef,
    pub(crate) named: bool,
    pub(crate) loc: Loc,
}

/// Which general purpose counter an `sc-inc-gpc*` action (or tag an
/// `sc-set-gpt*` one) changes: the `gpc0`/`gpt0` data type or the first
/// element of the array (the old names), or an element of the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GpIndex {
    Zero,
    One,
    Array(u32),
}

/// `sc-inc-gpc(<idx>,<sc>)`, `sc-inc-gpc0[(<sc>)]`, `sc-inc-gpc1[(<sc>)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IncGpc {
    pub(crate) which: GpIndex,
    pub(crate) sc: u8,
}

/// `sc-set-gpt(<idx>,<sc>) <value>`, `sc-set-gpt0[(<sc>)] <value>`: an
/// integer, or an expression evaluated when the rule runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetGpt {
    pub(crate) which: GpIndex,
    pub(crate) sc: u8,
    pub(crate) value: GptValue,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GptValue {
    Int(i64),
    Expr(crate::sample::Expr),
}

/// The stick table actions every rule set has.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TableAction {
    Track(TrackRule),
    IncGpc(IncGpc),
    SetGpt(SetGpt),
}

/// What a `stick` rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StickKind {
    /// `stick match`: a server from the table.
    Match,
    /// `stick on`: both.
    On,
    /// `stick store-request`: the server chosen into the table.
    StoreRequest,
    /// `stick store-response`: the same, the key read in the response.
    StoreResponse,
}

impl StickKind {
    pub(crate) fn matches(self) -> bool {
        matches!(self, StickKind::Match | StickKind::On)
    }

    pub(crate) fn stores_request(self) -> bool {
        matches!(self, StickKind::On | StickKind::StoreRequest)
    }
}

/// `stick on|match|store-request|store-response <expr> [table <t>]
/// [if|unless <cond>]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StickRule {
    pub(crate) kind: StickKind,
    pub(crate) key: crate::sample::Expr,
    pub(crate) table: TableRef,
    pub(crate) named: bool,
    pub(crate) cond: Option<Condition>,
    pub(crate) loc: Loc,
}
