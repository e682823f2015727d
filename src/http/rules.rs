//! Header and URI rewrites of `http-request` / `http-response` rules and
//! `option forwardfor`, applied while the forwarded head is written: the
//! received head stays as it is, the rules only collect edits. A request
//! that no rule touches carries no edits (nothing is allocated).

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use bytes::{BufMut, BytesMut};

use crate::config::model::{
    ForwardFor, HttpResponseAction, LogFmt, NameMatch, RedirectKind, UriPart,
};
use crate::sample::Count;
use crate::snapshot::Snapshot;
use crate::wire::h1::Head;

/// Edits to a message head, in rule order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Edits {
    /// New request target (set-path / set-query / set-uri / replace-*).
    pub(crate) target: Option<Vec<u8>>,
    /// New request method (`set-method`).
    pub(crate) method: Option<Vec<u8>>,
    /// The received headers to leave out: lower-case names (patterns
    /// under `-m`) and how they match.
    pub(crate) del: Vec<(String, NameMatch)>,
    /// Headers added after the received ones: lower-case name, value.
    pub(crate) add: Vec<(String, Vec<u8>)>,
    /// New values of received headers, by position (`replace-header`).
    pub(crate) replaced: Vec<(usize, Vec<u8>)>,
    /// Positions of single received headers to leave out (a persistence
    /// cookie header left empty).
    pub(crate) del_at: Vec<usize>,
}

impl Edits {
    /// `del-header`: the received ones and those added before.
    pub(crate) fn del_header(&mut self, name: &str) {
        self.del_matching(name, &NameMatch::Str);
    }

    /// `del-header <name> -m <meth>`: every field whose name `how`
    /// matches, received or added before.
    pub(crate) fn del_matching(&mut self, name: &str, how: &NameMatch) {
        // Regexes are tested as written, other patterns without case.
        let pattern = match how {
            NameMatch::Reg(_) => name.to_string(),
            _ => name.to_ascii_lowercase(),
        };
        self.add
            .retain(|(n, _)| !how.matches(&pattern, n.as_bytes()));
        if !self.del.iter().any(|(p, h)| *p == pattern && h == how) {
            self.del.push((pattern, how.clone()));
        }
    }

    /// `replace-header`: every value of `name` (received or added) that
    /// `re` matches is replaced whole by `fmt`, `\N` standing for the
    /// regex's groups.
    pub(crate) fn replace_header(
        &mut self,
        head: &Head,
        name: &str,
        re: &regex::bytes::Regex,
        fmt: &[u8],
    ) {
        self.rewrite_values(head, name, |v| substitute(re, v, fmt));
    }

    /// `replace-value`: each comma-separated value of `name` (received
    /// or added) that `re` matches is replaced whole by `fmt`; the commas
    /// and the spaces around the values stay as they were.
    pub(crate) fn replace_value(
        &mut self,
        head: &Head,
        name: &str,
        re: &regex::bytes::Regex,
        fmt: &[u8],
    ) {
        self.rewrite_values(head, name, |v| substitute_each(re, v, fmt));
    }

    /// Every value of `name`, received (as earlier edits left it) or
    /// added, that `new` gives a replacement for, replaced in place.
    fn rewrite_values(&mut self, head: &Head, name: &str, new: impl Fn(&[u8]) -> Option<Vec<u8>>) {
        if !self.drops(name.as_bytes()) {
            for (i, (n, v)) in head.headers().enumerate() {
                if !n.eq_ignore_ascii_case(name.as_bytes()) {
                    continue;
                }
                if let Some(value) = new(self.value_at(i, v)) {
                    self.replaced.retain(|(j, _)| *j != i);
                    self.replaced.push((i, value));
                }
            }
        }
        for (n, v) in &mut self.add {
            if n.eq_ignore_ascii_case(name)
                && let Some(value) = new(v)
            {
                *v = value;
            }
        }
    }

    /// `set-header`: delete, then add at the end.
    pub(crate) fn set_header(&mut self, name: &str, value: Vec<u8>) {
        self.del_header(name);
        self.add_header(name, value);
    }

    pub(crate) fn add_header(&mut self, name: &str, value: Vec<u8>) {
        self.add.push((name.to_ascii_lowercase(), value));
    }

    /// Whether a received header named `name` is dropped.
    pub(crate) fn drops(&self, name: &[u8]) -> bool {
        self.del.iter().any(|(p, how)| how.matches(p, name))
    }

    /// Whether the received header at position `i`, named `name`, is
    /// dropped.
    pub(crate) fn drops_at(&self, i: usize, name: &[u8]) -> bool {
        self.del_at.contains(&i) || self.drops(name)
    }

    /// The value the received header at position `i` has now: its
    /// replacement if any, else `received`.
    pub(crate) fn value_at<'a>(&'a self, i: usize, received: &'a [u8]) -> &'a [u8] {
        match self.replaced.iter().find(|(j, _)| *j == i) {
            Some((_, v)) => v,
            None => received,
        }
    }

    /// Sets the value of the received header at position `i` (None: the
    /// header is left out).
    pub(crate) fn set_at(&mut self, i: usize, value: Option<Vec<u8>>) {
        self.replaced.retain(|(j, _)| *j != i);
        match value {
            Some(v) => self.replaced.push((i, v)),
            None => self.del_at.push(i),
        }
    }

    /// Whether the message has a header `name` once the edits are applied.
    pub(crate) fn has(&self, head: &Head, name: &str) -> bool {
        self.add.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
            || (!self.drops(name.as_bytes()) && head.values(name).next().is_some())
    }

    /// Writes the added header lines.
    pub(crate) fn put_added(&self, out: &mut BytesMut) {
        for (n, v) in &self.add {
            out.put_slice(n.as_bytes());
            out.put_slice(b": ");
            out.put_slice(v);
            out.put_slice(b"\r\n");
        }
    }
}

/// The value `fmt` gives for `value` if `re` matches it, with `\0`..`\9`
/// replaced by the groups.
pub(super) fn substitute(re: &regex::bytes::Regex, value: &[u8], fmt: &[u8]) -> Option<Vec<u8>> {
    let caps = re.captures(value)?;
    let mut out = Vec::with_capacity(fmt.len() + value.len());
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] == b'\\' && i + 1 < fmt.len() && fmt[i + 1].is_ascii_digit() {
            if let Some(m) = caps.get((fmt[i + 1] - b'0') as usize) {
                out.extend_from_slice(m.as_bytes());
            }
            i += 2;
        } else {
            out.push(fmt[i]);
            i += 1;
        }
    }
    Some(out)
}

/// [`substitute`] on each comma-separated value of `value` (the spaces
/// around a value are not part of it); None if no value matched.
fn substitute_each(re: &regex::bytes::Regex, value: &[u8], fmt: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(value.len() + fmt.len());
    let mut changed = false;
    for (k, item) in value.split(|&b| b == b',').enumerate() {
        if k > 0 {
            out.push(b',');
        }
        let start = item
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(item.len());
        let end = item
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map_or(start, |e| e + 1);
        // A value replaced loses the spaces around it, as in HAProxy.
        match substitute(re, &item[start..end], fmt) {
            Some(new) => {
                out.extend_from_slice(&new);
                changed = true;
            }
            None => out.extend_from_slice(item),
        }
    }
    changed.then_some(out)
}

/// What a rule's log-format string is evaluated against: the request, its
/// client, and the names of where it is in its journey.
#[derive(Clone, Copy)]
pub(crate) struct FmtCtx<'a> {
    pub(crate) req: &'a Head,
    /// None for a client on a UNIX socket (`%[src]` prints nothing).
    pub(crate) src: Option<IpAddr>,
    pub(crate) frontend: &'a str,
    /// The backend once chosen (`%b` is the frontend's name before).
    pub(crate) backend: Option<&'a str>,
    pub(crate) server: Option<&'a str>,
    /// The request's `unique-id-format` id, once made.
    pub(crate) unique_id: Option<&'a str>,
    /// The response, for `http-response` rules (None before it).
    pub(crate) res: Option<&'a Head>,
    /// The ids of the frontend and of the backend once chosen.
    pub(crate) frontend_id: u32,
    pub(crate) backend_id: Option<u32>,
    /// The client's port (None on a UNIX socket or where not passed).
    pub(crate) src_port: Option<u16>,
    /// Whether this is the connection's first request, where known.
    pub(crate) first_req: Option<bool>,
    /// The server's id, once one is chosen.
    pub(crate) server_id: Option<u32>,
    /// The address the client reached (`dst`, `dst_port`), where passed.
    pub(crate) local: Option<SocketAddr>,
    /// The proxies' runtime state (`nbsrv`, `be_conn`...), where passed.
    pub(crate) proxies: Option<&'a Snapshot>,
    /// The request's variables.
    pub(crate) vars: Option<&'a crate::sample::vars::Vars<'a>>,
    /// The client connection's TLS (`ssl_fc*`), if any.
    pub(crate) tls: Option<&'a crate::tls::TlsFacts>,
    /// The client connection's other facts (`fc_*`, `so_*`), if passed.
    pub(crate) client: Option<&'a crate::sample::conn::ClientFacts>,
    /// The server connection's (`bc_*`, `ssl_bc*`), in response rules.
    pub(crate) server_conn: Option<&'a crate::sample::srvconn::ServerFacts>,
    /// The bodies as far as they are buffered (`req.body*`, `res.body*`).
    pub(crate) req_body: Option<&'a crate::sample::fetch::Body<'a>>,
    pub(crate) res_body: Option<&'a crate::sample::fetch::Body<'a>>,
    /// The stick tables and the request's counters, where passed.
    pub(crate) stick: Option<&'a crate::state::table::track::StickView<'a>>,
}

pub(crate) use crate::sys::sockmarks::SockMarks;

/// Where `http-response capture` rules put their values: the response
/// capture slots and the frontend's lengths of them.
pub(crate) struct CaptureSlots<'a> {
    pub(crate) slots: &'a mut [Option<Vec<u8>>],
    pub(crate) lens: &'a [(String, usize)],
}

/// Applies one of the actions `http-response` and `http-after-response`
/// share to the response `resp` and its `edits` (`cx` without the
/// response: it is added here, as each action leaves it): header edits,
/// `set-status`, variables, captures, maps. False for the actions it
/// leaves to its caller (`deny`, `allow`, tables, cache, `wait-for-body`).
pub(crate) fn edit_response(
    action: &HttpResponseAction,
    resp: &mut Head,
    edits: &mut Option<Edits>,
    cx: &FmtCtx<'_>,
    caps: &mut CaptureSlots<'_>,
) -> bool {
    let value = |fmt: &LogFmt, resp: &Head| {
        eval(
            fmt,
            &FmtCtx {
                res: Some(resp),
                ..*cx
            },
        )
    };
    match action {
        HttpResponseAction::SetHeader { name, fmt } => {
            let v = value(fmt, resp);
            edits.get_or_insert_with(Edits::default).set_header(name, v)
        }
        HttpResponseAction::AddHeader { name, fmt } => {
            let v = value(fmt, resp);
            edits.get_or_insert_with(Edits::default).add_header(name, v)
        }
        HttpResponseAction::DelHeader { name, how } => edits
            .get_or_insert_with(Edits::default)
            .del_matching(name, how),
        HttpResponseAction::ReplaceHeader(r) => {
            let v = value(&r.fmt, resp);
            edits
                .get_or_insert_with(Edits::default)
                .replace_header(resp, &r.name, &r.re, &v)
        }
        HttpResponseAction::ReplaceValue(r) => {
            let v = value(&r.fmt, resp);
            edits
                .get_or_insert_with(Edits::default)
                .replace_value(resp, &r.name, &r.re, &v)
        }
        HttpResponseAction::SetStatus { code, reason } => {
            let reason = match reason {
                Some(f) => value(f, resp),
                None => crate::wire::error_pages::http_reason(*code)
                    .as_bytes()
                    .to_vec(),
            };
            // The edits so far become part of the new head.
            if let Some(mut h) = restatus(resp, edits.as_ref(), *code, &reason) {
                h.count_status_line_of(resp);
                *resp = h;
                *edits = None;
            }
        }
        HttpResponseAction::Capture { expr, slot } => {
            let (Some(dst), Some((_, len))) = (caps.slots.get_mut(*slot), caps.lens.get(*slot))
            else {
                return true;
            };
            let scx = sample_ctx(&FmtCtx {
                res: Some(resp),
                ..*cx
            });
            if let Some(v) = expr
                .eval(&scx)
                .and_then(|s| s.cast(crate::sample::value::SmpType::Str))
            {
                let b = v.bytes().unwrap_or(b"");
                *dst = Some(b[..b.len().min(*len)].to_vec());
            }
        }
        // The response is there for the value (`res.hdr`).
        HttpResponseAction::Var(rule) => run_var(
            rule,
            &FmtCtx {
                res: Some(resp),
                ..*cx
            },
        ),
        HttpResponseAction::Map(rule) => run_map(
            rule,
            &FmtCtx {
                res: Some(resp),
                ..*cx
            },
        ),
        // sluice's rewrites do not fail: nothing for it to change.
        HttpResponseAction::StrictMode(_) => {}
        HttpResponseAction::Deny(_)
        | HttpResponseAction::Allow
        | HttpResponseAction::WaitForBody(_)
        | HttpResponseAction::Table(_)
        | HttpResponseAction::CacheStore(_)
        | HttpResponseAction::SetLogLevel(_)
        | HttpResponseAction::SetTos(_)
        | HttpResponseAction::SetMark(_)
        | HttpResponseAction::Return(_)
        | HttpResponseAction::Redirect { .. }
        | HttpResponseAction::Lua(_)
        | HttpResponseAction::SendSpoeGroup { .. }
        | HttpResponseAction::SilentDrop => return false,
        // tokio schedules every task alike.
        HttpResponseAction::SetNice(_) => {}
    }
    true
}

/// Runs a `set-var`, `set-var-fmt` or `unset-var` rule. A value that
/// cannot be stored (a condition, a limit) is silently not, as in HAProxy.
pub(crate) fn run_var(rule: &crate::config::model::VarRule, cx: &FmtCtx<'_>) {
    use crate::config::model::VarValue;
    let scx = sample_ctx(cx);
    match &rule.value {
        VarValue::Unset => scx.unset_var(&rule.var),
        VarValue::Expr(e) => {
            if let Some(s) = e.eval(&scx) {
                scx.set_var(&rule.var, &s, rule.conds);
            }
        }
        VarValue::Fmt(f) => {
            let text = eval(f, cx);
            scx.set_var(
                &rule.var,
                &crate::sample::value::Sample::Str(text.into()),
                rule.conds,
            );
        }
    }
}

/// Runs a map or ACL action: the running configuration's pattern file
/// changes as `add acl`, `set map` and `del map` change it on the CLI
/// (HAProxy ignores what its matchers refuse here, so does this).
pub(crate) fn run_map(rule: &crate::config::model::MapRule, cx: &FmtCtx<'_>) {
    use crate::config::model::MapOp;
    let Some(r) = crate::sample::patref::running().file(&rule.file) else {
        return;
    };
    let key = String::from_utf8_lossy(&eval(&rule.key, cx)).into_owned();
    match rule.op {
        MapOp::AddAcl => {
            if !r.has_key(&key) {
                let _ = r.add(None, &key, None);
            }
        }
        MapOp::SetMap => {
            let value = rule.value.as_ref().map(|v| eval(v, cx)).unwrap_or_default();
            crate::sample::patref::set_map(&rule.file, &key, &String::from_utf8_lossy(&value));
        }
        MapOp::Delete => crate::sample::patref::del_map(&rule.file, &key),
    }
}

/// Evaluates a log-format string.
pub(crate) fn eval(fmt: &LogFmt, cx: &FmtCtx<'_>) -> Vec<u8> {
    fmt.render(&sample_ctx(cx))
}

/// What a rule's sample expressions see.
pub(crate) fn sample_ctx<'a>(cx: &FmtCtx<'a>) -> crate::sample::Ctx<'a> {
    crate::sample::Ctx {
        src: cx.src,
        req: Some(cx.req),
        frontend: cx.frontend,
        backend: cx.backend,
        server: cx.server,
        unique_id: cx.unique_id,
        res: cx.res,
        status: cx.res.map(|h| h.status),
        frontend_id: cx.frontend_id,
        backend_id: cx.backend_id,
        src_port: cx.src_port,
        first_req: cx.first_req,
        server_id: cx.server_id,
        local: cx.local,
        proxies: cx.proxies.map(|s| s as &dyn crate::sample::Proxies),
        vars: cx.vars,
        tls: cx.tls,
        client: cx.client,
        server_conn: cx.server_conn,
        req_body: cx.req_body,
        res_body: cx.res_body,
        stick: cx.stick.map(|s| s as &dyn crate::sample::stick::Stick),
        ..Default::default()
    }
}

/// Where the path of a request target starts and ends (the query and
/// fragment excluded).
pub(crate) fn path_span(target: &[u8]) -> (usize, usize) {
    let start = if target.first() == Some(&b'/') {
        0
    } else if let Some(p) = target.windows(3).position(|w| w == b"://") {
        let rest = p + 3;
        target[rest..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(target.len(), |i| rest + i)
    } else {
        0
    };
    let end = target[start..]
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .map_or(target.len(), |i| start + i);
    (start, end)
}

/// `set-path`: the new path, the query kept.
pub(crate) fn set_path(target: &[u8], path: &[u8]) -> Vec<u8> {
    let (s, e) = path_span(target);
    let mut t = Vec::with_capacity(target.len() + path.len());
    t.extend_from_slice(&target[..s]);
    t.extend_from_slice(path);
    t.extend_from_slice(&target[e..]);
    t
}

/// `set-query`: the new query string (without its `?`).
pub(crate) fn set_query(target: &[u8], query: &[u8]) -> Vec<u8> {
    let (_, e) = path_span(target);
    let frag = target[e..]
        .iter()
        .position(|&b| b == b'#')
        .map_or(target.len(), |i| e + i);
    let mut t = Vec::with_capacity(target.len() + query.len() + 1);
    t.extend_from_slice(&target[..e]);
    t.push(b'?');
    t.extend_from_slice(query);
    t.extend_from_slice(&target[frag..]);
    t
}

/// The authority of an absolute-form target (`http://<authority>/...`).
pub(crate) fn authority(target: &[u8]) -> Option<&[u8]> {
    let p = memchr::memmem::find(target, b"://")?;
    if p == 0 || target.first() == Some(&b'/') {
        return None;
    }
    let rest = &target[p + 3..];
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

impl Edits {
    /// A new absolute target: its authority becomes the `Host` field (in
    /// place, as HAProxy keeps the two in step).
    pub(crate) fn host_from_target(&mut self, head: &Head) {
        let Some(auth) = self
            .target
            .as_deref()
            .and_then(authority)
            .map(<[u8]>::to_vec)
        else {
            return;
        };
        match head
            .headers()
            .position(|(n, _)| n.eq_ignore_ascii_case(b"host"))
        {
            Some(i) if !self.drops_at(i, b"host") => self.set_at(i, Some(auth)),
            _ => self.set_header("host", auth),
        }
    }
}

/// `set-pathq`: the new path and query, what follows them kept.
fn set_pathq(target: &[u8], pathq: &[u8]) -> Vec<u8> {
    let (s, _) = path_span(target);
    let end = target[s..]
        .iter()
        .position(|&b| b == b'#')
        .map_or(target.len(), |i| s + i);
    [&target[..s], pathq, &target[end..]].concat()
}

/// The target once `part` of `target` is set to `value`.
pub(crate) fn set_part(part: UriPart, target: &[u8], value: &[u8]) -> Vec<u8> {
    match part {
        UriPart::Path => set_path(target, value),
        UriPart::Query => set_query(target, value),
        UriPart::PathQ => set_pathq(target, value),
        UriPart::Uri => value.to_vec(),
    }
}

/// `replace-path|replace-pathq|replace-uri`: the target with `part`
/// replaced by `fmt` (its `\N` taken from the match), if `re` matches
/// that part; None if it does not.
pub(crate) fn replace_part(
    part: UriPart,
    target: &[u8],
    re: &regex::bytes::Regex,
    fmt: &[u8],
) -> Option<Vec<u8>> {
    let (s, e) = path_span(target);
    let cur = match part {
        UriPart::Path => &target[s..e],
        UriPart::PathQ => {
            let end = target[s..]
                .iter()
                .position(|&b| b == b'#')
                .map_or(target.len(), |i| s + i);
            &target[s..end]
        }
        UriPart::Query | UriPart::Uri => target,
    };
    let new = substitute(re, cur, fmt)?;
    Some(set_part(part, target, &new))
}

/// The Location of a `redirect` rule.
pub(crate) fn location(
    kind: RedirectKind,
    value: &[u8],
    req: &Head,
    target: &[u8],
    (drop_query, append_slash): (bool, bool),
) -> Vec<u8> {
    let (s, e) = path_span(target);
    // The path, with `append-slash`, then the query unless `drop-query`.
    let mut uri = target[s..e].to_vec();
    if append_slash && !uri.ends_with(b"/") {
        uri.push(b'/');
    }
    if !drop_query {
        uri.extend_from_slice(&target[e..]);
    }
    let uri = &uri[..];
    let mut loc = Vec::with_capacity(value.len() + uri.len() + 16);
    match kind {
        RedirectKind::Location => loc.extend_from_slice(value),
        RedirectKind::Prefix => {
            // A prefix of "/" adds nothing (HAProxy avoids the double slash).
            if value != b"/" {
                loc.extend_from_slice(value);
            }
            loc.extend_from_slice(uri);
        }
        RedirectKind::Scheme => {
            loc.extend_from_slice(value);
            loc.extend_from_slice(b"://");
            if let Some(h) = req.values("host").next() {
                loc.extend_from_slice(h);
            }
            loc.extend_from_slice(uri);
        }
    }
    loc
}

/// HAProxy's redirect response: no body, `cache-control: no-cache` for
/// the statuses a cache must not keep (302, 303, 307).
pub(crate) fn redirect_response(code: u16, location: &[u8], keep: bool) -> BytesMut {
    let mut out = BytesMut::with_capacity(128 + location.len());
    let _ = write!(
        out,
        "HTTP/1.1 {code} {}\r\ncontent-length: 0\r\nlocation: ",
        crate::wire::error_pages::reason(code)
    );
    out.put_slice(location);
    out.put_slice(b"\r\n");
    if matches!(code, 302 | 303 | 307) {
        out.put_slice(b"cache-control: no-cache\r\n");
    }
    if !keep {
        out.put_slice(b"connection: close\r\n");
    }
    out.put_slice(b"\r\n");
    out
}

/// The head as lines without their line ends: the start line, then each
/// header line (edited ones rewritten, dropped ones left out, added ones
/// last).
pub(crate) fn head_lines(head: &Head, edits: Option<&Edits>) -> Vec<Vec<u8>> {
    let mut lines = Vec::with_capacity(head.header_lines().size_hint().0 + 4);
    let mut first = Vec::with_capacity(64);
    if head.status == 0 {
        first.extend_from_slice(
            edits
                .and_then(|e| e.method.as_deref())
                .unwrap_or(head.method()),
        );
        first.push(b' ');
        first.extend_from_slice(
            edits
                .and_then(|e| e.target.as_deref())
                .unwrap_or(head.target()),
        );
        first.extend_from_slice(if head.minor == 0 {
            b" HTTP/1.0"
        } else {
            b" HTTP/1.1"
        });
    } else {
        first.extend_from_slice(if head.minor == 0 {
            b"HTTP/1.0 "
        } else {
            b"HTTP/1.1 "
        });
        first.extend_from_slice(format!("{:03} ", head.status).as_bytes());
        first.extend_from_slice(head.reason());
    }
    lines.push(first);
    for (i, (name, line)) in head.header_lines().enumerate() {
        let Some(e) = edits else {
            lines.push(line.to_vec());
            continue;
        };
        if e.drops_at(i, name) {
            continue;
        }
        match e.replaced.iter().find(|(j, _)| *j == i) {
            Some((_, v)) => lines.push([name, b": ", v].concat()),
            None => lines.push(line.to_vec()),
        }
    }
    if let Some(e) = edits {
        for (n, v) in &e.add {
            lines.push([n.as_bytes(), b": ", v].concat());
        }
    }
    lines
}

/// Parses the rewritten lines as a head; None if they are not one (a
/// replacement that broke the start line, or that put a blank line in).
pub(crate) fn rebuild(lines: &[Vec<u8>], response: bool) -> Option<Head> {
    let len = lines.iter().map(|l| l.len() + 2).sum::<usize>() + 2;
    let mut raw = Vec::with_capacity(len);
    for l in lines {
        raw.extend_from_slice(l);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"\r\n");
    if crate::wire::h1::head_end(&raw) != Some(raw.len()) {
        return None;
    }
    let raw = bytes::Bytes::from(raw);
    let head = if response {
        Head::parse_response(raw)
    } else {
        Head::parse_request(raw)
    };
    head.ok()
}

/// `set-status`: the response with its edits applied and its status line
/// saying `code` and `reason`; None if that is no head any more (a reason
/// with a line break in it).
pub(crate) fn restatus(
    head: &Head,
    edits: Option<&Edits>,
    code: u16,
    reason: &[u8],
) -> Option<Head> {
    let mut lines = head_lines(head, edits);
    let mut first = Vec::with_capacity(16 + reason.len());
    first.extend_from_slice(if head.minor == 0 {
        b"HTTP/1.0 "
    } else {
        b"HTTP/1.1 "
    });
    first.extend_from_slice(format!("{code:03} ").as_bytes());
    first.extend_from_slice(reason);
    lines[0] = first;
    rebuild(&lines, true)
}

/// `option forwardfor`: writes the header line unless the client is in
/// the `except` network or (`if-none`) the request already has one.
pub(crate) fn put_forwarded_for(
    out: &mut BytesMut,
    ff: &ForwardFor,
    src: IpAddr,
    req: &Head,
    edits: Option<&Edits>,
) {
    if let Some((addr, prefix)) = ff.except
        && (crate::sample::pattern::Net { addr, prefix }).contains(src)
    {
        return;
    }
    if ff.if_none {
        let present = match edits {
            Some(e) => e.has(req, &ff.header),
            None => req.values(&ff.header).next().is_some(),
        };
        if present {
            return;
        }
    }
    out.put_slice(ff.header.as_bytes());
    out.put_slice(b": ");
    let _ = write!(out, "{}", MappedIp(src));
    out.put_slice(b"\r\n");
}

/// Writes `ip` as `option forwardfor` does (an IPv4-mapped IPv6 address as
/// IPv4).
pub(crate) fn put_ip(out: &mut BytesMut, ip: IpAddr) {
    let _ = write!(out, "{}", MappedIp(ip));
}

/// Displays an IPv4-mapped IPv6 address as IPv4, without allocating.
struct MappedIp(IpAddr);

impl std::fmt::Display for MappedIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.fmt(f),
                None => v6.fmt(f),
            },
            v4 => v4.fmt(f),
        }
    }
}

/// The counts of the sample fetches that read runtime state, from the
/// snapshot's backends and their servers.
impl crate::sample::Proxies for Snapshot {
    fn count(&self, what: Count, backend: &str, server: Option<&str>) -> Option<i64> {
        if matches!(
            what,
            Count::FrontendConns | Count::FrontendSessRate | Count::FrontendReqRate
        ) {
            let c = &self.frontends().find(|f| f.name == backend)?.state.counters;
            return Some(match what {
                Count::FrontendConns => c.sess.cur() as i64,
                Count::FrontendSessRate => c.sess_rate().rate() as i64,
                _ => c.req_rate().rate() as i64,
            });
        }
        if what == Count::FrontendClientTimeout {
            let fe = self.frontends().find(|f| f.name == backend)?;
            return Some(millis(fe.timeouts.client));
        }
        if matches!(
            what,
            Count::BackendServerTimeout | Count::BackendTunnelTimeout
        ) {
            // The current backend is the frontend itself until one is
            // chosen (a `listen`).
            let timeouts = match self.backend(backend) {
                Some(be) => &be.timeouts,
                None => &self.frontends().find(|f| f.name == backend)?.timeouts,
            };
            return Some(millis(if what == Count::BackendServerTimeout {
                timeouts.server
            } else {
                timeouts.tunnel
            }));
        }
        let be = self.backend(backend)?;
        if let Some(name) = server {
            let srv = be.servers.iter().find(|s| s.name == name)?;
            let st = &srv.state;
            return Some(match what {
                Count::ServerUp => i64::from(st.takes_persistent()),
                Count::ServerConns => st.counters.sess.cur() as i64,
                Count::ServerQueue => st.counters.queue.cur() as i64,
                // The weight set at run time, whatever the server's state
                // (HAProxy's effective weight; sluice's slow start ramps
                // elsewhere).
                Count::ServerWeight | Count::ServerUserWeight => {
                    i64::from(st.weight.load(std::sync::atomic::Ordering::Relaxed))
                }
                Count::ServerInitialWeight => i64::from(srv.weight),
                Count::ServerConnsFree => conns_free(st),
                Count::ServerSessRate => st.counters.sess_rate().rate() as i64,
                _ => return None,
            });
        }
        let usable = || {
            let (_, act, bck) = be.lb.shown_totals(&be.servers);
            match (act, bck) {
                (0, 0) => 0,
                (0, b) if be.lb.allbackups() => b as i64,
                (0, _) => 1,
                (a, _) => a as i64,
            }
        };
        Some(match what {
            Count::UsableServers => usable(),
            Count::AverageQueue => {
                // Every request waiting, in the backend's queue or a
                // server's.
                let queued = be.state.counters.queue.cur() as i64
                    + be.servers
                        .iter()
                        .map(|s| s.state.counters.queue.cur() as i64)
                        .sum::<i64>();
                match usable() {
                    0 => queued,
                    n => (queued + n - 1) / n,
                }
            }
            Count::ConnSlots => {
                let mut slots = 0;
                for s in be.servers.iter().filter(|s| s.state.usable()) {
                    let maxconn = s.state.maxconn.load(std::sync::atomic::Ordering::Relaxed);
                    if maxconn == 0 || s.maxqueue == 0 {
                        return Some(-1);
                    }
                    slots += i64::from(maxconn) - s.state.counters.sess.cur() as i64
                        + i64::from(s.maxqueue)
                        - s.state.counters.queue.cur() as i64;
                }
                slots
            }
            Count::BackendConns => be.state.counters.sess.cur() as i64,
            Count::BackendQueue => be.state.counters.queue.cur() as i64,
            Count::BackendSessRate => be.state.counters.sess_rate().rate() as i64,
            // Servers in maintenance do not count; one without `maxconn`
            // makes it unlimited.
            Count::BackendConnsFree => {
                let mut free = 0;
                for s in &be.servers {
                    if s.state.is_maint() {
                        continue;
                    }
                    match conns_free(&s.state) {
                        -1 => return Some(-1),
                        n => free += n,
                    }
                }
                free
            }
            _ => return None,
        })
    }

    fn default_backend(&self, frontend: &str) -> Option<&str> {
        let fe = self.frontends().find(|f| f.name == frontend)?;
        fe.default_backend.as_deref().map(|b| b.name.as_str())
    }
}

/// A configured timeout in milliseconds, 0 when there is none.
fn millis(t: Option<std::time::Duration>) -> i64 {
    t.map_or(0, |d| d.as_millis() as i64)
}

/// What a server's `maxconn` leaves (-1 without one).
fn conns_free(st: &crate::state::ServerState) -> i64 {
    match st.maxconn.load(std::sync::atomic::Ordering::Relaxed) {
        0 => -1,
        max => (i64::from(max) - st.counters.sess.cur() as i64).max(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries() {
        assert_eq!(set_path(b"/a/b?x=1", b"/n"), b"/n?x=1");
        assert_eq!(set_path(b"/a", b"/n"), b"/n");
        assert_eq!(set_path(b"http://h/a?q", b"/n"), b"http://h/n?q");
        assert_eq!(set_query(b"/a?x=1", b"y=2"), b"/a?y=2");
        assert_eq!(set_query(b"/a", b"y=2"), b"/a?y=2");
    }

    #[test]
    fn redirect_bytes() {
        assert_eq!(
            &redirect_response(302, b"/loc", false)[..],
            b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: /loc\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
        );
        assert_eq!(
            &redirect_response(301, b"/pre/r2?k", true)[..],
            b"HTTP/1.1 301 Moved Permanently\r\ncontent-length: 0\r\nlocation: /pre/r2?k\r\n\r\n"
        );
    }
}
