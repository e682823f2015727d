//! Each backend's balancing state, as the snapshot holds it: the
//! algorithm and its parameters, the weighted map, the consistent-hash
//! ring and the roundrobin tree, rebuilt when a server's effective weight
//! changes, and the request key each algorithm hashes. Picking a server
//! with it (slots, queues, `maxconn`) is `upstream::balance`'s job.

mod roundrobin;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use arc_swap::ArcSwap;

pub(crate) use crate::sample::hash::full_hash;

/// HAProxy's `gen_hash` (the function chosen by `hash-type`).
pub(crate) fn gen_hash(func: crate::config::model::HashFn, key: &[u8]) -> u32 {
    use crate::config::model::HashFn;
    use crate::sample::hash;
    match func {
        HashFn::Sdbm => hash::sdbm(key),
        HashFn::Djb2 => hash::djb2(key),
        HashFn::Wt6 => hash::wt6(key),
        HashFn::Crc32 => hash::crc32(key),
    }
}
pub(crate) use roundrobin::RoundRobin;

use crate::config::model::{Balance, HashType};
use crate::snapshot::ServerRt;
use crate::wire::h1::Head;

/// What hash-based algorithms read from the request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LbKey<'a> {
    /// The client address (`balance source`).
    pub(crate) src: Option<IpAddr>,
    /// The request head (`uri`, `url_param`, `hdr`).
    pub(crate) head: Option<&'a Head>,
    /// Where the request waits in the backend's queue, should it wait
    /// (`set-priority-class`, `set-priority-offset`): carried with the
    /// key as both reach the picking of a server.
    pub(crate) prio: crate::sample::tune::Priority,
}

/// HAProxy's `SRV_EWGHT_RANGE`: chash points are keyed `id * 4096 + n`.
pub(crate) const SRV_EWGHT_RANGE: u32 = 256 * 16;

/// A server-selection structure that is rebuilt when weights change: the
/// effective weights it was built with, and its content.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub(crate) weights: Vec<u32>,
    /// Map: `slots[i]` is a server index, `tot` entries. Ring: sorted
    /// (key, server) points.
    pub(crate) map: Vec<u16>,
    pub(crate) ring: Vec<(u32, u16)>,
    /// `random`: running sums of the weights, so that a draw in
    /// `0..total` lands on each server in exact proportion to its weight.
    pub(crate) cumulative: Vec<u64>,
}

/// The per-backend balancing state.
#[derive(Debug)]
pub(crate) struct Lb {
    pub(crate) algo: Balance,
    pub(crate) hash_type: HashType,
    pub(crate) allbackups: bool,
    pub(crate) rr: RoundRobin,
    pub(crate) table: ArcSwap<Table>,
    /// Round-robin position over the map or ring (static-rr, fallbacks),
    /// and the tie-breaker of leastconn.
    pub(crate) pos: AtomicUsize,
    /// Server indexes by id (`first`).
    pub(crate) by_id: Vec<u16>,
    /// Server ids (`puid`) by index: the chash keys.
    pub(crate) ids: Vec<u32>,
    /// GCD of the configured weights (lb_map's `wmult`).
    pub(crate) wmult: u32,
    /// `slowstart` of each server, in seconds (0: none).
    pub(crate) slowstart: Vec<u32>,
    pub(crate) backup: Vec<bool>,
    pub(crate) rng: AtomicU32,
}

/// Which servers take the load now (HAProxy's `srv_act`/`fbck`/`srv_bck`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    Active,
    /// Only this backup server.
    FirstBackup(usize),
    AllBackups,
    None,
}

impl Lb {
    pub(crate) fn new(
        algo: &Balance,
        hash_type: HashType,
        allbackups: bool,
        servers: &[(u32, u32, bool, Option<Duration>)],
    ) -> Lb {
        // (id, weight, backup, slowstart)
        let weights: Vec<u32> = servers.iter().map(|s| s.1).collect();
        let mut by_id: Vec<u16> = (0..servers.len() as u16).collect();
        by_id.sort_by_key(|&i| servers[i as usize].0);
        let mut wmult = 0u32;
        for &w in &weights {
            if w != 0 {
                wmult = if wmult == 0 { w } else { gcd(wmult, w) };
            }
        }
        Lb {
            algo: algo.clone(),
            hash_type,
            allbackups,
            rr: RoundRobin::new(&weights),
            table: ArcSwap::from_pointee(Table::default()),
            pos: AtomicUsize::new(0),
            by_id,
            ids: servers.iter().map(|s| s.0).collect(),
            wmult: wmult.max(1),
            slowstart: servers
                .iter()
                .map(|s| s.3.map_or(0, |d| d.as_secs().max(1) as u32))
                .collect(),
            backup: servers.iter().map(|s| s.2).collect(),
            rng: AtomicU32::new(0x9e37_79b9 ^ std::process::id()),
        }
    }

    /// Server `i`'s `weight` and `throttle` columns of `show stat`
    /// (HAProxy: `cur_eweight` scaled back to the user's weight, rounded
    /// up; the throttle percentage only while slowstart ramps it).
    pub(crate) fn shown_weight(&self, servers: &[ServerRt], i: usize) -> (u32, Option<u32>) {
        // A DOWN or MAINT server keeps its weight here, as in HAProxy.
        let st = &servers[i].state;
        let user = if st.fresh_weight.load(Relaxed) {
            1
        } else {
            st.weight.load(Relaxed).min(256)
        };
        let ramp = if self.map_based() {
            16
        } else {
            st.health.ramp16(self.slowstart[i])
        };
        let ramping = user > 0 && st.health.ramp_percent(self.slowstart[i]) < 100;
        let throttle = ramping.then(|| (100 * user * ramp + 15) / (16 * user));
        ((user * ramp).div_ceil(16), throttle)
    }

    /// The backend's `weight`, `act` and `bck` columns: the total weight of
    /// the servers taking the load now (the active ones, else the first
    /// backup or all of them with `allbackups`), the usable active and
    /// backup servers (HAProxy's `tot_weight`, `srv_act`, `srv_bck`).
    /// `option allbackups`: all backups take traffic when no active
    /// server can (`nbsrv` counts them then).
    pub(crate) fn allbackups(&self) -> bool {
        self.allbackups
    }

    pub(crate) fn shown_totals(&self, servers: &[ServerRt]) -> (u64, usize, usize) {
        let g = self.group(servers);
        let mut weight = 0u64;
        let (mut act, mut bck) = (0, 0);
        for (i, s) in servers.iter().enumerate() {
            if !s.state.usable() {
                continue;
            }
            if self.backup[i] {
                bck += 1;
            } else {
                act += 1;
            }
            let in_group = match g {
                Group::Active => !self.backup[i],
                Group::FirstBackup(b) => i == b,
                Group::AllBackups => self.backup[i],
                Group::None => false,
            };
            if in_group {
                weight += u64::from(self.shown_weight(servers, i).0);
            }
        }
        (weight, act, bck)
    }

    /// Whether the algorithm hashes a request key.
    pub(crate) fn hashing(&self) -> bool {
        self.algo.is_hash()
    }

    /// Consistent ring (chash) rather than a map.
    pub(crate) fn consistent(&self) -> bool {
        self.hashing() && self.hash_type.consistent
    }

    /// Map-based (static weights: no slowstart ramp).
    pub(crate) fn map_based(&self) -> bool {
        matches!(self.algo, Balance::StaticRr) || (self.hashing() && !self.hash_type.consistent)
    }

    pub(crate) fn group(&self, servers: &[ServerRt]) -> Group {
        let mut first_bck = None;
        for (i, s) in servers.iter().enumerate() {
            if s.state.lb_weight() == 0 {
                continue;
            }
            if !self.backup[i] {
                return Group::Active;
            }
            first_bck.get_or_insert(i);
        }
        match first_bck {
            None => Group::None,
            Some(_) if self.allbackups => Group::AllBackups,
            Some(i) => Group::FirstBackup(i),
        }
    }

    /// Server `i`'s effective weight in the current group: user weight × 16
    /// ramped by slowstart for dynamic algorithms, weight / gcd for maps,
    /// 0 when it takes no load.
    #[inline]
    pub(crate) fn eweight(&self, servers: &[ServerRt], g: Group, i: usize) -> u32 {
        let in_group = match g {
            Group::Active => !self.backup[i],
            Group::FirstBackup(b) => i == b,
            Group::AllBackups => self.backup[i],
            Group::None => false,
        };
        if !in_group {
            return 0;
        }
        let st = &servers[i].state;
        let w = st.lb_weight().min(256);
        if w == 0 {
            return 0;
        }
        if self.map_based() {
            return w.div_ceil(self.wmult);
        }
        let ramp = st.health.ramp16(self.slowstart[i]);
        (w * ramp).max(1)
    }

    /// The current map or ring, rebuilt first if any weight changed.
    pub(crate) fn table(&self, servers: &[ServerRt], g: Group) -> arc_swap::Guard<Arc<Table>> {
        let t = self.table.load();
        let n = servers.len();
        if t.weights.len() == n && (0..n).all(|i| t.weights[i] == self.eweight(servers, g, i)) {
            return t;
        }
        let weights: Vec<u32> = (0..n).map(|i| self.eweight(servers, g, i)).collect();
        let mut new = Table {
            weights,
            ..Table::default()
        };
        if matches!(self.algo, Balance::Random { .. }) {
            new.cumulative = new
                .weights
                .iter()
                .scan(0u64, |sum, &w| {
                    *sum += u64::from(w);
                    Some(*sum)
                })
                .collect();
        } else if self.consistent() {
            new.ring = build_ring(&new.weights, &self.ids);
        } else {
            new.map = build_map(&new.weights);
        }
        self.table.store(Arc::new(new));
        self.table.load()
    }

    /// The server a hash maps to (`map_get_server_hash` /
    /// `chash_get_server_hash`).
    pub(crate) fn by_hash(&self, t: &Table, h: u32) -> Option<usize> {
        if self.consistent() {
            ring_lookup(&t.ring, h)
        } else if t.map.is_empty() {
            None
        } else {
            Some(t.map[h as usize % t.map.len()] as usize)
        }
    }

    /// The hash of the request's key, None when the key is absent (then
    /// HAProxy falls back to round robin).
    pub(crate) fn key_hash(&self, key: &LbKey<'_>, used: usize) -> Option<u32> {
        let func = self.hash_type.func;
        let aval = |h: u32| {
            if self.hash_type.avalanche {
                full_hash(h)
            } else {
                h
            }
        };
        match &self.algo {
            Balance::Source => {
                if used == 1 {
                    return Some(0);
                }
                let h = match key.src? {
                    IpAddr::V4(a) => u32::from(a),
                    IpAddr::V6(a) => {
                        let o = a.octets();
                        (0..4).fold(0u32, |h, k| {
                            h ^ u32::from_be_bytes([
                                o[4 * k],
                                o[4 * k + 1],
                                o[4 * k + 2],
                                o[4 * k + 3],
                            ])
                        })
                    }
                };
                Some(aval(h))
            }
            Balance::Uri {
                len,
                depth,
                whole,
                path_only,
            } => {
                let head = key.head?;
                if used == 1 {
                    return Some(0);
                }
                let mut uri = head.target();
                if *path_only {
                    uri = path_of(uri);
                }
                if *len > 0 && uri.len() > *len as usize {
                    uri = &uri[..*len as usize];
                }
                let stop_slash = if *depth > 0 { depth + 1 } else { 0 };
                let mut slashes = 0;
                let mut end = 0;
                for &c in uri {
                    if c == b'/' {
                        slashes += 1;
                        if slashes == stop_slash {
                            break;
                        }
                    } else if c == b'?' && !whole {
                        break;
                    }
                    end += 1;
                }
                Some(aval(gen_hash(func, &uri[..end])))
            }
            Balance::UrlParam { name, .. } => {
                let uri = key.head?.target();
                let q = uri.iter().position(|&c| c == b'?')?;
                let v = url_param(&uri[q + 1..], name.as_bytes())?;
                Some(aval(gen_hash(func, v)))
            }
            Balance::Hdr { name, domain_only } => {
                let head = key.head?;
                if used == 1 {
                    return Some(0);
                }
                let raw = head.values(name).next()?;
                // The first comma-separated value, trimmed.
                let v = raw.split(|&c| c == b',').next().unwrap_or(b"");
                let v = crate::wire::h1::trim(v);
                if v.is_empty() {
                    return None;
                }
                let v = if *domain_only { main_domain(v) } else { v };
                Some(aval(gen_hash(func, v)))
            }
            // HAProxy 2.6's `get_server_expr`: the value as binary, hashed
            // whole; no value, no hash (round robin then).
            Balance::Hash(expr) => {
                if used == 1 {
                    return Some(0);
                }
                let cx = crate::sample::Ctx {
                    src: key.src,
                    req: key.head,
                    ..Default::default()
                };
                let v = expr.eval(&cx)?.cast(crate::sample::value::SmpType::Bin)?;
                Some(aval(gen_hash(func, v.bytes()?)))
            }
            _ => None,
        }
    }

    /// `random`: one weighted draw, exactly proportional to the effective
    /// weights. HAProxy draws on its chash ring, whose arcs only roughly
    /// follow the weights (several % off at small weights); a random
    /// balancer owes users no particular sequence, only the shares.
    pub(crate) fn draw(&self, t: &Table) -> Option<usize> {
        let total = *t.cumulative.last()?;
        if total == 0 {
            return None;
        }
        // 32 random bits scaled to 0..total (total < 2^32: bias < 2^-20).
        let r = (u64::from(self.next_rand()) * total) >> 32;
        Some(t.cumulative.partition_point(|&c| c <= r))
    }

    pub(crate) fn next_rand(&self) -> u32 {
        // xorshift32 over a shared word; races only lose randomness.
        let mut x = self.rng.load(Relaxed);
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng.store(x, Relaxed);
        x
    }
}

pub(crate) fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// lb_map's `recalc_server_map`: `tot` slots, each to the server whose
/// accumulated score is highest (first declared wins ties).
pub(crate) fn build_map(weights: &[u32]) -> Vec<u16> {
    let tot: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let mut map = Vec::with_capacity(tot as usize);
    if tot == 0 {
        return map;
    }
    let tot_i = tot as i64;
    let mut score = vec![0i64; weights.len()];
    for _ in 0..tot {
        let mut best: Option<usize> = None;
        let mut max = 0i64;
        for (i, &w) in weights.iter().enumerate() {
            if w == 0 {
                continue;
            }
            if tot == 1 {
                best = Some(i);
                break;
            }
            score[i] += i64::from(w);
            let v = (score[i] + tot_i) / tot_i;
            if best.is_none() || v > max {
                max = v;
                best = Some(i);
            }
        }
        if let Some(b) = best {
            map.push(b as u16);
            score[b] -= tot_i;
        }
    }
    map
}

/// lb_chash's tree as a sorted array: `eweight` points per server, keyed
/// `full_hash(id * 4096 + n)`; equal keys keep insertion order.
pub(crate) fn build_ring(weights: &[u32], ids: &[u32]) -> Vec<(u32, u16)> {
    let mut ring = Vec::with_capacity(weights.iter().map(|&w| w as usize).sum());
    for (i, &w) in weights.iter().enumerate() {
        for n in 0..w {
            let key = full_hash(ids[i].wrapping_mul(SRV_EWGHT_RANGE).wrapping_add(n));
            ring.push((key, i as u16));
        }
    }
    // Stable: equal keys stay in insertion order, as eb32 duplicates do.
    ring.sort_by_key(|&(k, _)| k);
    ring
}

/// `chash_get_server_hash`: the closest point's server, the previous one on
/// a tie.
pub(crate) fn ring_lookup(ring: &[(u32, u16)], h: u32) -> Option<usize> {
    ring_point(ring, h).map(|p| ring[p].1 as usize)
}

/// The index of the point [`ring_lookup`] takes.
pub(crate) fn ring_point(ring: &[(u32, u16)], h: u32) -> Option<usize> {
    if ring.is_empty() {
        return None;
    }
    let ni = ring.partition_point(|&(k, _)| k < h);
    let ni = if ni == ring.len() { 0 } else { ni };
    let pi = if ni == 0 { ring.len() - 1 } else { ni - 1 };
    let (nk, _) = ring[ni];
    let (pk, _) = ring[pi];
    let dp = h.wrapping_sub(pk);
    let dn = nk.wrapping_sub(h);
    Some(if dp <= dn { pi } else { ni })
}

/// The path of a request target (`path-only`, `monitor-uri`): the absolute
/// form loses its scheme and authority, the query is kept (HAProxy's
/// `http_parse_path`).
pub(crate) fn path_of(uri: &[u8]) -> &[u8] {
    if uri.first() == Some(&b'/') || uri == b"*" {
        return uri;
    }
    if let Some(p) = uri.windows(3).position(|w| w == b"://") {
        let rest = &uri[p + 3..];
        return match rest.iter().position(|&c| c == b'/' || c == b'?') {
            Some(i) => &rest[i..],
            None => b"",
        };
    }
    uri
}

/// The value of `name` in a query string (`get_server_ph`).
pub(crate) fn url_param<'a>(query: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let plen = name.len();
    let mut params = query;
    while params.len() > plen {
        if params[plen] == b'=' && &params[..plen] == name {
            let v = &params[plen + 1..];
            let end = v.iter().position(|&c| c == b'&').unwrap_or(v.len());
            return Some(&v[..end]);
        }
        let amp = params.iter().position(|&c| c == b'&')?;
        params = &params[amp + 1..];
    }
    None
}

/// `use_domain_only`: the label before the TLD (`www.example.com` hashes
/// `example`), HAProxy's backward scan.
pub(crate) fn main_domain(v: &[u8]) -> &[u8] {
    let mut end = v.len();
    let mut dohash = false;
    let mut p = v.len();
    // p indexes one past the current character, like HAProxy's pointer.
    let mut len = v.len();
    while len > 0 {
        if dohash {
            if v[p - 1] == b'.' {
                break;
            }
        } else if p < v.len() && v[p] == b'.' {
            end = p;
            dohash = true;
        }
        p -= 1;
        len -= 1;
    }
    &v[p..end]
}
