//! ACLs: what a request is tested on (fetches), how (match methods), and the
//! `if`/`unless` conditions that combine named ACLs.
//!
//! `parse` turns config words into these types (pure, used by `config`);
//! `eval` tests a compiled condition against a request on the data plane.

pub(crate) mod eval;
pub(crate) mod parse;

use std::net::IpAddr;

use crate::loc::Loc;

/// The sample an ACL reads from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// The request method.
    Method,
    /// The path part of the URI (no query string).
    Path,
    /// The whole request target as sent.
    Url,
    /// Value(s) of a request header (name stored lower-case). Every
    /// occurrence (and every comma-separated value) is tried.
    Hdr(String),
    /// The client's IP address.
    Src,
    /// `req.ssl_sni`: the server name of a TLS ClientHello in the request
    /// bytes buffered so far (`mode tcp`, `tcp-request inspect-delay`).
    ReqSslSni,
    /// `req.ssl_hello_type`: the handshake type of the first TLS record
    /// (1 = ClientHello), matched as a decimal string.
    ReqSslHelloType,
    /// `ssl_fc`: the client connection is TLS (boolean).
    SslFc,
    /// `ssl_fc_sni`: the SNI the client sent.
    SslFcSni,
    /// `ssl_fc_protocol`: `TLSv1.2` / `TLSv1.3`.
    SslFcProtocol,
    /// `ssl_c_used`: the client presented a certificate (boolean).
    SslCUsed,
    /// A fetch of the sample registry (`http_auth(<userlist>)`,
    /// `http_auth_group(<userlist>)`), evaluated through
    /// [`eval::RequestView::sample_ctx`].
    Sample(crate::sample::Expr),
}

/// How the fetched sample is compared with the patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatchMethod {
    /// Exact string equality.
    Str,
    /// A boolean sample: true matches (patterns are not used).
    Bool,
    /// Sample begins with the pattern.
    Beg,
    /// Sample ends with the pattern.
    End,
    /// Sample contains the pattern.
    Sub,
    /// IP address or network membership.
    Ip,
    /// HAProxy's method matcher: the eight standard methods compare exactly
    /// and case-sensitively; other tokens compare as strings (where `-i`
    /// applies).
    Method,
    /// `http_auth_group`: the sample is a user name, the patterns group
    /// names of the fetch's userlist; any group of the user matches.
    AuthGroup,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pattern {
    Str(String),
    /// An address and prefix length (`10.0.0.0/8`; a bare address is /32 or /128).
    Net {
        addr: IpAddr,
        prefix: u8,
    },
}

/// One `acl <name> <criterion> [flags] <values...>` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AclDef {
    pub(crate) name: String,
    pub(crate) fetch: Fetch,
    pub(crate) matcher: MatchMethod,
    /// `-i`: patterns compare case-insensitively.
    pub(crate) ignore_case: bool,
    pub(crate) patterns: Vec<Pattern>,
    pub(crate) loc: Loc,
}

/// A reference to a named ACL inside a condition, possibly negated with `!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AclTerm {
    pub(crate) name: String,
    pub(crate) negated: bool,
}

/// `if|unless <cond>`: an OR of AND-groups (juxtaposition = AND, `or`/`||`
/// separates groups). `unless` negates the whole result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) unless: bool,
    pub(crate) groups: Vec<Vec<AclTerm>>,
}
