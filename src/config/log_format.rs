//! `log-format` strings compiled into a list of nodes, once per
//! configuration (a bad string is a configuration error with file:line);
//! `observe::log::format` renders them once per logged request.
//!
//! The syntax is HAProxy 2.6's: `%<name>` or `%{<flags>}<name>` for a
//! variable, `%[<fetch>[,<conv>...]]` for a sample fetch, `%%` for a
//! percent sign, runs of spaces one separator; `%{+Q}o` sets a flag for
//! every variable that follows.

use crate::sample::{Expr, ExprError, Stage};

/// A value of the log line, by HAProxy's variable name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Var {
    ClientIp,
    ClientPort,
    FrontendIp,
    FrontendPort,
    BackendSrcIp,
    BackendSrcPort,
    ServerIp,
    ServerPort,
    Frontend,
    FrontendTransport,
    Backend,
    Server,
    AcceptDate,
    RequestDate,
    RequestDateGmt,
    RequestDateLocal,
    AcceptDateGmt,
    AcceptDateLocal,
    AcceptUnix,
    AcceptMs,
    TReq,
    TQueue,
    TConnect,
    TResp,
    TActive,
    TTotal,
    THandshake,
    TIdle,
    TQ,
    Status,
    BytesOut,
    BytesIn,
    CapturedReqCookie,
    CapturedRespCookie,
    TermState,
    TermStateCookie,
    ActConn,
    FeConn,
    BeConn,
    SrvConn,
    Retries,
    SrvQueue,
    BeQueue,
    CapturedReqHeaders,
    CapturedRespHeaders,
    CapturedReqHeadersLong,
    CapturedRespHeadersLong,
    RequestLine,
    Method,
    Uri,
    Path,
    Query,
    Version,
    Hostname,
    Pid,
    UniqueId,
    RequestCounter,
    LogCounter,
    SslVersion,
    SslCipher,
}

const VARS: &[(&str, Var)] = &[
    ("ci", Var::ClientIp),
    ("cp", Var::ClientPort),
    ("fi", Var::FrontendIp),
    ("fp", Var::FrontendPort),
    ("bi", Var::BackendSrcIp),
    ("bp", Var::BackendSrcPort),
    ("si", Var::ServerIp),
    ("sp", Var::ServerPort),
    ("f", Var::Frontend),
    ("ft", Var::FrontendTransport),
    ("b", Var::Backend),
    ("s", Var::Server),
    ("t", Var::AcceptDate),
    ("tr", Var::RequestDate),
    ("trg", Var::RequestDateGmt),
    ("trl", Var::RequestDateLocal),
    ("T", Var::AcceptDateGmt),
    ("Tl", Var::AcceptDateLocal),
    ("Ts", Var::AcceptUnix),
    ("ms", Var::AcceptMs),
    ("TR", Var::TReq),
    ("Tw", Var::TQueue),
    ("Tc", Var::TConnect),
    ("Tr", Var::TResp),
    ("Ta", Var::TActive),
    ("Tt", Var::TTotal),
    ("Th", Var::THandshake),
    ("Ti", Var::TIdle),
    ("Tq", Var::TQ),
    ("ST", Var::Status),
    ("B", Var::BytesOut),
    ("U", Var::BytesIn),
    ("CC", Var::CapturedReqCookie),
    ("CS", Var::CapturedRespCookie),
    ("ts", Var::TermState),
    ("tsc", Var::TermStateCookie),
    ("ac", Var::ActConn),
    ("fc", Var::FeConn),
    ("bc", Var::BeConn),
    ("sc", Var::SrvConn),
    ("rc", Var::Retries),
    ("sq", Var::SrvQueue),
    ("bq", Var::BeQueue),
    ("hr", Var::CapturedReqHeaders),
    ("hs", Var::CapturedRespHeaders),
    ("hrl", Var::CapturedReqHeadersLong),
    ("hsl", Var::CapturedRespHeadersLong),
    ("r", Var::RequestLine),
    ("HM", Var::Method),
    ("HU", Var::Uri),
    ("HP", Var::Path),
    ("HQ", Var::Query),
    ("HV", Var::Version),
    ("H", Var::Hostname),
    ("pid", Var::Pid),
    ("ID", Var::UniqueId),
    ("rt", Var::RequestCounter),
    ("lc", Var::LogCounter),
    ("sslv", Var::SslVersion),
    ("sslc", Var::SslCipher),
];

/// One piece of a compiled format.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Text(String),
    Sep,
    Var {
        var: Var,
        quote: bool,
        /// `+X`: addresses, ports, dates and counters in hexadecimal.
        hex: bool,
    },
    /// `%[<sample expression>]`.
    Sample {
        expr: Expr,
        quote: bool,
    },
}

/// A compiled `log-format`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogFormat {
    nodes: Vec<Node>,
    /// A log line's format: a missing value prints `-`. Other formats
    /// (`unique-id-format`) print nothing for it, as HAProxy's.
    pub(crate) mandatory: bool,
}

impl LogFormat {
    /// Compiles the format string of a log line; the error reads as
    /// HAProxy's.
    pub(crate) fn compile(src: &str) -> Result<LogFormat, String> {
        LogFormat::compile_in(src, Stage::LOG)
    }

    /// Compiles a log line's format string evaluated at `stage`: its
    /// fetches must be usable there.
    pub(crate) fn compile_in(src: &str, stage: Stage) -> Result<LogFormat, String> {
        Self::compile_as(src, stage, true)
    }

    /// Compiles a format that is no log line (`unique-id-format`),
    /// evaluated at `stage`: a missing value prints nothing.
    pub(crate) fn compile_other(src: &str, stage: Stage) -> Result<LogFormat, String> {
        Self::compile_as(src, stage, false)
    }

    fn compile_as(src: &str, stage: Stage, log_line: bool) -> Result<LogFormat, String> {
        let b = src.as_bytes();
        let mut nodes = Vec::new();
        let mut text = String::new();
        let mut global_quote = false;
        let mut global_hex = false;
        let mut i = 0;
        let flush = |text: &mut String, nodes: &mut Vec<Node>| {
            if !text.is_empty() {
                nodes.push(Node::Text(std::mem::take(text)));
            }
        };
        while i < b.len() {
            match b[i] {
                b' ' => {
                    flush(&mut text, &mut nodes);
                    while i < b.len() && b[i] == b' ' {
                        i += 1;
                    }
                    nodes.push(Node::Sep);
                }
                b'%' if b.get(i + 1) == Some(&b'%') => {
                    text.push('%');
                    i += 2;
                }
                b'%' => {
                    flush(&mut text, &mut nodes);
                    i += 1;
                    let mut quote = global_quote;
                    let mut hex = global_hex;
                    let mut flags: Vec<(bool, String)> = Vec::new();
                    if b.get(i) == Some(&b'{') {
                        let end = src[i..].find('}').ok_or("missing '}' after '%{'.")?;
                        for f in src[i + 1..i + end].split(',') {
                            if f.is_empty() {
                                continue;
                            }
                            let (on, name) = match f.as_bytes()[0] {
                                b'+' => (true, &f[1..]),
                                b'-' => (false, &f[1..]),
                                _ => return Err(format!("unexpected option '{f}'.")),
                            };
                            if !matches!(name, "Q" | "X" | "E" | "M" | "cbor" | "json" | "bin") {
                                return Err(format!("unknown option '{name}'."));
                            }
                            flags.push((on, name.to_string()));
                        }
                        for (on, name) in &flags {
                            match name.as_str() {
                                "Q" => quote = *on,
                                "X" => hex = *on,
                                _ => {}
                            }
                        }
                        i += end + 1;
                    }
                    if b.get(i) == Some(&b'[') {
                        let (expr, used) = parse_sample(&src[i + 1..], stage)?;
                        nodes.push(Node::Sample { expr, quote });
                        i += 1 + used;
                        continue;
                    }
                    let start = i;
                    while i < b.len() && b[i].is_ascii_alphabetic() {
                        i += 1;
                    }
                    let name = &src[start..i];
                    if name == "o" {
                        // Global options for the variables that follow.
                        for (on, f) in &flags {
                            match f.as_str() {
                                "Q" => global_quote = *on,
                                "X" => global_hex = *on,
                                _ => {}
                            }
                        }
                        continue;
                    }
                    if name.is_empty() {
                        return Err(
                            "no format variable after '%'. If you wanted to emit the '%' character verbatim, you need to use '%%'."
                                .to_string(),
                        );
                    }
                    let var = VARS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).ok_or_else(|| {
                        format!(
                            "no such format variable '{name}'. If you wanted to emit the '%' character verbatim, you need to use '%%'."
                        )
                    })?;
                    nodes.push(Node::Var { var, quote, hex });
                }
                c => {
                    // Keep multi-byte characters whole.
                    let len = utf8_len(c);
                    text.push_str(&src[i..(i + len).min(src.len())]);
                    i += len;
                }
            }
        }
        flush(&mut text, &mut nodes);
        Ok(LogFormat {
            nodes,
            mandatory: log_line,
        })
    }

    /// The pieces, in order, for the renderer.
    pub(crate) fn nodes(&self) -> &[Node] {
        &self.nodes
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// `%[<expr>]` at the start of `r` (just after the `[`): the expression,
/// and the length of `r` it takes with its `]`. Messages as HAProxy's, or
/// "not supported by sluice yet" for what HAProxy has and sluice lacks.
/// Rules' log-format strings and log lines share it; `stage` is where the
/// string is evaluated.
pub(crate) fn parse_sample(r: &str, stage: Stage) -> Result<(Expr, usize), String> {
    let (expr, used) = match Expr::parse_in(r, stage) {
        Ok(e) => e,
        Err(ExprError::Misplaced(m)) => return Err(m),
        Err(ExprError::Unsupported(what)) => {
            let end = r.find(']').unwrap_or(r.len());
            return Err(format!(
                "{what} is not supported by sluice yet in log-format expression '%[{}]'",
                &r[..end]
            ));
        }
        Err(ExprError::Invalid(m)) => {
            return Err(format!("failed to parse sample expression <{r}> : {m}"));
        }
    };
    match r[used..].chars().next() {
        Some(']') => Ok((expr, used + 1)),
        Some(c) => Err(format!(
            "expected ']' after '{}', but found '{c}'",
            &r[..used]
        )),
        None => Err(format!("expected ']' after '{}', but found ''", &r[..used])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_haproxy() {
        assert_eq!(
            LogFormat::compile("%ci %zz").unwrap_err(),
            "no such format variable 'zz'. If you wanted to emit the '%' character verbatim, you need to use '%%'."
        );
        assert!(
            LogFormat::compile("%[nope]")
                .unwrap_err()
                .contains("unknown fetch method 'nope'")
        );
        // Captured from haproxy 2.6.12 (`log-format "%[req.hdr(host)] x"`):
        // request headers are gone when the line is written.
        assert_eq!(
            LogFormat::compile("%[req.hdr(host)] x").unwrap_err(),
            "sample fetch <req.hdr(host)] x> may not be reliably used here because it needs 'HTTP request headers' which is not available here"
        );
        assert_eq!(
            LogFormat::compile("%[req.len]").unwrap_err(),
            "sample fetch <req.len]> may not be reliably used here because it needs 'request buffer' which is not available here"
        );
        // What stays of the request, the backend and the server are there.
        for ok in ["%[method]", "%[be_name] %[srv_name] %[status]", "%[src]"] {
            assert!(LogFormat::compile(ok).is_ok(), "{ok}");
        }
    }
}
