//! HAProxy 2.6's cache on the request path: `http-request cache-use`
//! (the key, the request's cacheability, the lookup and the hit served
//! in the server's place), `http-response cache-store` (what is stored:
//! a 200 to a GET of HTTP/1.1 without `Authorization`, cacheable by its
//! `Cache-Control`/`Pragma`, with an expiration or a validator, `Vary`
//! only on `Accept-Encoding` and `Referer` with `process-vary on`), and
//! the objects themselves in `state/cache.rs`. Nothing is revalidated
//! with the server; a conditional request gets a 304 from a stored
//! object, as HAProxy answers it.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use bytes::{BufMut, Bytes, BytesMut};

use crate::http::forward::{Outcome, ReqCtx};
use crate::http::rules::Edits;
use crate::state::Counters;
use crate::state::cache::{Cache, ENTRY_SIZE, Entry, Fill, Key, Lookup, SecondaryKey};
use crate::wire::h1::{self, BodyKind, Head};

/// What the cache rules learned of one request (made by its first
/// `cache-use`: a request without one has none).
#[derive(Default)]
pub(crate) struct CacheTxn {
    /// The SHA-1 of the URI and host (None: no host, nothing to key on).
    key: Option<Key>,
    /// Not looked up, not stored (HAProxy's `TX_CACHE_IGNORE`).
    ignore: bool,
    /// The request lets its response be stored (`TX_CACHEABLE`).
    cacheable: bool,
    /// The object the response is served from.
    pub(crate) hit: Option<Hit>,
}

/// A request answered from the cache.
pub(crate) struct Hit {
    pub(crate) cache: Arc<Cache>,
    pub(crate) entry: Arc<Entry>,
    /// A conditional request the object satisfies: a 304.
    not_modified: bool,
}

/// Unix seconds, the clock objects expire by.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl CacheTxn {
    /// The request's key and cacheability, as HAProxy's `sha1_hosturi`
    /// and `http_check_request_for_cacheability` find them.
    fn of(head: &Head, edits: Option<&Edits>) -> CacheTxn {
        let method = head.method();
        let mut t = CacheTxn {
            cacheable: matches!(method, b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE"),
            ignore: head.minor == 0 || !matches!(method, b"GET" | b"HEAD"),
            ..Default::default()
        };
        let uri = edits
            .and_then(|e| e.target.as_deref())
            .unwrap_or(head.target());
        if !uri.is_empty() {
            use sha1::Digest;
            let mut h = sha1::Sha1::new();
            // An origin-form URI is keyed with the host, as an HTTP/2
            // request's absolute one would be.
            if uri.starts_with(b"/") || uri == b"*" {
                if let Some(host) = head.values("host").next() {
                    h.update(b"https://");
                    h.update(h1::trim(host));
                    h.update(uri);
                    t.key = Some(h.finalize().into());
                }
            } else {
                h.update(uri);
                t.key = Some(h.finalize().into());
            }
        }
        let pragma = head
            .values("pragma")
            .next()
            .is_some_and(|v| h1::trim(v).eq_ignore_ascii_case(b"no-cache"));
        if head.values("authorization").next().is_some() {
            t.cacheable = false;
            t.ignore = true;
        }
        let mut cc_found = false;
        for v in head.values("cache-control") {
            for e in v
                .split(|&b| b == b',')
                .map(h1::trim)
                .filter(|e| !e.is_empty())
            {
                cc_found = true;
                let starts = |p: &[u8]| e.len() >= p.len() && e[..p.len()].eq_ignore_ascii_case(p);
                if starts(b"max-age")
                    || starts(b"no-cache")
                    || starts(b"max-stale")
                    || starts(b"min-fresh")
                {
                    t.ignore = true;
                } else if starts(b"no-store") {
                    t.cacheable = false;
                }
            }
        }
        if !cc_found && pragma {
            t.ignore = true;
        }
        t
    }
}

/// `http-request cache-use`: the request is looked up (counted on
/// `counters`, the rule's proxy's); a hit is kept for when the rules are
/// done. Later rules still run, as in HAProxy.
pub(crate) fn use_rule(
    txn: &mut Option<CacheTxn>,
    cache: &Arc<Cache>,
    head: &Head,
    edits: Option<&Edits>,
    counters: &Counters,
) {
    let t = txn.get_or_insert_with(|| CacheTxn::of(head, edits));
    let Some(key) = t.key else {
        return;
    };
    if t.ignore || t.hit.is_some() {
        return;
    }
    counters.local().cache_lookups.inc();
    let now = now();
    if let Lookup::Hit(entry) = cache.lookup(&key, now, |sig| secondary_key(head, sig)) {
        counters.local().cache_hits.inc();
        cache.reading(&entry);
        t.hit = Some(Hit {
            not_modified: not_modified(head, &entry),
            cache: cache.clone(),
            entry,
        });
    }
}

impl Drop for Hit {
    fn drop(&mut self) {
        self.cache.done(&self.entry);
    }
}

/// The `Vary` fields HAProxy 2.6 handles, as bits of a signature.
const VARY_ACCEPT_ENCODING: u32 = 1;
const VARY_REFERER: u32 = 2;

/// The encodings of a secondary key's bitmap (HAProxy's values).
const ENC_IDENTITY: u32 = 1 << 8;
const ENC_STAR: u32 = 1 << 9;
const ENC_OTHER: u32 = 1 << 10;

/// HAProxy's `parse_encoding_value`: the encoding's bit (0 for a word
/// it does not know the end of) and whether its weight is `q=0`; `None`
/// for an encoding it does not know.
fn encoding_bit(v: &[u8]) -> Option<(u32, bool)> {
    const NAMES: [(&[u8], u32); 12] = [
        (b"aes128gcm", 1 << 4),
        (b"br", 1 << 2),
        (b"compress", 1 << 3),
        (b"deflate", 1 << 1),
        (b"exi", 1 << 5),
        (b"gzip", 1),
        (b"identity", ENC_IDENTITY),
        (b"pack200-gzip", 1 << 6),
        (b"x-gzip", 1),
        (b"x-compress", 1 << 3),
        (b"zstd", 1 << 7),
        (b"*", ENC_STAR),
    ];
    let first = *v.first()?;
    if !b"abcdegipxz*".contains(&first) {
        return None;
    }
    let Some((bit, rest)) = NAMES
        .iter()
        .filter(|(n, _)| n[0] == first)
        .find_map(|(n, bit)| v.strip_prefix(*n).map(|r| (*bit, r)))
    else {
        return Some((0, false));
    };
    let rest = rest.trim_ascii_start();
    if rest.is_empty() {
        return Some((bit, false));
    }
    let w = rest.strip_prefix(b";")?;
    Some((bit, w.trim_ascii_start() == b"q=0"))
}

/// The `Accept-Encoding` bitmap of a request (HAProxy's
/// `accept_encoding_normalizer`); None past 15 values.
fn accept_bitmap(head: &Head) -> Option<u32> {
    let mut bitmap = ENC_IDENTITY;
    let mut refused = !0u32;
    let mut count = 0;
    for v in head.values("accept-encoding") {
        for e in v.split(|&b| b == b',').map(h1::trim) {
            count += 1;
            if count >= 16 {
                return None;
            }
            if e.is_empty() {
                continue;
            }
            match encoding_bit(&e.to_ascii_lowercase()) {
                Some((bit, true)) => refused &= !bit,
                Some((bit, false)) => bitmap |= bit,
                None => bitmap |= ENC_OTHER,
            }
        }
    }
    if bitmap & ENC_STAR != 0 {
        bitmap = !0;
    }
    bitmap &= refused;
    Some(if count == 0 { !0 } else { bitmap })
}

/// The secondary key of a request for the `Vary` signature `sig`.
fn secondary_key(head: &Head, sig: u32) -> Option<SecondaryKey> {
    let mut k = [0u8; 8];
    if sig & VARY_ACCEPT_ENCODING != 0 {
        k[..4].copy_from_slice(&accept_bitmap(head)?.to_ne_bytes());
    }
    if sig & VARY_REFERER != 0
        && let Some(r) = head.values("referer").next()
    {
        k[4..].copy_from_slice(&crate::sample::hash::crc32(r).to_ne_bytes());
    }
    Some(k)
}

/// Whether a conditional request is satisfied by the stored object:
/// `If-None-Match` (`*`, or an ETag equal to the object's, weakly), else
/// `If-Modified-Since` at or after its last modification.
fn not_modified(head: &Head, e: &Entry) -> bool {
    let mut inm = false;
    for v in head.values("if-none-match") {
        for tag in v.split(|&b| b == b',').map(h1::trim) {
            inm = true;
            if tag == b"*" {
                return true;
            }
            let Some(stored) = e.etag.as_deref() else {
                return false;
            };
            if same_etag(stored, tag) {
                return true;
            }
        }
    }
    if inm {
        return false;
    }
    head.values("if-modified-since")
        .next()
        .and_then(crate::wire::http_date::parse)
        .is_some_and(|ims| e.last_modified <= ims)
}

/// HAProxy's weak ETag comparison (both must be valid).
fn same_etag(a: &[u8], b: &[u8]) -> bool {
    fn opaque(t: &[u8]) -> Option<&[u8]> {
        let t = t.strip_prefix(b"W/").unwrap_or(t);
        (t.len() >= 2 && t[0] == b'"' && t[t.len() - 1] == b'"').then_some(t)
    }
    matches!((opaque(a), opaque(b)), (Some(x), Some(y)) if x == y)
}

/// The value of `name=<n>` in a `Cache-Control` element (HAProxy's
/// `directive_value`, then `strtol`): None without it, `Some(-1)` for a
/// bad number.
fn directive(e: &[u8], name: &[u8]) -> Option<i64> {
    if e.len() <= name.len() || !e[..name.len()].eq_ignore_ascii_case(name) || e[name.len()] != b'='
    {
        return None;
    }
    let v = &e[name.len() + 1..];
    let v = v.strip_prefix(b"\"").unwrap_or(v);
    let digits = v.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Some(-1);
    }
    Some(
        std::str::from_utf8(&v[..digits])
            .ok()
            .and_then(|d| d.parse().ok())
            .unwrap_or(i64::MAX),
    )
}

/// Why a response is not stored, or what storing it takes.
struct Storable {
    /// Seconds it stays, and the age the server said.
    max_age: i64,
    age: u64,
    signature: u32,
}

/// HAProxy's checks of a response before `cache-store` stores it: its
/// `Vary`, its cacheability (`Pragma`, `Cache-Control`, an expiration or
/// a validator), its age.
fn storable(cache: &Cache, resp: &Head, now: u64) -> Option<Storable> {
    // Vary: only what HAProxy handles, and only with process-vary.
    let mut signature = 0;
    for v in resp.values("vary") {
        for e in v.split(|&b| b == b',').map(h1::trim) {
            if !cache.settings.process_vary {
                return None;
            }
            signature |= if e.eq_ignore_ascii_case(b"accept-encoding") {
                VARY_ACCEPT_ENCODING
            } else if e.eq_ignore_ascii_case(b"referer") {
                VARY_REFERER
            } else {
                return None;
            };
        }
    }
    if resp
        .values("pragma")
        .next()
        .is_some_and(|v| h1::trim(v).eq_ignore_ascii_case(b"no-cache"))
    {
        return None;
    }
    let (mut cacheable, mut cook, mut fresh) = (true, true, false);
    let (mut smaxage, mut maxage) = (None, None);
    for v in resp.values("cache-control") {
        for e in v
            .split(|&b| b == b',')
            .map(h1::trim)
            .filter(|e| !e.is_empty())
        {
            let is = |w: &[u8]| e.eq_ignore_ascii_case(w);
            let starts = |p: &[u8]| e.len() >= p.len() && e[..p.len()].eq_ignore_ascii_case(p);
            if is(b"public") {
                cacheable = true;
                cook = true;
            } else if is(b"private")
                || is(b"no-cache")
                || is(b"no-store")
                || is(b"max-age=0")
                || is(b"s-maxage=0")
            {
                cacheable = false;
                cook = false;
            } else if starts(b"no-cache=\"set-cookie") {
                cook = false;
            } else if starts(b"s-maxage") || starts(b"max-age") {
                fresh = true;
            }
            if let Some(n) = directive(e, b"s-maxage") {
                smaxage = Some(n);
            }
            if let Some(n) = directive(e, b"max-age") {
                maxage = Some(n);
            }
        }
    }
    if !(cacheable && cook) {
        return None;
    }
    let expires = resp.values("expires").next();
    fresh |= expires.is_some();
    if !fresh
        && resp.values("etag").next().is_none()
        && resp.values("last-modified").next().is_none()
    {
        return None;
    }
    // The object's life: s-maxage, max-age, Expires, the cache's.
    // A bad number: HAProxy stores the object already expired, which
    // comes to the same as not storing it.
    if smaxage.is_some_and(|n| n < 0) || maxage.is_some_and(|n| n < 0) {
        return None;
    }
    let limit = i64::from(cache.settings.max_age);
    let by_expires = || {
        expires.map(|v| match crate::wire::http_date::parse(v) {
            Some(t) if t >= now as i64 => t - now as i64,
            _ => 0,
        })
    };
    let server = match (smaxage, maxage) {
        (Some(n), _) if n > 0 => Some(n),
        (_, Some(n)) if n > 0 => Some(n),
        (None, None) => by_expires(),
        _ => None,
    };
    let max_age = server.map_or(limit, |n| n.min(limit));
    let true_max = server.unwrap_or(0);
    // A positive `Age`, not beyond the server's own max age; any other
    // `Age` keeps the response out (as HAProxy 2.6 does).
    let mut age = 0;
    if let Some(a) = resp.values("age").next() {
        let a = h1::trim(a);
        let n: i64 = std::str::from_utf8(a).ok()?.parse().ok()?;
        if n <= 0 {
            return None;
        }
        age = n.min(1 << 31) as u64;
        if age as i64 > true_max {
            return None;
        }
    }
    Some(Storable {
        max_age,
        age,
        signature,
    })
}

/// HAProxy's measure of a stored head (its blocks: the start line's, each
/// field's and the end of the head's, 4 bytes each besides their
/// content), with the object's own.
fn head_size(head: &[u8]) -> u64 {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first = lines.next().unwrap_or(b"");
    // `HTTP/1.1 200 OK`: the three parts, without their spaces.
    let parts = first.len().saturating_sub(2) as u64;
    let mut size = ENTRY_SIZE + 4 + 20 + parts;
    for l in lines.filter(|l| !l.is_empty()) {
        let (n, v) = match l.iter().position(|&b| b == b':') {
            Some(i) => (&l[..i], h1::trim(&l[i + 1..])),
            None => (l, &b""[..]),
        };
        size += 4 + (n.len() + v.len()) as u64;
    }
    size + 5
}

/// `http-response cache-store`: the fill the body goes into, when the
/// response is stored, and the position of the server's `Age` field,
/// which HAProxy takes out of the response it forwards too. `edits`:
/// those of the rules before this one (the head is stored as they left
/// it). A successful unsafe request drops the object of its URI instead.
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_rule(
    cache: &Arc<Cache>,
    txn: Option<&CacheTxn>,
    req: &Head,
    resp: &Head,
    edits: Option<&Edits>,
    body: BodyKind,
) -> Option<(Fill, Option<usize>)> {
    let t = txn?;
    let key = t.key?;
    if req.minor == 0 {
        return None;
    }
    let method = req.method();
    if method != b"GET" {
        if (200..400).contains(&resp.status)
            && !matches!(method, b"OPTIONS" | b"GET" | b"HEAD" | b"TRACE")
        {
            cache.invalidate(&key);
        }
        return None;
    }
    // A request that was not looked up (`no-cache`, `max-age`, `Pragma`)
    // still has its response stored (haproxy 2.6.12 does); one with
    // `Authorization` or `no-store` does not.
    if resp.status != 200 || !t.cacheable {
        return None;
    }
    let now = now();
    // The response as the rules before this one left it, which HAProxy's
    // checks read (a `set-header cache-control` before `cache-store`
    // counts). Each field the rules took out leaves its block behind in
    // HAProxy's message, stored with the others: 4 bytes each.
    let ghosts = edits.map_or(0, |e| {
        resp.headers()
            .enumerate()
            .filter(|(i, (n, _))| e.drops_at(*i, n))
            .count() as u64
    });
    let server = resp;
    let edited;
    let resp = match edits {
        None => resp,
        Some(e) => {
            let mut h = BytesMut::with_capacity(resp.raw.len() + 64);
            let framing = resp.response_framing(body);
            if !resp.write_forwarded_with(
                &mut h,
                (None, None),
                |i, n| e.drops_at(i, n),
                &e.replaced,
                &framing,
            ) {
                h.put_slice(framing.bytes());
            }
            e.put_added(&mut h);
            h.put_slice(b"\r\n");
            edited = Head::parse_response(h.freeze()).ok()?;
            &edited
        }
    };
    let st = storable(cache, resp, now)?;
    let asked = if st.signature != 0 {
        secondary_key(req, st.signature)?
    } else {
        [0; 8]
    };
    let secondary = if st.signature != 0 {
        let mut k = asked;
        // The encodings part is the response's own (an unknown one is not
        // stored), whatever the `Vary` names: HAProxy 2.6 writes it for a
        // `Vary: referer` too (where a lookup then never matches it).
        {
            let mut bits = 0;
            for v in resp.values("content-encoding") {
                for e in v.split(|&b| b == b',').map(h1::trim) {
                    match encoding_bit(&e.to_ascii_lowercase()) {
                        Some((b, _)) if b != 0 => bits |= b,
                        _ => return None,
                    }
                }
            }
            k[..4].copy_from_slice(&(if bits == 0 { ENC_IDENTITY } else { bits }).to_ne_bytes());
        }
        k
    } else {
        [0; 8]
    };
    // The head as the rules left it, without the server's `Age`.
    let mut head = BytesMut::with_capacity(resp.raw.len());
    let framing = resp.response_framing(body);
    let first_age = resp
        .headers()
        .position(|(n, _)| n.eq_ignore_ascii_case(b"age"))
        .filter(|_| st.age > 0);
    if !resp.write_forwarded_with(
        &mut head,
        (None, None),
        |i, _| Some(i) == first_age,
        &[],
        &framing,
    ) {
        head.put_slice(framing.bytes());
    }
    let dropped = ghosts + u64::from(first_age.is_some());
    let size = head_size(&head) + 4 * dropped;
    // A known length past the object's limit is not even begun.
    if let BodyKind::Length(n) = body
        && size + 4 + n > u64::from(cache.settings.max_object_size)
    {
        return None;
    }
    let etag = resp
        .values("etag")
        .last()
        .map(|v| h1::trim(v).to_vec().into_boxed_slice());
    let last_modified = resp
        .values("last-modified")
        .next()
        .and_then(crate::wire::http_date::parse)
        .or_else(|| {
            resp.values("date")
                .next()
                .and_then(crate::wire::http_date::parse)
        })
        .unwrap_or(now as i64);
    let expire = (now as i64 + st.max_age).max(0) as u64;
    let fill = cache.begin(
        key,
        (asked, secondary),
        st.signature,
        head.freeze(),
        (expire, now, st.age),
        (etag, last_modified),
        size,
    )?;
    // Its place among the server's fields, for the relay to take it out
    // of the forwarded response too.
    let server_age = first_age.and_then(|_| {
        server
            .headers()
            .enumerate()
            .find(|(i, (n, _))| {
                n.eq_ignore_ascii_case(b"age") && !edits.is_some_and(|e| e.drops_at(*i, n))
            })
            .map(|(i, _)| i)
    });
    Some((fill, server_age))
}

impl crate::http::filtered::Sink for Fill {
    fn take(&mut self, data: &[u8]) -> bool {
        Fill::take(self, data)
    }

    fn end(&mut self, end: u64) -> bool {
        self.complete(end)
    }
}

/// The head a hit is sent with: the stored one (its status line made a
/// 304's for a satisfied conditional request), then its `Age`.
fn hit_head(hit: &Hit, now: u64) -> Bytes {
    let e = &hit.entry;
    let stored = &e.head[..];
    let mut out = BytesMut::with_capacity(stored.len() + 32);
    if hit.not_modified {
        let eol = memchr::memchr(b'\n', stored).map_or(stored.len(), |i| i + 1);
        let version = stored.split(|&b| b == b' ').next().unwrap_or(b"HTTP/1.1");
        out.put_slice(version);
        out.put_slice(b" 304 Not Modified\r\n");
        out.put_slice(&stored[eol..]);
    } else {
        out.put_slice(stored);
    }
    out.put_slice(b"age: ");
    out.put_slice(e.age_at(now).to_string().as_bytes());
    out.put_slice(b"\r\n\r\n");
    out.freeze()
}

/// The answer from the cache, in the server's place: the backend counts
/// it as a response (no server does), the response rules and the
/// compression filter apply to it as to a server's, the log line names
/// `<CACHE>`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve(
    fe: &crate::snapshot::FrontendRt,
    be: &Arc<crate::snapshot::BackendRt>,
    req: &Head,
    ctx: &ReqCtx<'_>,
    client: &mut crate::wire::io::BufConn,
    keep: bool,
    rec: &mut crate::observe::log::LogRecord,
    hit: Hit,
    on_backend: bool,
) -> Outcome {
    // The backend's session is counted from its assignment
    // (`forward::BackendSession`), the request here.
    if on_backend {
        be.state.counters.count_request();
    }
    rec.server = crate::observe::outcome::SrvName::Cache;
    // Answered locally, before any server (HAProxy logs `LR`).
    rec.term(
        crate::observe::outcome::Cause::Local,
        crate::observe::outcome::Phase::Request,
    );
    rec.t_queue = 0;
    rec.t_connect = 0;
    rec.t_resp = 0;
    ctx.vars.set_cache_hit(hit.cache.name.clone());
    let now = now();
    send_hit(fe, be, req, ctx, client, keep, rec, &hit, now, on_backend).await
}

#[allow(clippy::too_many_arguments)]
async fn send_hit(
    fe: &crate::snapshot::FrontendRt,
    be: &Arc<crate::snapshot::BackendRt>,
    req: &Head,
    ctx: &ReqCtx<'_>,
    client: &mut crate::wire::io::BufConn,
    keep: bool,
    rec: &mut crate::observe::log::LogRecord,
    hit: &Hit,
    now: u64,
    on_backend: bool,
) -> Outcome {
    let Ok(mut resp) = Head::parse_response(hit_head(hit, now)) else {
        return crate::http::forward::send_error_be(client, 500, fe, Some(be), false).await;
    };
    let body = resp.response_body(req.method()).unwrap_or(BodyKind::None);
    let data = match body {
        BodyKind::None => Bytes::new(),
        _ => hit.entry.body().cloned().unwrap_or_default(),
    };
    let comp = ctx
        .comp
        .filter(|_| crate::http::compress::applies(fe, be, req, &resp, body));
    if let Some(a) = comp {
        ctx.vars.set_comp(a.cfg_name());
    }
    if on_backend {
        rec.tally.srv_status = Some(resp.status);
    }
    let mut edits = match crate::http::relay::local_answer_rules(
        fe,
        Some(be),
        "<CACHE>",
        req,
        ctx,
        &mut resp,
        rec,
    )
    .await
    {
        Ok(e) => e,
        Err(()) => {
            rec.tally.dresp |= crate::observe::outcome::Rows::BE_SRV;
            return crate::http::forward::send_error_be(client, 502, fe, Some(be), keep).await;
        }
    };
    if comp.is_some() {
        crate::http::compress::edit_head(&resp, &mut edits);
    }
    let status = resp.status;
    // The head in a buffer from the thread's spares, the body after it:
    // one write.
    let mut out =
        crate::http::relay::downstream_head(&resp, body, keep, req.minor, edits.as_ref(), comp);
    if let Some(names) = &fe.case_client {
        names.apply(&mut out);
    }
    let head_len = out.len();
    let chunk = |out: &mut BytesMut, d: &[u8]| {
        if !d.is_empty() {
            out.put_slice(format!("{:X}\r\n", d.len()).as_bytes());
            out.put_slice(d);
            out.put_slice(b"\r\n");
        }
    };
    match (comp, body) {
        (_, BodyKind::None) => {}
        (Some(algo), _) => {
            let mut z = Vec::new();
            match crate::http::compress::Encoder::new(algo, fe, be) {
                Ok(mut enc) => {
                    let compresses = enc.compresses();
                    if enc.feed(&data, &mut z).is_ok() && enc.finish(&mut z).is_ok() {
                        chunk(&mut out, &z);
                    }
                    // The end of a chunked message counts as one byte in.
                    let comp_in = data.len() as u64 + u64::from(body == BodyKind::Chunked);
                    let comp_out = z.len() as u64;
                    // The stream's backend is the frontend itself after a
                    // frontend's hit: its bytes count on its backend row
                    // only when it is a `listen`; a response counts on a
                    // backend only when one was assigned.
                    let be_bytes = on_backend || be.iid == fe.iid;
                    for (c, bytes, rsp) in [
                        (&fe.state.counters, true, true),
                        (&be.state.counters, be_bytes, on_backend),
                    ] {
                        if bytes && compresses {
                            c.local().comp_in.add(comp_in);
                            c.local().comp_out.add(comp_out);
                        } else if bytes {
                            c.local().comp_byp.add(comp_in);
                        }
                        if rsp {
                            c.local().comp_rsp.inc();
                        }
                    }
                }
                Err(_) => chunk(&mut out, &data),
            }
            out.put_slice(b"0\r\n\r\n");
        }
        (None, BodyKind::Chunked) => {
            chunk(&mut out, &data);
            out.put_slice(b"0\r\n\r\n");
        }
        (None, _) => out.put_slice(&data),
    }
    // An HTTP/2 client gets it as frames.
    let sent = client.answer(&out, fe.timeouts.client).await;
    let ok = sent.is_ok();
    if !ok {
        rec.term(
            crate::observe::outcome::Cause::Client,
            crate::observe::outcome::Phase::Data,
        );
    }
    if on_backend {
        rec.tally.srv_out = out.len() as u64;
    }
    let logged = resp.logged_size() + (out.len() - head_len) as u64;
    Outcome {
        status: Some(status),
        keep_client: keep && ok,
        bytes_out: out.len() as u64,
        logged_out: logged,
        body_in: 0,
        body_logged: 0,
    }
}

/// `show cache`, as HAProxy 2.6 prints it: each cache (its address, its
/// name, its shared context and the blocks not in use), then each object
/// (its address, key, secondary key, size and blocks, readers, seconds
/// left). The addresses are sluice's own numbers.
pub(crate) fn show(caches: &[Arc<Cache>]) -> String {
    use std::fmt::Write as _;
    let now = now();
    let mut out = String::new();
    for c in caches {
        let (avail, entries) = c.listing(now);
        let base = Arc::as_ptr(c) as usize;
        let _ = writeln!(
            out,
            "{:#x}: {} (shctx:{:#x}, available blocks:{avail})",
            base + 0x3a,
            c.name,
            base
        );
        // HAProxy's listing goes from key to next key: of the objects of
        // one key (`process-vary`), the first stored only.
        let mut last = None;
        for e in entries {
            if last == Some(e.key) {
                continue;
            }
            last = Some(e.key);
            let mut vary = String::new();
            for b in e.secondary {
                let _ = write!(vary, "{b:02x}");
            }
            let _ = writeln!(
                out,
                "{:#x} hash:{} vary:0x{vary} size:{} ({} blocks), refcount:{}, expire:{}",
                Arc::as_ptr(&e) as usize,
                crate::state::cache::key_u32(&e.key),
                e.size(),
                e.blocks(),
                e.readers.load(Relaxed),
                e.expire as i64 - now as i64
            );
        }
    }
    out
}
