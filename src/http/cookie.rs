//! Cookie-based persistence (`cookie <name> ...` and `server ... cookie
//! <value>`), as HAProxy 2.6's `http_manage_client_side_cookies`,
//! `http_manage_server_side_cookies` and the Set-Cookie insertion of
//! `http_process_res_common`.
//!
//! Nothing is allocated for a request without a `Cookie` header, nor for a
//! response that needs no cookie change.

use crate::config::model::{CookieMode, CookiePersist};
use crate::http::rules::Edits;
use crate::snapshot::BackendRt;
use crate::wire::h1::{Head, trim};

/// The log's request persistence character (HAProxy's `sess_cookie`):
/// no cookie, invalid, for a DOWN server, valid. (HAProxy's `U`, unused,
/// needs `use-server`, which sluice does not have.)
pub(crate) const CK_NONE: u8 = b'N';
/// A cookie was there but chose nothing (`ignore-persist`).
pub(crate) const CK_UNUSED: u8 = b'U';
const CK_INVALID: u8 = b'I';
const CK_DOWN: u8 = b'D';
const CK_VALID: u8 = b'V';

/// What the request's persistence cookie says.
#[derive(Debug)]
pub(crate) struct ClientCookie {
    /// The server (index in the backend) the cookie sends the request to.
    pub(crate) server: Option<usize>,
    /// The log character: `N I D V`.
    pub(crate) state: u8,
    /// `Cookie` headers to rewrite: position, new value (None: removed).
    pub(crate) rewrites: Vec<(usize, Option<Vec<u8>>)>,
    /// A `force-persist` rule holds: a DOWN server named still takes the
    /// request, as under `option persist`.
    force: bool,
}

fn is_sp(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Reads the `Cookie` headers of `req` (as `edits` left them) for the
/// persistence cookie of `be`. None when the request carries no `Cookie`
/// header at all (log `N`, balanced normally).
pub(crate) fn client_side(
    ck: &CookiePersist,
    be: &BackendRt,
    req: &Head,
    edits: Option<&Edits>,
    force: bool,
) -> Option<ClientCookie> {
    let mut out: Option<ClientCookie> = None;
    for (i, (name, received)) in req.headers().enumerate() {
        if !name.eq_ignore_ascii_case(b"cookie") || edits.is_some_and(|e| e.drops_at(i, name)) {
            continue;
        }
        let value = edits.map_or(received, |e| e.value_at(i, received));
        let c = out.get_or_insert_with(|| ClientCookie {
            server: None,
            state: CK_NONE,
            rewrites: Vec::new(),
            force,
        });
        if let Some(new) = scan_header(ck, be, value, c) {
            c.rewrites.push((i, new));
        }
    }
    out
}

/// One `Cookie` header value: updates `c` for each persistence cookie
/// found; returns the header's new value if it changes (Some(None): the
/// header goes, nothing but removed cookies was in it).
fn scan_header(
    ck: &CookiePersist,
    be: &BackendRt,
    value: &[u8],
    c: &mut ClientCookie,
) -> Option<Option<Vec<u8>>> {
    // Changes by cookie position; allocated only once one is needed.
    let mut changes: Vec<(usize, Option<Vec<u8>>)> = Vec::new();
    // `$Path`-style attributes (RFC 2109) belong to the cookie before
    // them: they go when it goes.
    let mut removing = false;
    for (n, (_, seg)) in segments(value).enumerate() {
        if trim(seg).first() == Some(&b'$') {
            if removing {
                changes.push((n, None));
            }
            continue;
        }
        let change = segment(ck, be, seg, c);
        removing = matches!(change, Some(None));
        if let Some(change) = change {
            changes.push((n, change));
        }
    }
    if changes.is_empty() {
        return None;
    }
    Some(rebuild(value, &changes))
}

/// The header value once `changes` are applied, spaced as HAProxy's
/// `http_del_hdr_value` leaves it: a removed run takes the delimiter
/// before it and the spaces around it away, the next cookie then follows
/// its own delimiter and one space; None when no cookie is left.
fn rebuild(value: &[u8], changes: &[(usize, Option<Vec<u8>>)]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(value.len());
    let mut cookie_left = false;
    // A removed run is pending (not yet closed by a kept cookie).
    let mut removed = false;
    for (n, (delim, seg)) in segments(value).enumerate() {
        let seg = match changes.iter().find(|(m, _)| *m == n) {
            Some((_, None)) => {
                removed = true;
                continue;
            }
            Some((_, Some(new))) => &new[..],
            None => seg,
        };
        cookie_left |= trim(seg).first().is_some_and(|&b| b != b'$');
        if removed {
            let body = &seg[seg.iter().position(|&b| !is_sp(b)).unwrap_or(seg.len())..];
            if !out.is_empty() {
                while out.last().is_some_and(|&b| is_sp(b)) {
                    out.pop();
                }
                out.extend(delim);
                out.push(b' ');
            }
            out.extend_from_slice(body);
            removed = false;
        } else {
            if n > 0 {
                out.extend(delim);
            }
            out.extend_from_slice(seg);
        }
    }
    // A run removed at the end goes from its delimiter on: the spaces
    // before that delimiter stay (haproxy 2.6.12 forwards `a=1 ` for
    // `a = 1 ; SRV=s2`).
    cookie_left.then_some(out)
}

/// The cookies of a `Cookie` header value: each with the delimiter before
/// it (`;` or `,`, none for the first).
fn segments(value: &[u8]) -> impl Iterator<Item = (Option<u8>, &[u8])> {
    let mut start = 0;
    let mut delim = None;
    std::iter::from_fn(move || {
        if start > value.len() {
            return None;
        }
        let end = value[start..]
            .iter()
            .position(|&b| b == b';' || b == b',')
            .map_or(value.len(), |p| start + p);
        let item = (delim, &value[start..end]);
        delim = value.get(end).copied();
        start = end + 1;
        Some(item)
    })
}

/// One `name=value` of a `Cookie` header (not a `$` attribute). Returns
/// None to keep it as is, Some(None) to remove it, Some(Some(new)) to
/// replace it. As HAProxy, spaces around `=` are taken out of any cookie.
fn segment(
    ck: &CookiePersist,
    be: &BackendRt,
    seg: &[u8],
    c: &mut ClientCookie,
) -> Option<Option<Vec<u8>>> {
    let lead = seg.iter().position(|&b| !is_sp(b)).unwrap_or(seg.len());
    let body = &seg[lead..];
    let eq = body.iter().position(|&b| b == b'=')?;
    let name = trim(&body[..eq]);
    let after = &body[eq + 1..];
    let vstart = after.iter().position(|&b| !is_sp(b)).unwrap_or(after.len());
    // The value and any spaces before the next delimiter.
    let rest = &after[vstart..];
    let spaced = name.len() != eq || vstart > 0;
    let rebuilt = |value: &[u8]| {
        let mut new = Vec::with_capacity(seg.len());
        new.extend_from_slice(&seg[..lead]);
        new.extend_from_slice(name);
        new.push(b'=');
        new.extend_from_slice(value);
        Some(Some(new))
    };
    if name != ck.name.as_bytes() {
        return if spaced { rebuilt(rest) } else { None };
    }
    let val = trim(rest);
    let delim = if ck.mode == CookieMode::Prefix {
        val.iter().position(|&b| b == b'~')
    } else {
        val.iter().position(|&b| b == b'|')
    };
    let id = &val[..delim.unwrap_or(val.len())];
    if c.server.is_some() {
        // The first cookie naming a usable server wins; later ones change
        // nothing (haproxy 2.6.12 logs `V` for `SRV=s1; SRV=s2`).
    } else if id.is_empty() {
        c.state = CK_INVALID;
    } else {
        let mut down = false;
        for (i, s) in be.servers.iter().enumerate() {
            if s.cookie.as_deref().map(str::as_bytes) != Some(id) {
                continue;
            }
            let up = s.state.takes_persistent();
            if up || be.persist || c.force {
                c.server = Some(i);
                c.state = if up { CK_VALID } else { CK_DOWN };
                break;
            }
            down = true;
            c.state = CK_DOWN;
        }
        if c.server.is_none() && !down {
            c.state = CK_INVALID;
        }
    }
    match (ck.mode, delim) {
        // The server's own value goes on without the `<server>~`.
        (CookieMode::Prefix, Some(d)) => rebuilt(&rest[d + 1..]),
        (CookieMode::Insert, _) if ck.indirect => Some(None),
        _ if spaced => rebuilt(rest),
        _ => None,
    }
}

/// The log's response persistence character (HAProxy's
/// `sess_set_cookie`): none, found and left (passive), deleted, inserted,
/// rewritten.
pub(crate) const SCK_NONE: u8 = b'N';
const SCK_FOUND: u8 = b'P';
const SCK_DELETED: u8 = b'D';
const SCK_INSERTED: u8 = b'I';
const SCK_REPLACED: u8 = b'R';

/// The response side for the request `req` answered `resp` by the server
/// whose cookie value is `server_cookie`; `direct`: the request went to
/// that server because its cookie named it; `ignored`: an
/// `ignore-persist` rule held (nothing inserted). Header changes go into
/// `edits` (created when needed). Returns the log character.
pub(crate) fn server_side(
    ck: &CookiePersist,
    server_cookie: Option<&str>,
    direct: bool,
    req: &Head,
    resp: &Head,
    edits: &mut Option<Edits>,
    ignored: bool,
) -> u8 {
    let mut sck = SCK_NONE;
    let mut found = false;
    for (i, (name, received)) in resp.headers().enumerate() {
        if !name.eq_ignore_ascii_case(b"set-cookie")
            || edits.as_ref().is_some_and(|e| e.drops_at(i, name))
        {
            continue;
        }
        let value = edits.as_ref().map_or(received, |e| e.value_at(i, received));
        let Some((val_beg, val_end)) = own_value(ck, value) else {
            continue;
        };
        found = true;
        sck = SCK_FOUND;
        if ck.preserve {
            continue;
        }
        let new = if ck.mode == CookieMode::Insert || (direct && ck.indirect) {
            sck = SCK_DELETED;
            None
        } else {
            let Some(srv) = server_cookie else { continue };
            let mut v = Vec::with_capacity(value.len() + srv.len() + 1);
            v.extend_from_slice(&value[..val_beg]);
            v.extend_from_slice(srv.as_bytes());
            match ck.mode {
                CookieMode::Rewrite => v.extend_from_slice(&value[val_end..]),
                CookieMode::Prefix => {
                    v.push(b'~');
                    v.extend_from_slice(&value[val_beg..]);
                }
                _ => continue,
            }
            sck = SCK_REPLACED;
            Some(v)
        };
        edits.get_or_insert_with(Edits::default).set_at(i, new);
    }
    // Nothing to insert when the cookie chose the server, or when an
    // `ignore-persist` rule held (HAProxy inserts nothing then).
    let no_insert = direct || ignored;
    if ck.mode == CookieMode::Insert
        && !(found && ck.preserve)
        && !no_insert
        && (!ck.postonly || req.method() == b"POST")
    {
        let e = edits.get_or_insert_with(Edits::default);
        e.add_header("set-cookie", set_cookie_value(ck, server_cookie));
        sck = SCK_INSERTED;
        if ck.nocache && cacheable(req, resp) {
            e.add_header("cache-control", b"private".to_vec());
        }
    }
    sck
}

/// Where the value of the persistence cookie is in a `Set-Cookie` value,
/// if it sets that cookie.
fn own_value(ck: &CookiePersist, value: &[u8]) -> Option<(usize, usize)> {
    let eq = value.iter().position(|&b| b == b'=' || b == b';')?;
    if value[eq] != b'=' || trim(&value[..eq]) != ck.name.as_bytes() {
        return None;
    }
    let mut beg = eq + 1;
    while beg < value.len() && is_sp(value[beg]) {
        beg += 1;
    }
    let mut end = value[beg..]
        .iter()
        .position(|&b| b == b';' || b == b',')
        .map_or(value.len(), |p| beg + p);
    while end > beg && is_sp(value[end - 1]) {
        end -= 1;
    }
    Some((beg, end))
}

/// The inserted cookie, attributes in HAProxy's order. A server without a
/// cookie value gets the cookie cleared.
fn set_cookie_value(ck: &CookiePersist, server_cookie: Option<&str>) -> Vec<u8> {
    let mut v = match server_cookie {
        Some(c) => format!("{}={c}; path=/", ck.name),
        None => format!(
            "{}=; Expires=Thu, 01-Jan-1970 00:00:01 GMT; path=/",
            ck.name
        ),
    };
    for d in &ck.domains {
        v.push_str("; domain=");
        v.push_str(d);
    }
    if ck.httponly {
        v.push_str("; HttpOnly");
    }
    if ck.secure {
        v.push_str("; Secure");
    }
    for a in &ck.attrs {
        v.push_str("; ");
        v.push_str(a);
    }
    v.into_bytes()
}

/// Whether a cache could keep the response (HAProxy 2.6.12's
/// `TX_CACHEABLE`): a safe method and a status cacheable by default, no
/// `Pragma: no-cache` nor `Cache-Control` saying otherwise (`public` makes
/// it cacheable again), and a freshness (`max-age`, `s-maxage`, `Expires`)
/// or a validator (`ETag`, `Last-Modified`).
/// `option checkcache`: `resp` sets a cookie and could be kept by a
/// cache (the test of `nocache`, and no `no-cache="set-cookie"`), which
/// HAProxy 2.6 refuses.
pub(crate) fn cacheable_cookie(req: &Head, resp: &Head) -> bool {
    let no_cache_cookie = |v: &[u8]| {
        let p = b"no-cache=\"set-cookie";
        v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p)
    };
    resp.values("set-cookie").next().is_some()
        && cacheable(req, resp)
        && !resp
            .values("cache-control")
            .flat_map(|v| v.split(|&b| b == b','))
            .any(|v| no_cache_cookie(trim(v)))
}

fn cacheable(req: &Head, resp: &Head) -> bool {
    let mut ok = matches!(req.method(), b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE")
        && matches!(
            resp.status,
            200 | 203 | 204 | 206 | 300 | 301 | 404 | 405 | 410 | 414 | 501
        );
    if resp
        .values("pragma")
        .next()
        .is_some_and(|v| trim(v).eq_ignore_ascii_case(b"no-cache"))
    {
        return false;
    }
    let mut fresh = false;
    let starts = |v: &[u8], p: &[u8]| v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p);
    for v in resp
        .values("cache-control")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(trim)
    {
        if v.eq_ignore_ascii_case(b"public") {
            ok = true;
        } else if [
            &b"private"[..],
            b"no-cache",
            b"no-store",
            b"max-age=0",
            b"s-maxage=0",
        ]
        .iter()
        .any(|d| v.eq_ignore_ascii_case(d))
        {
            ok = false;
        } else if starts(v, b"s-maxage") || starts(v, b"max-age") {
            fresh = true;
        }
    }
    let has = |n: &'static str| resp.values(n).next().is_some();
    ok && (fresh || has("expires") || has("etag") || has("last-modified"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ck(mode: CookieMode, indirect: bool) -> CookiePersist {
        CookiePersist {
            name: "SRV".into(),
            mode,
            indirect,
            ..CookiePersist::default()
        }
    }

    #[test]
    fn set_cookie_value_is_found_past_spaces() {
        let c = ck(CookieMode::Rewrite, false);
        assert_eq!(own_value(&c, b"SRV=abc; path=/"), Some((4, 7)));
        assert_eq!(own_value(&c, b"SRV = abc ;x"), Some((6, 9)));
        assert_eq!(own_value(&c, b"SRVX=abc"), None);
        assert_eq!(own_value(&c, b"SRV; x=1"), None);
    }

    /// Removals spaced as haproxy 2.6.12 forwards them.
    #[test]
    fn removed_cookies_leave_haproxy_spacing() {
        let del = |v: &str, gone: &[usize]| {
            let ch: Vec<_> = gone.iter().map(|&n| (n, None)).collect();
            rebuild(v.as_bytes(), &ch).map(|o| String::from_utf8(o).unwrap())
        };
        assert_eq!(del("a=1;SRV=s2;b=2", &[1]).as_deref(), Some("a=1; b=2"));
        assert_eq!(del("a=1; SRV=s2; b=2", &[1]).as_deref(), Some("a=1; b=2"));
        assert_eq!(del("a=1, SRV=s2; b=2", &[1]).as_deref(), Some("a=1; b=2"));
        assert_eq!(del("SRV=s2, a=1", &[0]).as_deref(), Some("a=1"));
        assert_eq!(del("a=1 ; SRV=s2", &[1]).as_deref(), Some("a=1 "));
        assert_eq!(del("SRV=s2", &[0]), None);
        assert_eq!(del("$V=1; SRV=s2; $P=/", &[1, 2]), None);
        assert_eq!(
            del("$V=1; SRV=s2; $P=/; c=3", &[1, 2]).as_deref(),
            Some("$V=1; c=3")
        );
    }

    #[test]
    fn inserted_attributes_in_haproxy_order() {
        let mut c = ck(CookieMode::Insert, false);
        c.domains = vec![".a.com".into(), "b.org".into()];
        c.httponly = true;
        c.secure = true;
        c.attrs = vec!["SameSite=Lax".into()];
        assert_eq!(
            set_cookie_value(&c, Some("s1")),
            b"SRV=s1; path=/; domain=.a.com; domain=b.org; HttpOnly; Secure; SameSite=Lax"
        );
        assert_eq!(
            set_cookie_value(&ck(CookieMode::Insert, false), None),
            b"SRV=; Expires=Thu, 01-Jan-1970 00:00:01 GMT; path=/"
        );
    }
}
