//! A request to a FastCGI application (`use-fcgi-app`, servers with
//! `proto fcgi`): its CGI parameters, made as HAProxy 2.6 makes them and in
//! its order (measured against it: `tests/fcgi_haproxy.rs`). The records
//! and the answer's translation are `wire::fcgi`'s.

use bytes::BytesMut;

use crate::snapshot::fcgi::FcgiRt;
use crate::wire::h1::{BodyKind, Head};

/// Request fields that never become parameters: the connection's own and
/// the credentials (unless `pass-header` names them); `Content-Length`
/// and `Content-Type` become `CONTENT_LENGTH` and `CONTENT_TYPE`.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];
const CREDENTIALS: &[&str] = &["authorization", "proxy-authorization"];

/// What the request's parameters read besides its head.
pub(crate) struct Facts<'a> {
    pub(crate) app: &'a FcgiRt,
    /// The request's samples (`set-param`, conditions).
    pub(crate) cx: &'a crate::sample::Ctx<'a>,
    /// The address the client connected to.
    pub(crate) dst: Option<std::net::SocketAddr>,
    pub(crate) peer: Option<std::net::SocketAddr>,
    pub(crate) https: bool,
    /// The body's length when it is chunked and all read already.
    pub(crate) chunked_len: Option<u64>,
}

/// The records that open the request `head` with a body framed as
/// `body`, and the framing the body goes out in after them (for
/// `FcgiConn::start`: Some(length), None for chunked).
pub(crate) fn request(head: &Head, body: BodyKind, f: &Facts<'_>) -> (BytesMut, Option<u64>) {
    let app = f.app;
    let holds = |c: &Option<crate::acl::eval::CompiledCond>| {
        c.as_ref().is_none_or(|c| app.acls.eval(c, f.cx))
    };
    let mut params: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(32);
    let mut has_length = false;
    for (name, value) in head.headers() {
        let lower = name.to_ascii_lowercase();
        let lower = std::str::from_utf8(&lower).unwrap_or("");
        match lower {
            "content-length" => {
                has_length = true;
                params.push((b"CONTENT_LENGTH".to_vec(), value.to_vec()));
                continue;
            }
            "content-type" => {
                params.push((b"CONTENT_TYPE".to_vec(), value.to_vec()));
                continue;
            }
            _ => {}
        }
        if HOP_BY_HOP.contains(&lower) {
            continue;
        }
        if CREDENTIALS.contains(&lower)
            && !app.pass_headers.iter().any(|(n, c)| n == lower && holds(c))
        {
            continue;
        }
        // A name CGI cannot tell apart from another once `-` is `_`.
        if !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-') {
            continue;
        }
        let mut p = b"HTTP_".to_vec();
        p.extend(name.iter().map(|b| {
            if *b == b'-' {
                b'_'
            } else {
                b.to_ascii_uppercase()
            }
        }));
        params.push((p, value.to_vec()));
    }
    // `set-param` rules, each overriding the parameter of its name made
    // below.
    let mut set: Vec<&str> = Vec::new();
    for (name, fmt, cond) in &app.set_params {
        if !holds(cond) {
            continue;
        }
        let v = fmt.render(f.cx);
        if v.is_empty() {
            continue;
        }
        set.push(name);
        params.push((name.as_bytes().to_vec(), v));
    }
    let target = head.target();
    let (path, query) = match target.iter().position(|&b| b == b'?') {
        Some(q) => (&target[..q], &target[q + 1..]),
        None => (target, &b""[..]),
    };
    let decoded = crate::sample::conv::url_decode(path, false).unwrap_or_else(|| path.to_vec());
    let (mut script, info) = match app.path_info.as_ref().and_then(|re| re.captures(&decoded)) {
        Some(c) => (
            c.get(1).map_or(decoded.clone(), |m| m.as_bytes().to_vec()),
            c.get(2)
                .map(|m| m.as_bytes().to_vec())
                .filter(|i| !i.is_empty()),
        ),
        None => (decoded.clone(), None),
    };
    if script.ends_with(b"/")
        && let Some(index) = &app.index
    {
        script.extend_from_slice(index.as_bytes());
    }
    let docroot = app.docroot.as_bytes();
    let joined = |tail: &[u8]| [docroot, tail].concat();
    let host = head.values("host").next().map(<[u8]>::to_vec);
    let server_name = host.unwrap_or_else(|| {
        f.dst
            .map(|a| a.ip().to_string().into_bytes())
            .unwrap_or_default()
    });
    let mut defaults: Vec<(&[u8], Vec<u8>)> = vec![
        (b"GATEWAY_INTERFACE", b"CGI/1.1".to_vec()),
        (b"DOCUMENT_ROOT", docroot.to_vec()),
        (b"SCRIPT_NAME", script.clone()),
    ];
    if let Some(i) = &info {
        defaults.push((b"PATH_INFO", i.clone()));
    }
    defaults.push((b"REQUEST_URI", target.to_vec()));
    defaults.push((b"REQUEST_METHOD", head.method().to_vec()));
    if !query.is_empty() {
        defaults.push((b"QUERY_STRING", query.to_vec()));
    }
    defaults.push((b"SERVER_NAME", server_name));
    if let Some(d) = f.dst {
        defaults.push((b"SERVER_PORT", d.port().to_string().into_bytes()));
    }
    defaults.push((b"SERVER_PROTOCOL", head.version().to_vec()));
    if let Some(p) = f.peer {
        defaults.push((b"REMOTE_ADDR", p.ip().to_string().into_bytes()));
        defaults.push((b"REMOTE_PORT", p.port().to_string().into_bytes()));
    }
    defaults.push((b"SCRIPT_FILENAME", joined(&script)));
    if let Some(i) = &info {
        defaults.push((b"PATH_TRANSLATED", joined(i)));
    }
    let length = match body {
        BodyKind::Length(n) => Some(n),
        BodyKind::Chunked => f.chunked_len,
        BodyKind::None | BodyKind::UntilClose => Some(0),
    };
    if !has_length && let Some(n) = length {
        defaults.push((b"CONTENT_LENGTH", n.to_string().into_bytes()));
    }
    if f.https {
        defaults.push((b"HTTPS", b"on".to_vec()));
    }
    defaults.push((
        b"SERVER_SOFTWARE",
        concat!("sluice ", env!("CARGO_PKG_VERSION"))
            .as_bytes()
            .to_vec(),
    ));
    for (name, value) in defaults {
        if !set.iter().any(|s| s.as_bytes() == name) {
            params.push((name.to_vec(), value));
        }
    }
    let framing = match body {
        BodyKind::Length(n) => Some(n),
        BodyKind::Chunked => None,
        BodyKind::None | BodyKind::UntilClose => Some(0),
    };
    let records = crate::wire::fcgi::request_head(
        params.iter().map(|(n, v)| (&n[..], &v[..])),
        app.keep_conn,
        framing == Some(0),
    );
    (records, framing)
}
