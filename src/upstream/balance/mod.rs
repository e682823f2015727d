//! Load-balancing algorithms and server selection with `maxconn` queueing.
//!
//! Every algorithm of `balance` (reference §2.5) as HAProxy 2.6 computes it:
//! `roundrobin` (a port of lb_fwrr), `static-rr` and the map-based hashes
//! (lb_map's weighted table), `hash-type consistent` and `random` (lb_chash's
//! ring of `weight × 16` points per server, keyed by the server id),
//! `leastconn` (lb_fwlc's key) and `first` (lowest id with a free slot).
//! Backup servers take the load only when no active server is usable: the
//! first one, or all of them with `option allbackups`.
//!
//! The tables and keys live with the snapshot (`snapshot::lb`); this is
//! the picking: a free slot on the chosen server, or the queue.
//!
//! Per pick, the usable set is read from relaxed atomics; the map and the
//! ring are rebuilt (and swapped in) only when a server's effective weight
//! changed, so a pick allocates nothing and takes no lock, except the
//! roundrobin mutex per backend.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::snapshot::lb::{Group, LbKey, SRV_EWGHT_RANGE, Table, ring_point};

use crate::config::model::Balance;
use crate::snapshot::{BackendRt, ServerRt};
use crate::state::queue::Queue;
use crate::state::{ServerState, SlotGuard};

/// Why a request got no server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PickError {
    /// No server is usable (all DOWN, in maintenance or weight 0).
    #[error("no server available")]
    NoServer,
    /// All usable servers stayed full until `timeout queue`; `be_queue` /
    /// `srv_queue`: the request's `%bq` / `%sq`.
    #[error("timeout in queue")]
    QueueTimeout { be_queue: u32, srv_queue: u32 },
    /// The chosen server's queue is at its `maxqueue`; `server`: its index
    /// in the backend (HAProxy logs it and counts the failure on it).
    #[error("server queue full")]
    QueueFull { server: usize },
}

/// `chash_get_server_hash` with `avoid`: from the point the key chose, the
/// next point (clockwise) of another server, with a free slot.
fn ring_avoiding(be: &BackendRt, key: &LbKey<'_>, avoid: &ServerState) -> Option<SlotGuard> {
    let lb = &be.lb;
    let g = lb.group(&be.servers);
    let t = lb.table(&be.servers, g);
    let used = t.weights.iter().filter(|&&w| w > 0).count();
    let start = ring_point(&t.ring, lb.key_hash(key, used)?)?;
    let n = t.ring.len();
    (0..n)
        .map(|k| t.ring[(start + k) % n].1 as usize)
        .filter(|&i| !std::ptr::eq(&*be.servers[i].state, avoid))
        .find_map(|i| take(be, i))
}

/// The dynamic maxconn of a server (HAProxy's `srv_dynamic_maxconn`):
/// between `minconn` and `maxconn` by the backend's load against
/// `fullconn`, ramped during `slowstart`. 0 = unlimited.
#[inline]
fn dyn_maxconn(be: &BackendRt, s: &ServerRt) -> u32 {
    let max = s.state.maxconn.load(Relaxed);
    if max == 0 {
        return 0;
    }
    let mut m = max;
    if s.minconn != 0 && s.minconn < max {
        let beconn = be.state.counters.sess.cur();
        let full = u64::from(be.fullconn.max(1));
        if beconn < full {
            m = (s.minconn as u64).max(beconn * u64::from(max) / full) as u32;
        }
    }
    let pct = s.state.health.ramp_percent(s.slowstart_secs);
    if pct < 100 {
        m = (m * pct / 100).max(1);
    }
    m
}

fn take(be: &BackendRt, i: usize) -> Option<SlotGuard> {
    let s = be.servers.get(i)?;
    SlotGuard::try_take_max(&s.state, &be.state, dyn_maxconn(be, s))
}

fn has_room(be: &BackendRt, s: &ServerRt) -> bool {
    let max = dyn_maxconn(be, s);
    max == 0 || s.state.inflight() < max
}

/// Outcome of one pick attempt.
enum Pick {
    Got(SlotGuard),
    /// Every candidate is full: wait in the backend queue.
    Full,
    /// The key chose this server, which is full: wait for it.
    Wait(usize),
    NoServer,
}

fn try_pick(be: &BackendRt, key: &LbKey<'_>) -> Pick {
    let lb = &be.lb;
    let servers = &be.servers[..];
    let g = lb.group(servers);
    if g == Group::None {
        return Pick::NoServer;
    }
    match &lb.algo {
        Balance::RoundRobin => {
            let mut got = None;
            lb.rr.pick_scaled(
                |i| lb.eweight(servers, g, i),
                |i| {
                    got = take(be, i);
                    got.is_some()
                },
            );
            got.map_or(Pick::Full, Pick::Got)
        }
        Balance::StaticRr => map_rr(be, g),
        Balance::LeastConn => {
            // lb_fwlc: key (inflight + 1) * 4096 / eweight, 0 when idle;
            // equal keys in turn.
            let n = servers.len();
            let start = lb.pos.fetch_add(1, Relaxed) % n.max(1);
            let mut best: Option<(u64, usize)> = None;
            for k in 0..n {
                let i = (start + k) % n;
                let w = lb.eweight(servers, g, i);
                if w == 0 || !has_room(be, &servers[i]) {
                    continue;
                }
                let inflight = u64::from(servers[i].state.inflight());
                let key = if inflight == 0 {
                    0
                } else {
                    (inflight + 1) * u64::from(SRV_EWGHT_RANGE) / u64::from(w)
                };
                if best.is_none_or(|(b, _)| key < b) {
                    best = Some((key, i));
                }
            }
            match best.and_then(|(_, i)| take(be, i)) {
                Some(s) => Pick::Got(s),
                None => Pick::Full,
            }
        }
        Balance::First => {
            for &i in &lb.by_id {
                let i = i as usize;
                if lb.eweight(servers, g, i) == 0 {
                    continue;
                }
                if let Some(s) = take(be, i) {
                    return Pick::Got(s);
                }
            }
            Pick::Full
        }
        Balance::Random { draws } => {
            let t = lb.table(servers, g);
            let mut cur: Option<usize> = None;
            for _ in 0..*draws {
                let prev = cur;
                let Some(c) = lb.draw(&t) else {
                    break;
                };
                cur = Some(c);
                if let Some(p) = prev
                    && p != c
                {
                    // Keep the one with fewer requests per unit of weight.
                    let (sc, sp) = (&servers[c].state, &servers[p].state);
                    let (wc, wp) = (u64::from(t.weights[c]), u64::from(t.weights[p]));
                    if u64::from(sc.inflight()) * wp > u64::from(sp.inflight()) * wc {
                        cur = Some(p);
                    }
                }
            }
            match cur {
                Some(i) => take(be, i).map_or(Pick::Full, Pick::Got),
                None => Pick::NoServer,
            }
        }
        _ => {
            // Hash-based.
            let t = lb.table(servers, g);
            let used = t.weights.iter().filter(|&&w| w > 0).count();
            let chosen = match lb.key_hash(key, used) {
                Some(h) => lb.by_hash(&t, h),
                None => None,
            };
            match chosen {
                Some(i) => match take(be, i) {
                    Some(s) => Pick::Got(s),
                    None => Pick::Wait(i),
                },
                // No key: round robin over the map or the ring.
                None if lb.consistent() => ring_rr(be, &t),
                None => map_rr(be, g),
            }
        }
    }
}

/// `map_get_server_rr`: the next map slot whose server has room.
fn map_rr(be: &BackendRt, g: Group) -> Pick {
    let lb = &be.lb;
    let t = lb.table(&be.servers, g);
    let n = t.map.len();
    if n == 0 {
        return Pick::NoServer;
    }
    let start = lb.pos.fetch_add(1, Relaxed);
    for k in 0..n {
        let i = t.map[(start + k) % n] as usize;
        if let Some(s) = take(be, i) {
            if k > 0 {
                lb.pos.fetch_add(k, Relaxed);
            }
            return Pick::Got(s);
        }
    }
    Pick::Full
}

/// `chash_get_next_server`: the next point of the ring whose server has
/// room.
fn ring_rr(be: &BackendRt, t: &Table) -> Pick {
    let n = t.ring.len();
    if n == 0 {
        return Pick::NoServer;
    }
    let start = be.lb.pos.fetch_add(1, Relaxed);
    for k in 0..n {
        let i = t.ring[(start + k) % n].1 as usize;
        if let Some(s) = take(be, i) {
            return Pick::Got(s);
        }
    }
    Pick::Full
}

fn pick_any(be: &BackendRt, key: &LbKey<'_>) -> Option<SlotGuard> {
    match try_pick(be, key) {
        Pick::Got(s) => Some(s),
        _ => None,
    }
}

/// Waits for a slot on server `i` (the one the key chose), FIFO among the
/// waiters of that server, at most `timeout`.
async fn wait_for_server(
    be: &BackendRt,
    i: usize,
    timeout: Option<Duration>,
    persistent: bool,
) -> Result<SlotGuard, PickError> {
    let s = &be.servers[i];
    let st: &Arc<ServerState> = &s.state;
    if s.maxqueue != 0 && st.waiters.load(Relaxed) >= s.maxqueue {
        return Err(PickError::QueueFull { server: i });
    }
    st.waiters.fetch_add(1, Relaxed);
    st.counters.queue.inc();
    // `%sq` as HAProxy counts it: the requests served from this server's
    // queue while this one waited, plus one for itself.
    let entered = st.queue_served.load(Relaxed);
    let position = |now: u64| u32::try_from(now.wrapping_sub(entered) + 1).unwrap_or(u32::MAX);
    let wait = async {
        loop {
            let notified = st.released.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(mut slot) = take(be, i) {
                slot.set_srv_queue_position(position(st.queue_served.fetch_add(1, Relaxed)));
                return Ok(slot);
            }
            if !(st.usable() || persistent && st.takes_persistent()) {
                return Err(PickError::NoServer);
            }
            notified.await;
        }
    };
    let r = match timeout {
        Some(t) => tokio::time::timeout(t, wait)
            .await
            .unwrap_or(Err(PickError::QueueTimeout {
                be_queue: 0,
                srv_queue: position(st.queue_served.load(Relaxed)),
            })),
        None => wait.await,
    };
    st.waiters.fetch_sub(1, Relaxed);
    st.counters.queue.dec();
    r
}

/// `use-server`: the server the first rule whose condition `holds` names
/// and that can take the request (up, or down under `force-persist` or
/// `option persist`); a rule naming a server that cannot goes on to the
/// next, as in HAProxy.
pub(crate) fn use_server(
    be: &BackendRt,
    holds: impl Fn(&crate::acl::eval::CompiledCond) -> bool,
    force: bool,
) -> Option<usize> {
    be.use_servers.iter().find_map(|(i, cond)| {
        let srv = be.servers.get(*i)?;
        let can = force || be.persist || srv.state.takes_persistent();
        (can && holds(cond)).then_some(*i)
    })
}

/// A slot on the server persistence names, else on the one balancing
/// picks, or in the queue until one is free.
pub(crate) async fn pick(
    be: &Arc<BackendRt>,
    key: &crate::snapshot::lb::LbKey<'_>,
    persisted: &mut Option<usize>,
) -> Result<SlotGuard, PickError> {
    let Some(i) = *persisted else {
        return acquire(be, key).await;
    };
    match acquire_server(be, i).await {
        // The server's queue is full: with `option redispatch` the request
        // is balanced instead (persistence is lost), as HAProxy.
        Err(PickError::QueueFull { .. }) if be.redispatch.is_some() => {
            *persisted = None;
            acquire(be, key).await
        }
        r => r,
    }
}

/// Picks a server for one request, waiting in the backend queue (FIFO, at
/// most `timeout queue`, which defaults to `timeout connect`) while all
/// usable servers are at their `maxconn`; hash-based algorithms wait for
/// the server the key chose.
pub(crate) async fn acquire(be: &Arc<BackendRt>, key: &LbKey<'_>) -> Result<SlotGuard, PickError> {
    acquire_avoiding(be, key, None).await
}

/// [`acquire`] for a redispatch: another server than `avoid` (the one that
/// just failed) when the algorithm offers one, as HAProxy's pickers skip
/// their `avoid` server; `avoid` itself when it is the only choice.
pub(crate) async fn acquire_avoiding(
    be: &Arc<BackendRt>,
    key: &LbKey<'_>,
    avoid: Option<&ServerState>,
) -> Result<SlotGuard, PickError> {
    let pick = || {
        let mut p = try_pick(be, key);
        let Some(avoid) = avoid else {
            return p;
        };
        for _ in 1..be.servers.len() {
            match &p {
                // The avoided slot is released only once the next pick
                // holds its own, so a second pick sees it busy.
                Pick::Got(s) if std::ptr::eq(&**s.server(), avoid) => p = try_pick(be, key),
                _ => break,
            }
        }
        if let Pick::Got(s) = &p
            && std::ptr::eq(&**s.server(), avoid)
        {
            // Still the same: a map-based hash has no way around its
            // server (as in HAProxy), a consistent one takes the next
            // point, any other algorithm the first other usable server.
            let other = if !be.lb.hashing() {
                first_other(be, avoid)
            } else if be.lb.consistent() {
                ring_avoiding(be, key, avoid)
            } else {
                None
            };
            if let Some(o) = other {
                p = Pick::Got(o);
            }
        }
        p
    };
    let first = if be.state.queue.is_empty() {
        pick()
    } else {
        // Others wait already: join the queue behind them (FIFO), except
        // when the key names a server.
        match pick() {
            Pick::Got(s) if be.lb.hashing() => Pick::Got(s),
            Pick::Got(s) => {
                drop(s);
                Pick::Full
            }
            other => other,
        }
    };
    let slot = match first {
        Pick::Got(slot) => slot,
        Pick::NoServer => return Err(PickError::NoServer),
        Pick::Wait(i) => wait_for_server(be, i, be.timeouts.queue_or_connect(), false).await?,
        Pick::Full => Queue::wait_for_slot(
            &be.state,
            || pick_any(be, key),
            members_of(be),
            be.timeouts.queue_or_connect(),
            key.prio,
        )
        .await
        .map_err(|t| PickError::QueueTimeout {
            be_queue: t.position,
            srv_queue: 0,
        })?,
    };
    slot.server().counters.local().lbtot.inc();
    be.state.counters.local().lbtot.inc();
    Ok(slot)
}

/// A slot on server `i`, the one a persistence cookie named: no balancing
/// (and no `lbtot`), but its `maxconn` holds and the request waits in its
/// queue as HAProxy's assigned-server path does; `QueueFull` once its
/// `maxqueue` is reached.
pub(crate) async fn acquire_server(be: &BackendRt, i: usize) -> Result<SlotGuard, PickError> {
    if be.servers[i].state.waiters.load(Relaxed) == 0
        && let Some(slot) = take(be, i)
    {
        return Ok(slot);
    }
    wait_for_server(be, i, be.timeouts.queue_or_connect(), true).await
}

/// The servers a request queued with this snapshot of `be` may be given:
/// its own snapshot's, whatever a reload does meanwhile; once a reload has
/// removed all of those, the servers the backend has now (the queue of a
/// removed server is redispatched, not left to time out).
fn members_of(be: &Arc<BackendRt>) -> crate::state::queue::Accepts {
    let be = be.clone();
    Box::new(move |s| {
        let own = be
            .servers
            .iter()
            .any(|r| std::ptr::eq(Arc::as_ptr(&r.state), s));
        own || (!s.is_retired() && be.servers.iter().all(|r| r.state.is_retired()))
    })
}

/// The first server by id, other than `avoid`, that takes load now and has
/// a free slot.
fn first_other(be: &BackendRt, avoid: &ServerState) -> Option<SlotGuard> {
    let lb = &be.lb;
    let g = lb.group(&be.servers);
    lb.by_id
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| {
            lb.eweight(&be.servers, g, i) > 0 && !std::ptr::eq(&*be.servers[i].state, avoid)
        })
        .find_map(|i| take(be, i))
}

#[cfg(test)]
/// The server a hash-based backend would choose for `key` now, without
/// taking a slot (tests, diagnostics).
pub(crate) fn server_for(be: &BackendRt, key: &LbKey<'_>) -> Option<usize> {
    let lb = &be.lb;
    let g = lb.group(&be.servers);
    if g == Group::None || !lb.hashing() {
        return None;
    }
    let t = lb.table(&be.servers, g);
    let used = t.weights.iter().filter(|&&w| w > 0).count();
    lb.by_hash(&t, lb.key_hash(key, used)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_texts;
    use crate::snapshot::lb::*;
    use crate::state::Registry;
    use crate::wire::h1::Head;

    /// A backend compiled from `lines` over servers s1.. (`server` lines
    /// given in full).
    fn backend(lines: &str) -> Arc<BackendRt> {
        let text = format!(
            "defaults\n mode http\n timeout connect 1s\n timeout client 1s\n timeout server 1s\nbackend be\n{lines}\n"
        );
        let l = parse_texts(&[("t.cfg".into(), text)], &|_| None, &|h: &str, p: u16| {
            Ok(vec![std::net::SocketAddr::new(
                h.parse().map_err(|_| "bad".to_string())?,
                p,
            )])
        });
        let cfg = l.config.unwrap_or_else(|| panic!("{:?}", l.diagnostics));
        let registry = Registry::default();
        let (snap, changes) = crate::snapshot::compile(&cfg, &registry, 1);
        registry.apply(&changes);
        snap.backend("be").unwrap().clone()
    }

    fn servers(weights: &[u32], extra: &str) -> String {
        weights
            .iter()
            .enumerate()
            .map(|(i, w)| {
                format!(
                    " server s{} 127.0.0.1:{} weight {w} {extra}\n",
                    i + 1,
                    1000 + i
                )
            })
            .collect()
    }

    /// Picks `n` times, releasing each slot at once; counts per server.
    fn spread(be: &BackendRt, n: usize, key: impl Fn(usize) -> String) -> Vec<usize> {
        spread_requests(be, n, |i| {
            (None, format!("GET {} HTTP/1.1\r\nhost: h\r\n", key(i)))
        })
    }

    /// Picks `n` times for the requests `req(i)` gives (client address and
    /// request head without its final empty line), releasing each slot at
    /// once; counts per server.
    fn spread_requests(
        be: &BackendRt,
        n: usize,
        req: impl Fn(usize) -> (Option<std::net::IpAddr>, String),
    ) -> Vec<usize> {
        let mut c = vec![0; be.servers.len()];
        for i in 0..n {
            let (src, text) = req(i);
            let head = Head::parse_request(bytes::Bytes::from(format!("{text}\r\n"))).unwrap();
            let key = LbKey {
                src,
                head: Some(&head),
                prio: Default::default(),
            };
            match try_pick(be, &key) {
                Pick::Got(s) => c[index_of(be, &s)] += 1,
                _ => panic!("no pick"),
            }
        }
        c
    }

    fn index_of(be: &BackendRt, s: &SlotGuard) -> usize {
        be.servers
            .iter()
            .position(|x| Arc::ptr_eq(&x.state, s.server()))
            .unwrap()
    }

    /// The requests each hashing algorithm reads its key from, key `i`.
    fn hash_key_request(algo: &str, i: usize) -> (Option<std::net::IpAddr>, String) {
        let src = std::net::IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        match algo {
            "source" => (Some(src), "GET / HTTP/1.1\r\nhost: h\r\n".into()),
            "uri" => (None, format!("GET /obj/{i} HTTP/1.1\r\nhost: h\r\n")),
            "url_param id" => (None, format!("GET /p?id={i} HTTP/1.1\r\nhost: h\r\n")),
            _ => (
                None,
                format!("GET / HTTP/1.1\r\nhost: h\r\nx-key: k{i}\r\n"),
            ),
        }
    }

    const HASHES: [&str; 4] = ["source", "uri", "url_param id", "hdr(x-key)"];

    fn within_1pct(c: &[usize], w: &[u32]) {
        let tot: usize = c.iter().sum();
        let wt: u32 = w.iter().sum();
        for (i, &n) in c.iter().enumerate() {
            let want = tot as f64 * f64::from(w[i]) / f64::from(wt);
            assert!(
                (n as f64 - want).abs() <= tot as f64 * 0.01,
                "server {i}: {n} of {tot}, want {want} ({c:?})"
            );
        }
    }

    #[test]
    fn weighted_algorithms_split_1_2_3_within_1pct_over_60000() {
        let w = [1, 2, 3];
        for algo in [
            "roundrobin",
            "static-rr",
            "leastconn",
            "random",
            "random(2)",
            "random(3)",
        ] {
            let be = backend(&format!(" balance {algo}\n{}", servers(&w, "")));
            let c = spread(&be, 60_000, |_| "/".into());
            match algo {
                // Idle servers all tie: leastconn takes them in turn.
                "leastconn" => assert_eq!(c, [20_000; 3], "{algo}"),
                _ => within_1pct(&c, &w),
            }
        }
        // Every map-based hash: the key lands on a map of 6 slots.
        for algo in HASHES {
            let be = backend(&format!(" balance {algo}\n{}", servers(&w, "")));
            let c = spread_requests(&be, 60_000, |i| hash_key_request(algo, i));
            within_1pct(&c, &w);
        }
    }

    /// `hash-type consistent` cannot meet 1% at weights 1:2:3: HAProxy's
    /// ring has only 16 points per weight unit (96 here), placed by hashing
    /// the server ids, so each server owns an uneven share of the hash
    /// space. sluice keeps HAProxy's ring bit for bit (the same key goes to
    /// the same server, `tests/balance_hash_haproxy.rs`), and so its
    /// deviation. With ids 1, 2, 3 the ring gives the servers 21.5%, 32.1%
    /// and 46.4% of the hash space instead of 16.7%, 33.3% and 50%, and
    /// 60,000 keys of every kind (source, uri, url_param, hdr) follow those
    /// shares within 1% (measured: 21.3-21.6% for the weight-1 server):
    /// up to 4.9 points off the weights, documented under `hash-type` in
    /// docs/configuration.md.
    #[test]
    fn consistent_hashing_deviates_as_haproxys_ring_does() {
        let w = [1u32, 2, 3];
        // Effective weights: 16 per unit of the configured weight.
        let ring = build_ring(&[16, 32, 48], &[1, 2, 3]);
        assert_eq!(ring.len(), 96);
        // A key goes to the closest point: each gap between two points is
        // shared half and half by their owners.
        let mut owned = [0f64; 3];
        for (i, &(k, s)) in ring.iter().enumerate() {
            let (next, owner) = ring[(i + 1) % ring.len()];
            let gap = f64::from(next.wrapping_sub(k)) / 2.0;
            owned[s as usize] += gap;
            owned[owner as usize] += gap;
        }
        let space = 2f64.powi(32);
        let ring_share: Vec<f64> = owned.iter().map(|o| o / space).collect();
        for (i, share) in ring_share.iter().enumerate() {
            let dev = share - f64::from(w[i]) / 6.0;
            assert!(dev.abs() <= 0.05, "ring share {ring_share:?}");
        }
        assert!(
            ring_share[0] - 1.0 / 6.0 > 0.04,
            "the known deviation: {ring_share:?}"
        );
        for algo in HASHES {
            let be = backend(&format!(
                " balance {algo}\n hash-type consistent\n{}",
                servers(&w, "")
            ));
            let c = spread_requests(&be, 60_000, |i| hash_key_request(algo, i));
            for i in 0..3 {
                let got = c[i] as f64 / 60_000.0;
                assert!(
                    (got - ring_share[i]).abs() <= 0.01,
                    "{algo}: server {i} {got:.4}, ring share {ring_share:?}: {c:?}"
                );
                assert!((got - f64::from(w[i]) / 6.0).abs() <= 0.05, "{algo}: {c:?}");
            }
        }
    }

    /// Leastconn under equal load (every request lasts as long, 60 at a
    /// time): the servers' shares follow their weights 1:2:3 within 1%,
    /// since each gets requests in proportion to the load it may carry.
    #[test]
    fn leastconn_under_equal_load_splits_1_2_3_within_1pct() {
        let w = [1, 2, 3];
        let be = backend(&format!(" balance leastconn\n{}", servers(&w, "")));
        let key = LbKey::default();
        let mut in_flight = std::collections::VecDeque::new();
        let mut c = vec![0; 3];
        for _ in 0..60_000 {
            if in_flight.len() == 60 {
                in_flight.pop_front();
            }
            let Pick::Got(s) = try_pick(&be, &key) else {
                panic!("no pick")
            };
            c[index_of(&be, &s)] += 1;
            in_flight.push_back(s);
        }
        within_1pct(&c, &w);
        // And the load in flight is itself 10:20:30.
        let mut held = vec![0; 3];
        for s in &in_flight {
            held[index_of(&be, s)] += 1;
        }
        assert_eq!(held, [10, 20, 30]);
    }

    /// `random(2)` (power of two choices) prefers the less loaded of its two
    /// draws: with one request held on a server of two equal ones, that
    /// server gets only the picks where both draws fell on it (1/4), where
    /// `random(1)` gives it half; and requests that all stay in flight stay
    /// spread evenly over 4 servers (a gap of a few), where single draws
    /// drift apart.
    #[test]
    fn random_2_prefers_the_less_loaded_draw() {
        let key = LbKey::default();
        for (draws, share) in [(2, 0.25), (1, 0.5)] {
            let be = backend(&format!(
                " balance random({draws})\n{}",
                servers(&[1, 1], "")
            ));
            let Pick::Got(held) = try_pick(&be, &key) else {
                panic!()
            };
            let busy = index_of(&be, &held);
            let c = spread(&be, 60_000, |_| "/".into());
            let got = c[busy] as f64 / 60_000.0;
            assert!((got - share).abs() <= 0.01, "random({draws}): {c:?}");
        }
        let be = backend(&format!(" balance random(2)\n{}", servers(&[1; 4], "")));
        let mut held = Vec::new();
        let mut load = [0i64; 4];
        for _ in 0..4_000 {
            let Pick::Got(s) = try_pick(&be, &key) else {
                panic!()
            };
            load[index_of(&be, &s)] += 1;
            held.push(s);
        }
        let gap = load.iter().max().unwrap() - load.iter().min().unwrap();
        assert!(gap <= 12, "in flight {load:?}");
    }

    #[test]
    fn leastconn_prefers_the_least_loaded_server() {
        let be = backend(&format!(" balance leastconn\n{}", servers(&[1, 1, 1], "")));
        let key = LbKey::default();
        let Pick::Got(a) = try_pick(&be, &key) else {
            panic!()
        };
        let Pick::Got(b) = try_pick(&be, &key) else {
            panic!()
        };
        let Pick::Got(c) = try_pick(&be, &key) else {
            panic!()
        };
        let names: std::collections::BTreeSet<_> = [&a, &b, &c]
            .iter()
            .map(|s| s.server().name.clone())
            .collect();
        assert_eq!(names.len(), 3, "one each while all are busy equally");
        let free = b.server().name.clone();
        drop(b);
        let Pick::Got(d) = try_pick(&be, &key) else {
            panic!()
        };
        assert_eq!(d.server().name, free, "the idle server is preferred");
    }

    #[test]
    fn first_fills_servers_in_id_order() {
        let be = backend(
            " balance first\n server a 127.0.0.1:1 maxconn 2 id 3\n server b 127.0.0.1:2 maxconn 2 id 1\n",
        );
        let key = LbKey::default();
        let picks: Vec<_> = (0..4)
            .map(|_| match try_pick(&be, &key) {
                Pick::Got(s) => s,
                _ => panic!(),
            })
            .collect();
        let names: Vec<_> = picks.iter().map(|s| s.server().name.as_str()).collect();
        assert_eq!(names, ["b", "b", "a", "a"]);
        assert!(matches!(try_pick(&be, &key), Pick::Full));
    }

    #[test]
    fn backups_take_over_only_when_no_active_server_is_left() {
        let be = backend(
            " balance roundrobin\n server a 127.0.0.1:1\n server b1 127.0.0.1:2 backup\n server b2 127.0.0.1:3 backup\n",
        );
        let key = LbKey::default();
        let name = |be: &BackendRt| match try_pick(be, &key) {
            Pick::Got(s) => s.server().name.clone(),
            _ => "none".into(),
        };
        assert_eq!(name(&be), "a");
        assert_eq!(name(&be), "a");
        be.servers[0]
            .state
            .set_admin(crate::state::AdminState::Maint);
        assert_eq!(name(&be), "b1", "the first backup only");
        assert_eq!(name(&be), "b1");
        let be2 = backend(
            " balance roundrobin\n option allbackups\n server a 127.0.0.1:1 disabled\n server b1 127.0.0.1:2 backup\n server b2 127.0.0.1:3 backup\n",
        );
        let mut seen: Vec<String> = (0..4).map(|_| name(&be2)).collect();
        seen.sort();
        assert_eq!(
            seen,
            ["b1", "b1", "b2", "b2"],
            "all backups with allbackups"
        );
        be2.servers[1]
            .state
            .set_admin(crate::state::AdminState::Maint);
        be2.servers[2]
            .state
            .set_admin(crate::state::AdminState::Maint);
        assert!(matches!(try_pick(&be2, &key), Pick::NoServer));
    }

    #[test]
    fn consistent_hashing_moves_about_one_nth_of_keys_when_a_server_goes() {
        let be = backend(&format!(
            " balance uri\n hash-type consistent\n{}",
            servers(&[1; 5], "")
        ));
        let keys: Vec<String> = (0..10_000).map(|i| format!("/k/{i}")).collect();
        let pick_all = |be: &BackendRt| -> Vec<usize> {
            keys.iter()
                .map(|k| {
                    let head = Head::parse_request(bytes::Bytes::from(format!(
                        "GET {k} HTTP/1.1\r\nhost: h\r\n\r\n"
                    )))
                    .unwrap();
                    server_for(
                        be,
                        &LbKey {
                            src: None,
                            head: Some(&head),
                            prio: Default::default(),
                        },
                    )
                    .unwrap()
                })
                .collect()
        };
        let before = pick_all(&be);
        be.servers[2]
            .state
            .set_admin(crate::state::AdminState::Maint);
        let after = pick_all(&be);
        let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        let owned = before.iter().filter(|&&s| s == 2).count();
        assert_eq!(moved, owned, "only the removed server's keys move");
        assert!(moved < keys.len() * 30 / 100, "about 1/5 move: {moved}");
        // Map-based hashing reshuffles most keys instead.
        let be = backend(&format!(" balance uri\n{}", servers(&[1; 5], "")));
        let before = pick_all(&be);
        be.servers[2]
            .state
            .set_admin(crate::state::AdminState::Maint);
        let after = pick_all(&be);
        assert!(before.iter().zip(&after).filter(|(a, b)| a != b).count() > keys.len() / 2);
    }

    #[test]
    fn weight_zero_and_hash_fallback() {
        let be = backend(
            " balance url_param id\n server a 127.0.0.1:1 weight 0\n server b 127.0.0.1:2\n server c 127.0.0.1:3\n",
        );
        let c = spread(&be, 100, |_| "/no-param".into());
        assert_eq!(
            c,
            [0, 50, 50],
            "no key: round robin over the usable servers"
        );
    }

    #[test]
    fn map_follows_weights_and_declaration_order() {
        assert_eq!(build_map(&[1, 1, 1]), [0, 1, 2]);
        let m = build_map(&[1, 2, 3]);
        assert_eq!(m.len(), 6);
        for (i, w) in [1, 2, 3].iter().enumerate() {
            assert_eq!(m.iter().filter(|&&s| s as usize == i).count(), *w);
        }
        assert_eq!(build_map(&[0, 1]), [1]);
    }

    #[test]
    fn ring_picks_the_closest_point() {
        let ring = vec![(100, 0), (200, 1), (1000, 2)];
        assert_eq!(ring_lookup(&ring, 140), Some(0));
        assert_eq!(
            ring_lookup(&ring, 150),
            Some(0),
            "a tie goes to the previous point"
        );
        assert_eq!(ring_lookup(&ring, 160), Some(1));
        assert_eq!(ring_lookup(&ring, 50), Some(0));
        assert_eq!(ring_lookup(&ring, u32::MAX), Some(0), "wraps around");
        assert_eq!(ring_lookup(&ring, 900), Some(2));
    }

    #[test]
    fn url_params_and_domains() {
        assert_eq!(url_param(b"a=1&user=bob&c=3", b"user"), Some(&b"bob"[..]));
        assert_eq!(url_param(b"user=", b"user"), Some(&b""[..]));
        assert_eq!(
            url_param(b"user", b"user"),
            None,
            "HAProxy needs more than the name"
        );
        assert_eq!(url_param(b"username=x", b"user"), None);
        assert_eq!(url_param(b"x=1&user=a&b", b"user"), Some(&b"a"[..]));
        assert_eq!(main_domain(b"www.example.com"), b"example");
        assert_eq!(main_domain(b"example.com"), b"example");
        assert_eq!(main_domain(b"localhost"), b"localhost");
        assert_eq!(path_of(b"http://h/p?q"), b"/p?q");
    }
}
