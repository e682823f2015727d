//! Variables: `set-var(<scope>.<name>)`, `var(<scope>.<name>)`, with
//! HAProxy 2.6's scopes, conditions and memory limits.
//!
//! Where each scope lives: `proc` in one process-wide store behind a lock
//! (HAProxy locks it too); `sess` in the connection's [`SessVars`], owned by
//! the task serving the connection; `txn`, `req` and `res` in the
//! request's [`Vars`], which borrows the session's. None of these allocates
//! until a variable is set, so a configuration without variables pays
//! nothing per request. The connection's stores are behind mutexes only
//! because the request futures must be `Send`: one task uses them, so the
//! locks are never contended.

use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};

use super::value::Sample;

/// A variable's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Proc,
    Sess,
    Txn,
    Req,
    Res,
    /// Health checks' scope: HAProxy parses it; sluice's checks have no
    /// variables, so it is always empty.
    Check,
}

/// A parsed variable name: its scope and the name after the scope's dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VarName {
    pub(crate) scope: Scope,
    pub(crate) name: Box<str>,
}

impl VarName {
    /// Parses `<scope>.<name>` with HAProxy 2.6's messages.
    pub(crate) fn parse(text: &str) -> Result<VarName, String> {
        Self::parse_quoting(text, text)
    }

    /// As [`VarName::parse`], `text` being the start of `word`: a bad
    /// character is quoted up to the end of `word`, as HAProxy quotes its
    /// C string (`set-var(txn.a-b)` gives `'-b)'`).
    pub(crate) fn parse_quoting(text: &str, word: &str) -> Result<VarName, String> {
        if text.is_empty() {
            return Err("Empty variable name cannot be accepted".to_string());
        }
        let scopes = [
            ("proc.", Scope::Proc),
            ("sess.", Scope::Sess),
            ("txn.", Scope::Txn),
            ("req.", Scope::Req),
            ("res.", Scope::Res),
            ("check.", Scope::Check),
        ];
        // The scope must be followed by at least one character.
        let Some((scope, name)) = scopes.iter().find_map(|(p, s)| {
            text.strip_prefix(p)
                .filter(|n| !n.is_empty())
                .map(|n| (*s, n))
        }) else {
            return Err(format!(
                "invalid variable name '{text}'. A variable name must be start by its scope. The scope can be 'proc', 'sess', 'txn', 'req', 'res' or 'check'"
            ));
        };
        if let Some(i) = name
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.'))
        {
            let at = text.len() - name.len() + i;
            return Err(format!(
                "invalid syntax at char '{}'",
                word.get(at..).unwrap_or(&name[i..])
            ));
        }
        Ok(VarName {
            scope,
            name: name.into(),
        })
    }
}

/// The conditions of `set-var(<name>,<cond>...)` (HAProxy 2.6's `VF_COND_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Conds(u16);

impl Conds {
    const IFEXISTS: u16 = 1;
    const IFNOTEXISTS: u16 = 2;
    const IFEMPTY: u16 = 4;
    const IFNOTEMPTY: u16 = 8;
    const IFSET: u16 = 16;
    const IFNOTSET: u16 = 32;
    const IFGT: u16 = 64;
    const IFLT: u16 = 128;

    /// Adds condition `word`, or gives HAProxy's message.
    pub(crate) fn add(&mut self, word: &str) -> Result<(), String> {
        self.0 |= match word {
            "ifexists" => Self::IFEXISTS,
            "ifnotexists" => Self::IFNOTEXISTS,
            "ifempty" => Self::IFEMPTY,
            "ifnotempty" => Self::IFNOTEMPTY,
            "ifset" => Self::IFSET,
            "ifnotset" => Self::IFNOTSET,
            "ifgt" => Self::IFGT,
            "iflt" => Self::IFLT,
            _ => return Err(format!("unknown condition \"{word}\"")),
        };
        Ok(())
    }

    pub(crate) fn bits(self) -> u16 {
        self.0
    }

    pub(crate) fn from_bits(b: u16) -> Conds {
        Conds(b)
    }

    fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// What one variable costs against the limits beyond its value: HAProxy
/// 2.6 counts `sizeof(struct var)`, 80 bytes on a 64-bit build.
const VAR_SIZE: u64 = 80;

/// One variable: its name and value (None: created but not set, as the
/// `proc` variables a configuration names are, or after `unset-var` on
/// one of those).
#[derive(Debug)]
struct Entry {
    name: Box<str>,
    value: Option<Sample<'static>>,
    /// A `proc` variable named by the configuration: `unset-var` empties
    /// it but keeps it.
    permanent: bool,
}

/// The bytes a value costs beyond [`VAR_SIZE`]: text only (a method
/// HAProxy knows is stored as a number).
fn data_size(v: &Sample<'_>) -> u64 {
    match v {
        Sample::Str(s) | Sample::Bin(s) => s.len() as u64,
        Sample::Meth(m) if !is_known_method(m) => m.len() as u64,
        _ => 0,
    }
}

fn is_known_method(m: &[u8]) -> bool {
    matches!(
        m,
        b"OPTIONS" | b"GET" | b"HEAD" | b"POST" | b"PUT" | b"DELETE" | b"TRACE" | b"CONNECT"
    )
}

/// `tune.vars.*-max-size`, process-wide as in HAProxy (0: no limit).
static LIMIT_GLOBAL: AtomicU64 = AtomicU64::new(0);
static LIMIT_PROC: AtomicU64 = AtomicU64::new(0);
static LIMIT_SESS: AtomicU64 = AtomicU64::new(0);
static LIMIT_TXN: AtomicU64 = AtomicU64::new(0);
static LIMIT_REQRES: AtomicU64 = AtomicU64::new(0);
/// What every variable of the process costs, counted only while a `proc`
/// or `global` limit is set (HAProxy's `proc_vars.size`).
static PROC_SIZE: AtomicI64 = AtomicI64::new(0);

/// The `tune.vars.*-max-size` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Limits {
    pub(crate) global: u64,
    pub(crate) proc: u64,
    pub(crate) sess: u64,
    pub(crate) txn: u64,
    pub(crate) reqres: u64,
}

/// Applies a configuration's limits.
pub(crate) fn set_limits(l: &Limits) {
    LIMIT_GLOBAL.store(l.global, Relaxed);
    LIMIT_PROC.store(l.proc, Relaxed);
    LIMIT_SESS.store(l.sess, Relaxed);
    LIMIT_TXN.store(l.txn, Relaxed);
    LIMIT_REQRES.store(l.reqres, Relaxed);
}

fn proc_counted() -> bool {
    LIMIT_PROC.load(Relaxed) != 0 || LIMIT_GLOBAL.load(Relaxed) != 0
}

/// The process-wide variables.
static PROC: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

/// The accounting of one store: the counters it and the scopes above it
/// add to, HAProxy's hierarchy (reqres within txn within sess within
/// proc).
struct Acct<'c> {
    reqres: Option<&'c AtomicU64>,
    txn: Option<&'c AtomicU64>,
    sess: Option<&'c AtomicU64>,
}

impl Acct<'_> {
    const PROC: Acct<'static> = Acct {
        reqres: None,
        txn: None,
        sess: None,
    };

    /// Reserves `n` bytes, or false when a limit would be exceeded.
    fn add(&self, n: u64) -> bool {
        let over = |c: Option<&AtomicU64>, limit: &AtomicU64| {
            let l = limit.load(Relaxed);
            c.is_some_and(|c| l != 0 && c.load(Relaxed) + n > l)
        };
        if over(self.reqres, &LIMIT_REQRES)
            || over(self.txn, &LIMIT_TXN)
            || over(self.sess, &LIMIT_SESS)
        {
            return false;
        }
        let total = PROC_SIZE.load(Relaxed).max(0) as u64;
        for limit in [&LIMIT_PROC, &LIMIT_GLOBAL] {
            let l = limit.load(Relaxed);
            if l != 0 && total + n > l {
                return false;
            }
        }
        self.diff(n as i64);
        true
    }

    fn diff(&self, n: i64) {
        for c in [self.reqres, self.txn, self.sess].into_iter().flatten() {
            // The streams of one HTTP/2 connection share the session.
            let _ = c.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_add_signed(n)));
        }
        if proc_counted() {
            PROC_SIZE.fetch_add(n, Relaxed);
        }
    }
}

/// HAProxy's `var_set`: stores `smp` in `name` of `store` under `conds`;
/// false when a condition or a limit stops it.
fn set_in(
    store: &mut Vec<Entry>,
    acct: &Acct<'_>,
    name: &str,
    smp: &Sample<'_>,
    conds: Conds,
    permanent: bool,
) -> bool {
    let i = match store.iter().position(|e| *e.name == *name) {
        Some(_) if conds.has(Conds::IFNOTEXISTS) => return false,
        Some(i) => i,
        None => {
            if conds.has(Conds::IFEXISTS) || !acct.add(VAR_SIZE) {
                return false;
            }
            store.push(Entry {
                name: name.into(),
                value: None,
                permanent,
            });
            store.len() - 1
        }
    };
    let e = &mut store[i];
    if (conds.has(Conds::IFSET) && e.value.is_none())
        || (conds.has(Conds::IFNOTSET) && e.value.is_some())
    {
        return false;
    }
    let text = matches!(smp, Sample::Str(_) | Sample::Bin(_));
    if conds.has(Conds::IFEMPTY) && !text {
        return false;
    }
    if let (Sample::Sint(new), Some(Sample::Sint(old))) = (smp, &e.value)
        && ((conds.has(Conds::IFGT) && old <= new) || (conds.has(Conds::IFLT) && old >= new))
    {
        return false;
    }
    if text {
        let empty = smp.bytes().is_some_and(<[u8]>::is_empty);
        if (conds.has(Conds::IFNOTEMPTY) && empty) || (conds.has(Conds::IFEMPTY) && !empty) {
            return false;
        }
    }
    if let Some(old) = &e.value {
        acct.diff(-(data_size(old) as i64));
    }
    let need = data_size(smp);
    if need > 0 && !acct.add(need) {
        // HAProxy keeps the variable as a boolean, which costs nothing.
        e.value = Some(Sample::Bool(true));
        return false;
    }
    e.value = Some(smp.clone().into_owned());
    true
}

/// HAProxy's `var_unset`: a permanent variable is emptied, others removed.
fn unset_in(store: &mut Vec<Entry>, acct: &Acct<'_>, name: &str) {
    let Some(i) = store.iter().position(|e| *e.name == *name) else {
        return;
    };
    let mut freed = store[i].value.take().map_or(0, |v| data_size(&v));
    if !store[i].permanent {
        store.remove(i);
        freed += VAR_SIZE;
    }
    acct.diff(-(freed as i64));
}

/// A connection's lock: never contended, and a panic elsewhere leaves the
/// variables usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn get_in(store: &[Entry], name: &str) -> Option<Sample<'static>> {
    store
        .iter()
        .find(|e| *e.name == *name)
        .and_then(|e| e.value.clone())
}

/// Sets a `proc` variable (the `global` section, the CLI, rules).
pub(crate) fn set_proc(name: &str, smp: &Sample<'_>, conds: Conds) -> bool {
    let mut store = PROC.write().unwrap_or_else(|e| e.into_inner());
    set_in(&mut store, &Acct::PROC, name, smp, conds, false)
}

/// Creates `proc.<name>` empty unless it exists: HAProxy does so for every
/// `proc` variable the configuration names (so `ifexists` holds for them).
pub(crate) fn declare_proc(name: &str) {
    let mut store = PROC.write().unwrap_or_else(|e| e.into_inner());
    if store.iter().any(|e| *e.name == *name) {
        return;
    }
    if Acct::PROC.add(VAR_SIZE) {
        store.push(Entry {
            name: name.into(),
            value: None,
            permanent: true,
        });
    }
}

pub(crate) fn get_proc(name: &str) -> Option<Sample<'static>> {
    let store = PROC.read().unwrap_or_else(|e| e.into_inner());
    get_in(&store, name)
}

pub(crate) fn unset_proc(name: &str) {
    let mut store = PROC.write().unwrap_or_else(|e| e.into_inner());
    unset_in(&mut store, &Acct::PROC, name);
}

/// The `sess` variables of one client connection.
#[derive(Debug, Default)]
pub(crate) struct SessVars {
    vars: Mutex<Vec<Entry>>,
    /// HAProxy's `sess->vars.size`: this scope's and the inner scopes'.
    size: AtomicU64,
}

impl SessVars {
    /// Whether the session has variables (a connection that has none can
    /// be parked without them).
    pub(crate) fn holds_any(&self) -> bool {
        !lock(&self.vars).is_empty()
    }
}

impl Drop for SessVars {
    fn drop(&mut self) {
        // The process-wide count forgets the connection's variables.
        let vars = self.vars.get_mut().unwrap_or_else(|e| e.into_inner());
        if !vars.is_empty() && proc_counted() {
            let bytes: u64 = vars
                .iter()
                .map(|e| VAR_SIZE + e.value.as_ref().map_or(0, data_size))
                .sum();
            PROC_SIZE.fetch_sub(bytes as i64, Relaxed);
        }
    }
}

/// Which of `req` and `res` is live (the values of `Vars::dir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Dir {
    Req,
    /// From the response on, its log line included (which sees the
    /// response's variables, as HAProxy's does).
    Res,
}

impl Dir {
    fn of(v: u8) -> Dir {
        match v {
            0 => Dir::Req,
            _ => Dir::Res,
        }
    }
}

/// The variables one request sees: its transaction's, its request's or
/// response's, and its connection's.
#[derive(Debug)]
pub(crate) struct Vars<'s> {
    sess: &'s SessVars,
    /// What `capture-req` and `capture-res` put in the frontend's
    /// capture slots, for the log line to take (see [`Vars::capture`]).
    captured: Mutex<Vec<Captured>>,
    captured_any: std::sync::atomic::AtomicBool,
    /// How many request and response capture slots the frontend has.
    slots: [u32; 2],
    txn: Mutex<Vec<Entry>>,
    txn_size: AtomicU64,
    reqres: Mutex<Vec<Entry>>,
    reqres_size: AtomicU64,
    /// A [`Dir`]: an atomic, not a lock, as each request sets it twice.
    dir: AtomicU8,
    /// The compression algorithm of the response, by its configuration
    /// name (`res.comp`, `res.comp_algo`).
    comp: OnceLock<&'static str>,
    /// The cache the response came from (`res.cache_hit`,
    /// `res.cache_name`).
    cache_hit: OnceLock<std::sync::Arc<str>>,
    /// What the stream's rules changed of its handling (priority,
    /// timeouts, retries): kept with its variables, which every place
    /// that runs rules or fetches already holds.
    pub(crate) tune: super::tune::StreamTune,
    /// The stream's place with the SPOE engines it talks to.
    pub(crate) spoe: super::tune::SpoeStream,
}

impl<'s> Vars<'s> {
    pub(crate) fn new(sess: &'s SessVars) -> Vars<'s> {
        Vars::with_slots(sess, [0, 0])
    }

    /// The variables of a request on a frontend with `slots` request and
    /// response capture slots. Inlined: made once per request, in place.
    #[inline(always)]
    pub(crate) fn with_slots(sess: &'s SessVars, slots: [usize; 2]) -> Vars<'s> {
        Vars {
            sess,
            captured: Mutex::new(Vec::new()),
            captured_any: std::sync::atomic::AtomicBool::new(false),
            slots: slots.map(|n| n as u32),
            txn: Mutex::new(Vec::new()),
            txn_size: AtomicU64::new(0),
            reqres: Mutex::new(Vec::new()),
            reqres_size: AtomicU64::new(0),
            dir: AtomicU8::new(Dir::Req as u8),
            comp: OnceLock::new(),
            cache_hit: OnceLock::new(),
            tune: super::tune::StreamTune::default(),
            spoe: super::tune::SpoeStream::default(),
        }
    }

    /// The response is compressed with the algorithm named `algo`.
    pub(crate) fn set_comp(&self, algo: &'static str) {
        let _ = self.comp.set(algo);
    }

    /// The name of the algorithm the response is compressed with.
    pub(crate) fn comp(&self) -> Option<&'static str> {
        self.comp.get().copied()
    }

    /// The response is served from the cache named `name`.
    pub(crate) fn set_cache_hit(&self, name: std::sync::Arc<str>) {
        let _ = self.cache_hit.set(name);
    }

    /// The cache the response is served from.
    pub(crate) fn cache_hit(&self) -> Option<&str> {
        self.cache_hit.get().map(|n| &**n)
    }

    /// The request's processing is over: its `req` variables go, the
    /// response's `res` scope begins.
    pub(crate) fn to_response(&self) {
        // Once: what was set for the response since (an SPOE agent's
        // `res` variables) stays.
        if self.dir.load(Relaxed) == Dir::Res as u8 {
            return;
        }
        self.prune_reqres();
        self.dir.store(Dir::Res as u8, Relaxed);
    }

    fn prune_reqres(&self) {
        // Every entry counts its size here: none, nothing to lock (the
        // common case, each request passes here three times).
        if self.reqres_size.load(Relaxed) == 0 {
            return;
        }
        let freed: u64 = self
            .reqres
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .map(|e| VAR_SIZE + e.value.as_ref().map_or(0, data_size))
            .sum();
        if freed > 0 {
            let acct = self.acct(Scope::Req);
            acct.diff(-(freed as i64));
        }
    }

    fn acct(&self, scope: Scope) -> Acct<'_> {
        let sess = Some(&self.sess.size);
        match scope {
            Scope::Req | Scope::Res => Acct {
                reqres: Some(&self.reqres_size),
                txn: Some(&self.txn_size),
                sess,
            },
            Scope::Txn => Acct {
                reqres: None,
                txn: Some(&self.txn_size),
                sess,
            },
            Scope::Sess => Acct {
                reqres: None,
                txn: None,
                sess,
            },
            Scope::Proc | Scope::Check => Acct::PROC,
        }
    }

    /// The store of `scope` at this point (None: not available here, as
    /// `res` during the request).
    fn store(&self, scope: Scope) -> Option<&Mutex<Vec<Entry>>> {
        match (scope, Dir::of(self.dir.load(Relaxed))) {
            (Scope::Sess, _) => Some(&self.sess.vars),
            (Scope::Txn, _) => Some(&self.txn),
            (Scope::Req, Dir::Req) | (Scope::Res, Dir::Res) => Some(&self.reqres),
            _ => None,
        }
    }

    pub(crate) fn set(&self, v: &VarName, smp: &Sample<'_>, conds: Conds) -> bool {
        if v.scope == Scope::Proc {
            return set_proc(&v.name, smp, conds);
        }
        let Some(store) = self.store(v.scope) else {
            return false;
        };
        set_in(
            &mut store.lock().unwrap_or_else(|e| e.into_inner()),
            &self.acct(v.scope),
            &v.name,
            smp,
            conds,
            false,
        )
    }

    pub(crate) fn unset(&self, v: &VarName) {
        if v.scope == Scope::Proc {
            return unset_proc(&v.name);
        }
        if let Some(store) = self.store(v.scope) {
            unset_in(
                &mut store.lock().unwrap_or_else(|e| e.into_inner()),
                &self.acct(v.scope),
                &v.name,
            );
        }
    }

    pub(crate) fn get(&self, v: &VarName) -> Option<Sample<'static>> {
        if v.scope == Scope::Proc {
            return get_proc(&v.name);
        }
        get_in(&lock(self.store(v.scope)?), &v.name)
    }
}

/// A value a converter put in a capture slot.
#[derive(Debug)]
struct Captured {
    res: bool,
    slot: usize,
    value: Vec<u8>,
}

impl Vars<'_> {
    /// `capture-req(<slot>)` (`res` false) or `capture-res(<slot>)`:
    /// `value` goes to the slot (cut to its length when stored); false
    /// when the frontend has no such slot, as HAProxy's converter then
    /// fails.
    pub(crate) fn capture(&self, res: bool, slot: i64, value: &[u8]) -> bool {
        let Ok(slot) = usize::try_from(slot) else {
            return false;
        };
        if slot >= self.slots[res as usize] as usize {
            return false;
        }
        let mut c = lock(&self.captured);
        c.retain(|e| (e.res, e.slot) != (res, slot));
        c.push(Captured {
            res,
            slot,
            value: value.to_vec(),
        });
        self.captured_any.store(true, Relaxed);
        true
    }

    /// Hands over what the converters captured: `store(res, slot,
    /// value)` for each (nothing to lock when none did).
    pub(crate) fn take_captures(&self, mut store: impl FnMut(bool, usize, Vec<u8>)) {
        if !self.captured_any.swap(false, Relaxed) {
            return;
        }
        for c in lock(&self.captured).drain(..) {
            store(c.res, c.slot, c.value);
        }
    }
}

impl Drop for Vars<'_> {
    fn drop(&mut self) {
        self.prune_reqres();
        if *self.txn_size.get_mut() == 0 {
            return;
        }
        let freed: u64 = self
            .txn
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .map(|e| VAR_SIZE + e.value.as_ref().map_or(0, data_size))
            .sum();
        if freed > 0 {
            let acct = Acct {
                reqres: None,
                txn: Some(&self.txn_size),
                sess: Some(&self.sess.size),
            };
            acct.diff(-(freed as i64));
        }
    }
}

/// Reads a variable where no request is (the CLI, the `global` section):
/// only `proc` exists there.
pub(crate) fn get_outside(v: &VarName) -> Option<Sample<'static>> {
    (v.scope == Scope::Proc)
        .then(|| get_proc(&v.name))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> VarName {
        VarName::parse(s).unwrap()
    }

    #[test]
    fn names_as_haproxy() {
        assert_eq!(name("txn.a.b_1").scope, Scope::Txn);
        assert_eq!(
            VarName::parse("proc.a-b)").unwrap_err(),
            "invalid syntax at char '-b)'"
        );
        assert!(
            VarName::parse("proc.")
                .unwrap_err()
                .starts_with("invalid variable name 'proc.'")
        );
        assert_eq!(
            VarName::parse("").unwrap_err(),
            "Empty variable name cannot be accepted"
        );
    }

    #[test]
    fn scopes_and_conditions() {
        let sess = SessVars::default();
        let v = Vars::new(&sess);
        let none = Conds::default();
        assert!(v.set(&name("txn.n"), &Sample::Sint(10), none));
        let mut gt = Conds::default();
        gt.add("ifgt").unwrap();
        assert!(v.set(&name("txn.n"), &Sample::Sint(3), gt));
        assert!(!v.set(&name("txn.n"), &Sample::Sint(5), gt));
        assert_eq!(v.get(&name("txn.n")), Some(Sample::Sint(3)));
        assert!(v.set(&name("req.r"), &Sample::str(&b"x"[..]), none));
        assert!(!v.set(&name("res.r"), &Sample::str(&b"x"[..]), none));
        v.to_response();
        assert_eq!(v.get(&name("req.r")), None);
        assert!(v.set(&name("res.r"), &Sample::str(&b"y"[..]), none));
        assert!(v.set(&name("sess.s"), &Sample::Sint(1), none));
        drop(v);
        let v = Vars::new(&sess);
        assert_eq!(v.get(&name("txn.n")), None);
        assert_eq!(v.get(&name("sess.s")), Some(Sample::Sint(1)));
        assert_eq!(
            Conds::default().add("ifbad").unwrap_err(),
            "unknown condition \"ifbad\""
        );
    }
}
