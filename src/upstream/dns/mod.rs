//! Servers whose address follows the DNS (`resolvers <name>` on a server
//! line, `server-template` slots): one task per `resolvers` section
//! resolves every name its servers use each `timeout resolve`, and moves
//! the servers as HAProxy 2.6 does. A new address is published through the
//! server's pool (`ServerState::set_addr`): requests pick it up with the
//! atomic load they already do, connections to the old address finish,
//! and idle ones to it are never reused. A name that stops resolving past
//! its `hold` period puts its servers in `MAINT (resolution)`; an SRV name
//! fills its template's slots with the records' targets, ports and
//! weights, frees the slots of records gone, and takes free slots for new
//! ones.
//!
//! The task is the only writer of what it changes; the data path only
//! reads atomics.

mod query;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

pub(crate) use query::{Ask, Outcome};

use crate::config::model::{ResolversSection, ServerResolve};
use crate::snapshot::runtime::Runtime;
use crate::snapshot::{BackendRt, ServerRt, Snapshot};
use crate::state::{ADMF_HMAINT, ADMF_RMAINT, ServerState};

/// The sections whose task runs.
static RUNNING: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// Wakes the tasks before their next round (`set server .. fqdn`).
static WAKE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Starts the task of every `resolvers` section some server of the
/// current snapshot uses and that has none yet (start-up, after a reload,
/// after `add server`). A task ends when no server uses its section.
pub(crate) fn spawn_resolvers(rt: &Arc<Runtime>) {
    let snap = rt.snapshot();
    for section in &snap.global.resolvers {
        if requesters(&snap, &section.name).is_empty() {
            continue;
        }
        if crate::state::lock(&RUNNING).insert(section.name.clone()) {
            tokio::spawn(run(rt.clone(), section.name.clone()));
        }
    }
}

/// One resolution of `name` for a `do-resolve` rule: the first address of
/// the family asked first (`ipv4`: A, else AAAA), else the first of the
/// other, as HAProxy picks one for a requester that is no server; None on
/// any failure.
pub(crate) async fn resolve_addr(
    section: &ResolversSection,
    name: &str,
    ipv4: bool,
) -> Option<IpAddr> {
    let ask = if ipv4 { Ask::V4First } else { Ask::V6First };
    let Outcome::Valid(answer, _) = query::resolve(section, name, ask).await else {
        return None;
    };
    let preferred = answer.ips.iter().find(|ip| ip.is_ipv4() == ipv4);
    preferred.or(answer.ips.first()).copied()
}

/// Resolve again now (a server's FQDN changed).
pub(crate) fn wake() {
    WAKE.notify_waiters();
}

/// A server resolved by a section: its backend and its place there.
#[derive(Clone)]
struct Requester {
    be: Arc<BackendRt>,
    idx: usize,
}

impl Requester {
    fn rt(&self) -> &ServerRt {
        &self.be.servers[self.idx]
    }
    fn st(&self) -> &Arc<ServerState> {
        &self.rt().state
    }
    fn opts(&self) -> &ServerResolve {
        // Only servers with `resolvers` are requesters.
        static NONE: LazyLock<ServerResolve> = LazyLock::new(|| ServerResolve {
            resolvers: String::new(),
            prefer_v4: false,
            nets: Vec::new(),
            allow_dup_ip: false,
            ignore_weight: false,
        });
        self.rt().resolve.as_ref().unwrap_or(&NONE)
    }
}

fn requesters(snap: &Snapshot, section: &str) -> Vec<Requester> {
    let mut out = Vec::new();
    for be in snap.backends() {
        for (idx, s) in be.servers.iter().enumerate() {
            if s.resolve.as_ref().is_some_and(|r| r.resolvers == section) && !s.state.is_retired() {
                out.push(Requester {
                    be: be.clone(),
                    idx,
                });
            }
        }
    }
    out
}

/// A name the section resolves.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    name: String,
    ask: Ask,
}

/// What the task remembers between rounds.
#[derive(Default)]
struct Memory {
    /// When each name last resolved validly (from the task's start).
    last_valid: HashMap<Key, Instant>,
    /// When each SRV record (name, target, port) was last in an answer.
    seen: HashMap<(String, String, u16), Instant>,
    /// The slots whose address came with their SRV record (additional
    /// section): no resolution of their own.
    from_additional: HashSet<usize>,
}

async fn run(rt: Arc<Runtime>, name: String) {
    let started = Instant::now();
    let mut mem = Memory::default();
    loop {
        let snap = rt.snapshot();
        let Some(section) = snap
            .global
            .resolvers
            .iter()
            .find(|s| s.name == name)
            .cloned()
        else {
            break;
        };
        let reqs = requesters(&snap, &name);
        if reqs.is_empty() {
            break;
        }
        let keys = keys_of(&reqs, &mem);
        let mut set = tokio::task::JoinSet::new();
        for key in keys {
            let section = section.clone();
            set.spawn(async move {
                let out = query::resolve(&section, &key.name, key.ask).await;
                (key, out)
            });
        }
        let mut outcomes = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(r) = joined {
                outcomes.push(r);
            }
        }
        // SRV answers first: they decide the names the slots then hold.
        outcomes.sort_by_key(|(k, _)| k.ask != Ask::Srv);
        let now = Instant::now();
        for (key, outcome) in outcomes {
            let since = *mem.last_valid.get(&key).unwrap_or(&started);
            if matches!(outcome, Outcome::Valid(..)) {
                mem.last_valid.insert(key.clone(), now);
            }
            let hold_over = |o: &Outcome| now.duration_since(since) >= hold_for(&section, o);
            match key.ask {
                Ask::Srv => apply_srv(
                    &section,
                    &reqs,
                    &key,
                    &outcome,
                    hold_over(&outcome),
                    &mut mem,
                ),
                _ => apply_host(&section, &reqs, &key, &outcome, hold_over(&outcome), &mem),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(section.timeout_resolve) => {}
            _ = WAKE.notified() => {}
        }
    }
    crate::state::lock(&RUNNING).remove(&name);
}

/// The `hold` period of an outcome's status.
fn hold_for(section: &ResolversSection, o: &Outcome) -> std::time::Duration {
    match o {
        Outcome::Valid(..) => section.hold.valid,
        Outcome::Nx => section.hold.nx,
        Outcome::Refused => section.hold.refused,
        Outcome::Timeout => section.hold.timeout,
        Outcome::Other => section.hold.other,
    }
}

/// The names to resolve this round: each SRV name of the template slots,
/// and the host name of every other server (a slot's SRV target when its
/// record brought no address).
fn keys_of(reqs: &[Requester], mem: &Memory) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    let mut push = |k: Key| {
        if !keys.contains(&k) {
            keys.push(k);
        }
    };
    for r in reqs {
        let ask = if r.opts().prefer_v4 {
            Ask::V4First
        } else {
            Ask::V6First
        };
        if let Some(srv) = &r.rt().srvrecord {
            push(Key {
                name: srv.to_string(),
                ask: Ask::Srv,
            });
            if mem.from_additional.contains(&slot_id(r)) {
                continue;
            }
        }
        if let Some(fqdn) = r.st().fqdn.load_full() {
            push(Key {
                name: fqdn.to_string(),
                ask,
            });
        }
    }
    keys
}

fn slot_id(r: &Requester) -> usize {
    Arc::as_ptr(r.st()) as usize
}

/// Why a server goes to `MAINT (resolution)` after a failed resolution.
fn down_reason(o: &Outcome) -> &'static str {
    match o {
        Outcome::Nx => "DNS NX status",
        Outcome::Timeout => "DNS timeout status",
        Outcome::Refused => "DNS refused status",
        _ => "unspecified DNS error",
    }
}

/// A/AAAA answers to the servers resolving `key` (HAProxy's
/// `snr_resolution_cb`, `snr_update_srv_status`).
fn apply_host(
    section: &ResolversSection,
    reqs: &[Requester],
    key: &Key,
    outcome: &Outcome,
    hold_over: bool,
    mem: &Memory,
) {
    let mine: Vec<&Requester> = reqs
        .iter()
        .filter(|r| {
            r.st()
                .fqdn
                .load()
                .as_deref()
                .is_some_and(|f| **f == key.name)
                && !(r.rt().srvrecord.is_some() && mem.from_additional.contains(&slot_id(r)))
        })
        .collect();
    match outcome {
        Outcome::Valid(answer, by) => {
            for (n, r) in mine.iter().enumerate() {
                let st = r.st();
                let current = st.has_addr().then(|| st.addr().ip());
                let taken: Vec<IpAddr> = mine
                    .iter()
                    .filter(|o| !Arc::ptr_eq(o.st(), st))
                    .filter(|o| o.st().admin() & ADMF_RMAINT == 0 && o.st().has_addr())
                    .map(|o| o.st().addr().ip())
                    .collect();
                match pick_ip(&answer.ips, r.opts(), current, &taken) {
                    None => {
                        if st.set_rmaint(true) {
                            crate::observe::log::server_state::resolution_down(
                                &r.be,
                                r.rt(),
                                "No IP for server ",
                            );
                        }
                        st.clear_addr();
                    }
                    Some(ip) => {
                        if current != Some(ip) {
                            let updater = if n == 0 {
                                let c = crate::state::resolvers::counters(&section.name, by);
                                crate::state::resolvers::NsCounters::bump(&c.update);
                                format!("{}/{by}", section.name)
                            } else {
                                "DNS cache".to_string()
                            };
                            move_server(r, ip, &updater);
                        }
                        if st.admin() & ADMF_RMAINT != 0 && st.set_rmaint(false) {
                            crate::observe::log::server_state::resolution_up(&r.be, r.rt(), true);
                        }
                    }
                }
            }
        }
        failed if hold_over => {
            for r in mine {
                if r.st().set_rmaint(true) {
                    crate::observe::log::server_state::resolution_down(
                        &r.be,
                        r.rt(),
                        down_reason(failed),
                    );
                }
                r.st().clear_addr();
            }
        }
        _ => {}
    }
}

/// HAProxy's choice of an address among the answer's (its
/// `resolv_get_ip_from_response` scores): the preferred family (8), a
/// preferred network (4), not used by another server of the name (2,
/// required unless `allow-dup-ip`), the current address (1); the first of
/// the best score.
fn pick_ip(
    ips: &[IpAddr],
    o: &ServerResolve,
    current: Option<IpAddr>,
    taken: &[IpAddr],
) -> Option<IpAddr> {
    let mut best: Option<(u32, IpAddr)> = None;
    for &ip in ips {
        let mut score = 0;
        if ip.is_ipv4() == o.prefer_v4 {
            score += 8;
        }
        if o.nets.iter().any(|&(net, len)| in_net(ip, net, len)) {
            score += 4;
        }
        if taken.contains(&ip) {
            if !o.allow_dup_ip {
                continue;
            }
        } else {
            score += 2;
        }
        if current == Some(ip) {
            score += 1;
        }
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, ip));
        }
    }
    best.map(|(_, ip)| ip)
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// A new address for `r`'s server, told as HAProxy tells it.
fn move_server(r: &Requester, ip: IpAddr, updater: &str) {
    let st = r.st();
    let old = if st.has_addr() {
        st.addr().ip().to_string()
    } else {
        "(none)".to_string()
    };
    st.set_addr(SocketAddr::new(ip, st.addr().port()));
    crate::observe::log::server_state::address_changed(&r.be, r.rt(), &old, ip, updater);
}

/// SRV answers to the template slots of `key` (HAProxy's
/// `resolv_check_response`): a record keeps the slot that holds its
/// target and port, or takes the first free one; records missing for
/// longer than `hold obsolete` free their slot.
fn apply_srv(
    section: &ResolversSection,
    reqs: &[Requester],
    key: &Key,
    outcome: &Outcome,
    hold_over: bool,
    mem: &mut Memory,
) {
    let slots: Vec<&Requester> = reqs
        .iter()
        .filter(|r| r.rt().srvrecord.as_deref() == Some(key.name.as_str()))
        .collect();
    let now = Instant::now();
    let holds = |r: &Requester| -> Option<(String, u16)> {
        let f = r.st().fqdn.load_full()?;
        Some((f.to_string(), r.st().addr().port()))
    };
    match outcome {
        Outcome::Valid(answer, _) => {
            for rec in &answer.srv {
                mem.seen
                    .insert((key.name.clone(), rec.target.clone(), rec.port), now);
            }
            for rec in &answer.srv {
                let want = (rec.target.clone(), rec.port);
                let slot = slots
                    .iter()
                    .find(|r| holds(r).as_ref() == Some(&want))
                    .or_else(|| slots.iter().find(|r| r.st().fqdn.load().is_none()));
                let Some(r) = slot else { continue };
                let st = r.st();
                if st.fqdn.load().is_none() {
                    st.fqdn.store(Some(Arc::new(rec.target.clone())));
                    st.set_admin_flag(ADMF_HMAINT, true);
                    crate::observe::log::server_state::fqdn_changed(&r.be, r.rt(), &rec.target);
                }
                if st.addr().port() != rec.port {
                    let ip = st.addr().ip();
                    let had = st.has_addr();
                    st.set_addr(SocketAddr::new(ip, rec.port));
                    if !had {
                        st.no_addr.store(true, Relaxed);
                    }
                }
                if !r.opts().ignore_weight {
                    let w = u32::from(rec.weight).div_ceil(256);
                    st.weight.store(w.min(256), Relaxed);
                }
                match rec.additional {
                    Some(ip) => {
                        mem.from_additional.insert(slot_id(r));
                        if !st.has_addr() || st.addr().ip() != ip {
                            move_server(r, ip, "DNS additional record");
                        }
                    }
                    None => {
                        mem.from_additional.remove(&slot_id(r));
                    }
                }
                if st.has_addr() && st.admin() & ADMF_RMAINT != 0 && st.set_rmaint(false) {
                    crate::observe::log::server_state::resolution_up(&r.be, r.rt(), false);
                }
            }
            // Records gone from the answers for longer than `hold obsolete`.
            for r in &slots {
                let Some((target, port)) = holds(r) else {
                    continue;
                };
                let listed = answer
                    .srv
                    .iter()
                    .any(|rec| rec.target == target && rec.port == port);
                let last = mem
                    .seen
                    .get(&(key.name.clone(), target.clone(), port))
                    .copied()
                    .unwrap_or(now);
                if !listed && now.duration_since(last) >= section.hold.obsolete {
                    free_slot(r, mem, "entry removed from SRV record");
                }
            }
        }
        failed if hold_over => {
            for r in &slots {
                if holds(r).is_some() || r.st().admin() & ADMF_RMAINT == 0 {
                    free_slot(r, mem, down_reason(failed));
                }
            }
        }
        _ => {}
    }
}

/// A template slot back to free: no name, no address, in `MAINT
/// (resolution)`.
fn free_slot(r: &Requester, mem: &mut Memory, why: &str) {
    let st = r.st();
    mem.from_additional.remove(&slot_id(r));
    if st.set_rmaint(true) {
        crate::observe::log::server_state::resolution_down(&r.be, r.rt(), why);
    }
    st.fqdn.store(None);
    st.set_admin_flag(ADMF_HMAINT, false);
    st.set_addr(SocketAddr::new(
        IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        0,
    ));
    st.no_addr.store(true, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v4: bool, dup: bool) -> ServerResolve {
        ServerResolve {
            resolvers: "r".into(),
            prefer_v4: v4,
            nets: Vec::new(),
            allow_dup_ip: dup,
            ignore_weight: false,
        }
    }

    #[test]
    fn address_choice_follows_haproxys_scores() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let v6: IpAddr = "::1".parse().unwrap();
        // The preferred family first, the first of equals.
        assert_eq!(pick_ip(&[v6, a, b], &opts(true, false), None, &[]), Some(a));
        assert_eq!(pick_ip(&[a, v6], &opts(false, false), None, &[]), Some(v6));
        // The current address is kept.
        assert_eq!(pick_ip(&[a, b], &opts(true, false), Some(b), &[]), Some(b));
        // One another server has is skipped, unless duplicates are allowed.
        assert_eq!(pick_ip(&[a, b], &opts(true, false), None, &[a]), Some(b));
        assert_eq!(pick_ip(&[a], &opts(true, false), None, &[a]), None);
        assert_eq!(pick_ip(&[a], &opts(true, true), None, &[a]), Some(a));
        // A preferred network wins over the rest.
        let mut o = opts(true, false);
        o.nets = vec![("10.0.0.2".parse().unwrap(), 32)];
        assert_eq!(pick_ip(&[a, b], &o, None, &[]), Some(b));
    }
}
