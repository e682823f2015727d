//! Patterns and matchers: how a sample is compared with a list of values
//! (`-m str|beg|end|sub|reg|dom|dir|len|int|ip|bin|bool|found`, HAProxy's
//! method matcher), with HAProxy 2.6's parsing of each pattern and its
//! messages. ACLs hold one [`PatternSet`] per `acl` line; a [`Map`] (the
//! `map_*` converters' file) keeps its keys in one.
//!
//! Lookups do not grow with the number of patterns for the matchers long
//! lists use: exact strings are hashed; `ip` networks are hashed by prefix
//! length (the longest matching prefix is found in at most one lookup per
//! length present, as HAProxy's tree finds it); `beg` prefixes are hashed
//! by length (one lookup per length present that fits the sample); `dom`
//! and `dir` words are hashed whole (one lookup per run of the sample's
//! delimited words). The other matchers scan their list in order.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use super::value::{Sample, SmpType};

/// The hash of the pattern indexes: one-shot xxh3 of each key (std's
/// SipHash, and xxh3's streaming state, cost several times more for the
/// short keys patterns are), seeded per process so that keys a rule adds
/// (`add-acl`) cannot be chosen to collide.
type Hashed<K> = HashMap<K, usize, Seeded>;

#[derive(Debug, Clone, Copy)]
struct Seeded(u64);

impl std::hash::BuildHasher for Seeded {
    type Hasher = OneShot;
    fn build_hasher(&self) -> OneShot {
        OneShot(self.0)
    }
}

/// Each write hashes its bytes at once, chained through the seed.
struct OneShot(u64);

impl std::hash::Hasher for OneShot {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    /// A slice's length (written before its bytes) only changes the seed
    /// the bytes are hashed with: one xxh3 a key, not two.
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

fn hashed<K>() -> Hashed<K> {
    seeded()
}

fn seeded<K, V>() -> HashMap<K, V, Seeded> {
    HashMap::with_hasher(Seeded(seed()))
}

/// The seed of the pattern indexes' hashes, one per process.
fn seed() -> u64 {
    static SEED: LazyLock<u64> = LazyLock::new(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    *SEED
}

/// A matching method (`-m <name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatchKind {
    /// The sample exists (patterns are not used).
    Found,
    /// The sample, as a boolean, is true (patterns are not used).
    Bool,
    Int,
    Ip,
    Bin,
    /// The length of the sample, against integer ranges.
    Len,
    Str,
    Beg,
    End,
    Sub,
    Reg,
    /// The pattern is one of the dot-, slash-, `?`- or colon-delimited
    /// parts of the sample.
    Dom,
    /// The pattern is one of the slash- or `?`-delimited parts.
    Dir,
    /// HAProxy's method matcher: a standard method equals only itself,
    /// whatever `-i` says; other tokens compare as strings.
    Meth,
}

impl MatchKind {
    /// `-m <name>`; `meth` is not one HAProxy lets a config name.
    pub(crate) fn from_name(name: &str) -> Option<MatchKind> {
        use MatchKind::*;
        Some(match name {
            "found" => Found,
            "bool" => Bool,
            "int" => Int,
            "ip" => Ip,
            "bin" => Bin,
            "len" => Len,
            "str" => Str,
            "beg" => Beg,
            "end" => End,
            "sub" => Sub,
            "reg" => Reg,
            "dom" => Dom,
            "dir" => Dir,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        use MatchKind::*;
        match self {
            Found => "found",
            Bool => "bool",
            Int => "int",
            Ip => "ip",
            Bin => "bin",
            Len => "len",
            Str => "str",
            Beg => "beg",
            End => "end",
            Sub => "sub",
            Reg => "reg",
            Dom => "dom",
            Dir => "dir",
            Meth => "meth",
        }
    }

    /// The type a sample is cast to before matching.
    pub(crate) fn input(self) -> SmpType {
        use MatchKind::*;
        match self {
            Found => SmpType::Any,
            Bool => SmpType::Bool,
            Int => SmpType::Sint,
            Ip => SmpType::Addr,
            Bin => SmpType::Bin,
            Meth => SmpType::Meth,
            Len | Str | Beg | End | Sub | Reg | Dom | Dir => SmpType::Str,
        }
    }

    /// The matcher a sample of type `t` gets when an ACL names none
    /// (binary samples, methods and variables get none: HAProxy wants a `-m`; its
    /// `method` ACL keyword has the method matcher of its own).
    pub(crate) fn default_for(t: SmpType) -> Option<MatchKind> {
        Some(match t {
            SmpType::Bool => MatchKind::Bool,
            SmpType::Sint => MatchKind::Int,
            SmpType::Addr | SmpType::Ipv4 | SmpType::Ipv6 => MatchKind::Ip,
            // A variable's type is known at run time only (`var()`).
            SmpType::Bin | SmpType::Meth | SmpType::Any => return None,
            SmpType::Str => MatchKind::Str,
        })
    }

    /// Integer patterns (ranges, `eq`/`ge`/... operators).
    pub(crate) fn takes_ints(self) -> bool {
        matches!(self, MatchKind::Int | MatchKind::Len)
    }
}

/// An address and prefix length (`10.0.0.0/8`; a bare address is /32 or /128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Net {
    pub(crate) addr: IpAddr,
    pub(crate) prefix: u8,
}

impl Net {
    /// An IP pattern: an address, or `address/prefix` (a prefix length or
    /// a dotted IPv4 mask).
    pub(crate) fn parse(text: &str) -> Option<Net> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                let n: u8 = p.parse().ok()?;
                if n > max {
                    return None;
                }
                n
            }
            Some(p) if addr.is_ipv4() => {
                // Dotted mask: must be contiguous ones.
                let mask: Ipv4Addr = p.parse().ok()?;
                let m = u32::from(mask);
                if m.leading_ones() + m.trailing_zeros() != 32 {
                    return None;
                }
                m.leading_ones() as u8
            }
            Some(_) => return None,
        };
        Some(Net { addr, prefix })
    }

    /// Whether `ip` is in this network. An IPv4 address also matches the
    /// IPv6 network of its mapped form, and an IPv4-mapped IPv6 address
    /// the IPv4 networks, as HAProxy compares them.
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let v4 = |ip: IpAddr| match ip {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(a) => a.to_ipv4_mapped(),
        };
        match self.addr {
            IpAddr::V4(net) => v4(ip).is_some_and(|a| {
                let m = mask32(self.prefix);
                u32::from(a) & m == u32::from(net) & m
            }),
            IpAddr::V6(net) => {
                let a: Ipv6Addr = match ip {
                    IpAddr::V6(a) => a,
                    IpAddr::V4(a) => a.to_ipv6_mapped(),
                };
                let m = mask128(self.prefix);
                u128::from(a) & m == u128::from(net) & m
            }
        }
    }
}

fn in_range(p: &Pat, n: i64) -> bool {
    matches!(p, Pat::Range(r) if r.lo <= n && n <= r.hi)
}

fn mask32(prefix: u8) -> u32 {
    match prefix.min(32) {
        0 => 0,
        n => u32::MAX << (32 - n),
    }
}

fn mask128(prefix: u8) -> u128 {
    match prefix.min(128) {
        0 => 0,
        n => u128::MAX << (128 - n),
    }
}

/// An integer range, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub(crate) lo: i64,
    pub(crate) hi: i64,
}

/// `eq`, `ge`, `gt`, `le`, `lt` before integer patterns: the operator
/// holds for every pattern after it until the next operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntOp {
    Eq,
    Ge,
    Gt,
    Le,
    Lt,
}

impl IntOp {
    pub(crate) fn from_word(w: &str) -> Option<IntOp> {
        Some(match w {
            "eq" => IntOp::Eq,
            "ge" => IntOp::Ge,
            "gt" => IntOp::Gt,
            "le" => IntOp::Le,
            "lt" => IntOp::Lt,
            _ => return None,
        })
    }
}

fn parse_int(t: &str) -> Option<i64> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// An integer pattern: `n`, `lo:hi`, `lo:`, `:hi`, under `op`.
fn parse_range(text: &str, op: IntOp) -> Result<Range, String> {
    if let Some((lo, hi)) = text.split_once(':') {
        let lo = if lo.is_empty() {
            Some(i64::MIN)
        } else {
            parse_int(lo)
        };
        let hi = if hi.is_empty() {
            Some(i64::MAX)
        } else {
            parse_int(hi)
        };
        return match (lo, hi) {
            (Some(lo), Some(hi)) if lo <= hi => Ok(Range { lo, hi }),
            _ => Err(format!("'{text}' is not a valid number range")),
        };
    }
    let Some(n) = parse_int(text) else {
        return Err(if op == IntOp::Eq {
            format!("'{text}' is not a number")
        } else {
            format!("'{text}' is neither a number nor a supported operator")
        });
    };
    Ok(match op {
        IntOp::Eq => Range { lo: n, hi: n },
        IntOp::Ge => Range {
            lo: n,
            hi: i64::MAX,
        },
        IntOp::Gt => Range {
            lo: n.saturating_add(1),
            hi: i64::MAX,
        },
        IntOp::Le => Range {
            lo: i64::MIN,
            hi: n,
        },
        IntOp::Lt => Range {
            lo: i64::MIN,
            hi: n.saturating_sub(1),
        },
    })
}

/// The standard methods HAProxy parses to an enum and compares exactly.
const KNOWN_METHODS: [&[u8]; 8] = [
    b"OPTIONS", b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"TRACE", b"CONNECT",
];

#[derive(Debug, Clone)]
enum Pat {
    Bytes(Box<[u8]>),
    Re(regex::bytes::Regex),
    Range(Range),
}

/// The patterns of one ACL line (or one map): the matcher, its flags and
/// the values, parsed once when the configuration is read.
///
/// Each pattern has a position, in the order they were added, which no
/// later change moves: a deleted one leaves a hole (`texts[at]` None)
/// until the holes are many ([`PatternSet::compacted`]), so that adding,
/// changing and deleting one is a change of the indexes for that one
/// pattern, never a rebuild.
#[derive(Debug, Clone)]
pub(crate) struct PatternSet {
    kind: MatchKind,
    icase: bool,
    /// `str`: the values, looked up by hash.
    exact: TextSlots,
    /// Every other pattern not in `index`, by position (a hole where one
    /// was deleted).
    list: Vec<Option<(Pat, usize)>>,
    /// The `ip`, `beg`, `dom` and `dir` patterns.
    index: Index,
    /// The patterns as written, by position: two sets are equal when the
    /// live ones are (a reload compares configurations).
    texts: Vec<Option<Box<str>>>,
    /// How many are live (not deleted).
    live: usize,
}

impl PartialEq for PatternSet {
    fn eq(&self, other: &PatternSet) -> bool {
        self.kind == other.kind && self.icase == other.icase && self.texts().eq(other.texts())
    }
}

/// A pattern parsed: its key in its matcher's index, or what its place
/// in the list holds.
struct Parsed<'t> {
    key: Option<Key<'t>>,
    pat: Option<Pat>,
}

/// The key of a pattern in the index of its matcher: a part of its text
/// (see [`TextKeys`]), or its network.
enum Key<'t> {
    Exact(&'t [u8]),
    Net(Net),
    Prefix(&'t [u8]),
    Word(&'t [u8]),
}

/// The keys of patterns read in bulk, by index table, waiting to go in
/// together ([`PatternSet::stage`]).
#[derive(Default)]
struct Pending {
    exact: Vec<usize>,
    v4: std::collections::BTreeMap<u8, Vec<(u32, usize)>>,
    v6: std::collections::BTreeMap<u8, Vec<(u128, usize)>>,
    prefixes: std::collections::BTreeMap<usize, Vec<usize>>,
    words: Vec<usize>,
}

impl PatternSet {
    pub(crate) fn new(kind: MatchKind, icase: bool) -> PatternSet {
        PatternSet {
            kind,
            icase,
            exact: TextSlots::new(),
            list: Vec::new(),
            index: Index::default(),
            texts: Vec::new(),
            live: 0,
        }
    }

    pub(crate) fn kind(&self) -> MatchKind {
        self.kind
    }

    /// The patterns as written, in order (`http_auth_group`'s group names).
    pub(crate) fn texts(&self) -> impl Iterator<Item = &str> {
        self.texts.iter().flatten().map(|t| &**t)
    }

    /// How many patterns there are.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The key `text` is indexed by, for the matchers with an index.
    fn key<'t>(&self, text: &'t str) -> Option<Key<'t>> {
        use MatchKind::*;
        Some(match self.kind {
            Ip => Key::Net(Net::parse(text)?),
            Beg => Key::Prefix(text.as_bytes()),
            Dom => Key::Word(strip_delims(text, DOM_DELIMS).as_bytes()),
            Dir => Key::Word(strip_delims(text, DIR_DELIMS).as_bytes()),
            Str => Key::Exact(text.as_bytes()),
            _ => return None,
        })
    }

    /// Adds one pattern after the others; the error is HAProxy's text for
    /// a bad one (nothing is added then).
    pub(crate) fn add(&mut self, text: &str, op: IntOp) -> Result<(), String> {
        let parsed = self.parse(text, op)?;
        self.insert(text.into(), parsed);
        Ok(())
    }

    /// A pattern as this matcher keeps it: its index key, or its place in
    /// the list; the error is HAProxy's text for a bad one.
    fn parse<'t>(&self, text: &'t str, op: IntOp) -> Result<Parsed<'t>, String> {
        use MatchKind::*;
        let pat = match self.kind {
            // HAProxy takes and ignores patterns here; methods compare
            // with the patterns as written (`texts`).
            Found | Bool | Meth => None,
            Int | Len => Some(Pat::Range(parse_range(text, op)?)),
            Ip | Beg | Dom | Dir => None,
            Bin => Some(Pat::Bytes(parse_hex(text)?.into())),
            Reg => {
                let re = regex::bytes::RegexBuilder::new(text)
                    .case_insensitive(self.icase)
                    .build()
                    .map_err(|e| regex_error(text, &e))?;
                Some(Pat::Re(re))
            }
            Str => None,
            End | Sub => {
                let b = if self.icase {
                    text.to_ascii_lowercase().into_bytes()
                } else {
                    text.as_bytes().to_vec()
                };
                Some(Pat::Bytes(b.into()))
            }
        };
        let key = self.key(text);
        if key.is_none() && self.kind == Ip {
            return Err(format!("'{text}' is not a valid IPv4 or IPv6 address"));
        }
        Ok(Parsed { key, pat })
    }

    /// Adds a pattern [`PatternSet::parse`] took, after the others.
    fn insert(&mut self, text: Box<str>, p: Parsed<'_>) {
        let at = self.texts.len();
        // The text first: the index reads keys from the texts.
        self.texts.push(Some(text));
        self.live += 1;
        if let Some(key) = p.key {
            self.index_key(key, at, true);
        }
        if let Some(pat) = p.pat {
            self.list.push(Some((pat, at)));
        }
    }

    /// Adds a parsed pattern after the others, its key left in `pending`
    /// until [`PatternSet::index_pending`] puts the keys of a whole file
    /// in their tables at once, each table given room for all of them
    /// first (no growing, and rehashing, on the way).
    fn stage(&mut self, text: Box<str>, p: Parsed<'_>, pending: &mut Pending) {
        let at = self.texts.len();
        match p.key {
            Some(Key::Exact(_)) => pending.exact.push(at),
            Some(Key::Net(n)) => match n.addr {
                IpAddr::V4(a) => (pending.v4.entry(n.prefix).or_default())
                    .push((u32::from(a) & mask32(n.prefix), at)),
                IpAddr::V6(a) => (pending.v6.entry(n.prefix).or_default())
                    .push((u128::from(a) & mask128(n.prefix), at)),
            },
            Some(Key::Prefix(b)) => pending.prefixes.entry(b.len()).or_default().push(at),
            Some(Key::Word(w)) => {
                self.index.word_count += 1;
                if !w.is_empty() {
                    pending.words.push(at);
                }
            }
            None => {}
        }
        if let Some(pat) = p.pat {
            self.list.push(Some((pat, at)));
        }
        self.texts.push(Some(text));
        self.live += 1;
    }

    /// Puts the keys [`PatternSet::stage`] left in their tables.
    fn index_pending(&mut self, pending: Pending) {
        let keys = TextKeys::new(&self.texts, self.kind, self.icase);
        self.exact.insert_all(keys, pending.exact);
        self.index.words.insert_all(keys, pending.words);
        for (len, keys) in pending.v4 {
            self.index
                .v4
                .entry(len)
                .or_insert_with(Slots::new)
                .insert_all(keys);
        }
        for (len, keys) in pending.v6 {
            self.index
                .v6
                .entry(len)
                .or_insert_with(Slots::new)
                .insert_all(keys);
        }
        for (len, ats) in pending.prefixes {
            (self
                .index
                .prefixes
                .entry(len)
                .or_insert_with(TextSlots::new))
            .insert_all(keys, ats);
        }
    }

    /// Adds (`add`) or removes the pattern at `at` under `key`.
    /// The text at `at` is there while this runs (the index reads the
    /// keys it holds from the texts).
    fn index_key(&mut self, key: Key<'_>, at: usize, add: bool) {
        let keys = TextKeys::new(&self.texts, self.kind, self.icase);
        match key {
            Key::Exact(k) => self.exact.set(keys, k, at, add),
            Key::Net(n) => self.index.set_net(n, at, add),
            Key::Prefix(p) => self.index.set_prefix(keys, p, at, add),
            Key::Word(w) => self.index.set_word(keys, w, at, add),
        }
    }

    /// The positions of the live patterns written `text`, in order: those
    /// its index key finds, for an indexed matcher, else a scan.
    pub(crate) fn positions(&self, text: &str) -> Vec<usize> {
        let is = |at: &usize| self.texts.get(*at).and_then(|t| t.as_deref()) == Some(text);
        let keys = TextKeys::new(&self.texts, self.kind, self.icase);
        let found: Vec<usize> = match self.key(text) {
            Some(Key::Exact(k)) => self.exact.all(keys, k),
            Some(Key::Net(n)) => self.index.nets(n),
            Some(Key::Prefix(p)) => self.index.prefixes_of(keys, p),
            Some(Key::Word(w)) if !w.is_empty() => self.index.words.all(keys, w),
            // Delimiters only: never indexed (they never match).
            Some(Key::Word(_)) | None => {
                return (self.texts.iter().enumerate())
                    .filter(|(_, t)| t.as_deref() == Some(text))
                    .map(|(i, _)| i)
                    .collect();
            }
        };
        found.into_iter().filter(is).collect()
    }

    /// Deletes the pattern at `at` (nothing when there is none there).
    pub(crate) fn remove(&mut self, at: usize) {
        // Out of the index while its text is there (the index reads keys
        // from the texts), then taken out.
        let Some(text) = self.texts.get(at).cloned().flatten() else {
            return;
        };
        self.live -= 1;
        match self.key(&text) {
            Some(key) => self.index_key(key, at, false),
            None => {
                // The list is in positions' order.
                if let Ok(i) = self
                    .list
                    .binary_search_by_key(&at, |e| e.as_ref().map_or(usize::MAX, |e| e.1))
                    .or_else(|_| {
                        self.list
                            .iter()
                            .position(|e| e.as_ref().is_some_and(|e| e.1 == at))
                            .ok_or(())
                    })
                {
                    self.list[i] = None;
                }
            }
        }
        self.texts[at] = None;
    }

    /// Whether the holes deleted patterns left are worth closing (more
    /// than the live patterns, and a good few).
    fn sparse(&self) -> bool {
        let holes = self.texts.len() - self.live;
        holes > 1024 && holes > self.live
    }

    /// The set without its holes: the live patterns, in order, at new
    /// positions (`moved[old] = new`), parsed as they were (an integer
    /// pattern keeps the operator it was read under).
    fn compacted(&self) -> (PatternSet, Vec<usize>) {
        let mut out = PatternSet::new(self.kind, self.icase);
        let mut moved = vec![usize::MAX; self.texts.len()];
        for (i, t) in self.texts.iter().enumerate() {
            if let Some(t) = t {
                moved[i] = out.texts.len();
                out.texts.push(Some(t.clone()));
                out.live += 1;
                if let Some(key) = self.key(t) {
                    out.index_key(key, moved[i], true);
                }
            }
        }
        out.list = (self.list.iter().flatten())
            .map(|(p, at)| Some((p.clone(), moved[*at])))
            .collect();
        (out, moved)
    }

    pub(crate) fn icase(&self) -> bool {
        self.icase
    }

    /// Room for `n` more patterns.
    fn reserve(&mut self, n: usize) {
        self.texts.reserve(n);
        let keys = TextKeys::new(&self.texts, self.kind, self.icase);
        match self.kind {
            MatchKind::Str => self.exact.reserve(keys, n),
            MatchKind::Dom | MatchKind::Dir => self.index.words.reserve(keys, n),
            MatchKind::Ip | MatchKind::Beg => {}
            _ => self.list.reserve(n),
        }
    }

    /// Whether sample `s` (not yet cast) matches one pattern.
    pub(crate) fn matches(&self, s: Sample<'_>) -> bool {
        self.find(s, false).is_some()
    }

    /// The first regex (in order) that matches `v`, with its groups.
    fn find_groups<'v>(&self, v: &'v [u8]) -> Option<(usize, regex::bytes::Captures<'v>)> {
        self.list.iter().flatten().find_map(|(p, at)| match p {
            Pat::Re(re) => re.captures(v).map(|c| (*at, c)),
            _ => None,
        })
    }

    /// The position of a pattern sample `s` matches: the first in order,
    /// or with `best` (a map lookup) the longest prefix for `ip` and
    /// `beg`, as HAProxy's trees give.
    pub(crate) fn find(&self, s: Sample<'_>, _best: bool) -> Option<usize> {
        use MatchKind::*;
        if self.kind == Found {
            return Some(0);
        }
        let s = s.cast(self.kind.input())?;
        let first =
            |f: &dyn Fn(&Pat) -> bool| self.list.iter().flatten().find(|(p, _)| f(p)).map(|p| p.1);
        let keys = || TextKeys::new(&self.texts, self.kind, self.icase);
        match (self.kind, s) {
            (Bool, Sample::Bool(b)) => b.then_some(0),
            (Int, Sample::Sint(n)) => first(&|p| in_range(p, n)),
            (Len, Sample::Str(v)) => first(&|p| in_range(p, v.len() as i64)),
            (Ip, Sample::Ipv4(a)) => self.index.find_net(IpAddr::V4(a)),
            (Ip, Sample::Ipv6(a)) => self.index.find_net(IpAddr::V6(a)),
            (Bin, Sample::Bin(v)) => first(&|p| matches!(p, Pat::Bytes(b) if **b == *v)),
            (Reg, Sample::Str(v)) => first(&|p| matches!(p, Pat::Re(re) if re.is_match(&v))),
            (Meth, Sample::Meth(v)) => self.match_method(&v),
            (Str, Sample::Str(v)) => self.exact.get(keys(), &v),
            // The longest prefix (any match would do without `best`).
            (Beg, Sample::Str(v)) => self.index.find_prefix(keys(), &self.lowered(&v)),
            // The first word in order, as a scan finds it.
            (Dom, Sample::Str(v)) => self.index.find_word(keys(), &self.lowered(&v), DOM_DELIMS),
            (Dir, Sample::Str(v)) => self.index.find_word(keys(), &self.lowered(&v), DIR_DELIMS),
            (kind, Sample::Str(v)) => {
                first(&|p| matches!(p, Pat::Bytes(b) if self.match_text(kind, &v, b)))
            }
            _ => None,
        }
    }

    /// The sample as the patterns are kept (lowered under `-i`).
    fn lowered<'v>(&self, v: &'v [u8]) -> std::borrow::Cow<'v, [u8]> {
        if self.icase && v.iter().any(u8::is_ascii_uppercase) {
            std::borrow::Cow::Owned(v.to_ascii_lowercase())
        } else {
            std::borrow::Cow::Borrowed(v)
        }
    }

    fn match_method(&self, v: &[u8]) -> Option<usize> {
        let known = |m: &[u8]| KNOWN_METHODS.contains(&m);
        self.texts.iter().position(|t| {
            let Some(t) = t else { return false };
            let t = t.as_bytes();
            if known(v) || known(t) {
                v == t
            } else {
                self.eq(v, t)
            }
        })
    }

    fn eq(&self, a: &[u8], pat: &[u8]) -> bool {
        if self.icase {
            a.eq_ignore_ascii_case(pat)
        } else {
            a == pat
        }
    }

    fn match_text(&self, kind: MatchKind, v: &[u8], pat: &[u8]) -> bool {
        match kind {
            MatchKind::Str => self.eq(v, pat),
            MatchKind::Beg => v.len() >= pat.len() && self.eq(&v[..pat.len()], pat),
            MatchKind::End => v.len() >= pat.len() && self.eq(&v[v.len() - pat.len()..], pat),
            MatchKind::Sub => pat.is_empty() || v.windows(pat.len()).any(|w| self.eq(w, pat)),
            MatchKind::Dom => self.match_word(v, pat, DOM_DELIMS),
            MatchKind::Dir => self.match_word(v, pat, DIR_DELIMS),
            _ => false,
        }
    }

    /// The pattern (without its leading and trailing delimiters) appears
    /// in `v` between delimiters or the ends.
    fn match_word(&self, v: &[u8], pat: &[u8], delims: &[u8]) -> bool {
        let is_delim = |b: &u8| delims.contains(b);
        let start = pat.iter().take_while(|b| is_delim(b)).count();
        let pat = &pat[start..];
        let end = pat.len() - pat.iter().rev().take_while(|b| is_delim(b)).count();
        let pat = &pat[..end];
        if pat.is_empty() || pat.len() > v.len() {
            return false;
        }
        (0..=v.len() - pat.len()).any(|i| {
            (i == 0 || is_delim(&v[i - 1]))
                && self.eq(&v[i..i + pat.len()], pat)
                && v.get(i + pat.len()).is_none_or(is_delim)
        })
    }
}

/// The delimiters of `dom` and `dir` words.
const DOM_DELIMS: &[u8] = b"/?.:";
const DIR_DELIMS: &[u8] = b"/?";

/// A `dom` or `dir` pattern without the delimiters around it (one that is
/// nothing else never matches).
fn strip_delims<'t>(pat: &'t str, delims: &[u8]) -> &'t str {
    pat.trim_matches(|c: char| c.is_ascii() && delims.contains(&(c as u8)))
}

/// Positions by key, for an index: the first (smallest) one, which a
/// lookup wants, and every one where a key has several (patterns that
/// index alike: `A` and `a` under `-i`, `10.0.0.1` and `10.0.0.1/32`, the
/// same text twice), which deletions need. A key of one pattern, the
/// common case, costs one table entry.
#[derive(Debug, Clone)]
struct Slots<K> {
    first: Hashed<K>,
    more: HashMap<K, Vec<usize>, Seeded>,
}

impl<K: std::hash::Hash + Eq + Clone> Slots<K> {
    fn new() -> Slots<K> {
        Slots {
            first: hashed(),
            more: seeded(),
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// Adds (`add`) or removes position `at` under `k`; the first of a
    /// key is its smallest position.
    fn set(&mut self, k: K, at: usize, add: bool) {
        use std::collections::hash_map::Entry;
        if add {
            match self.first.entry(k) {
                Entry::Vacant(e) => {
                    e.insert(at);
                }
                Entry::Occupied(mut e) => {
                    let first = *e.get();
                    let all = self
                        .more
                        .entry(e.key().clone())
                        .or_insert_with(|| vec![first]);
                    let i = all.partition_point(|&p| p < at);
                    all.insert(i, at);
                    if at < first {
                        *e.get_mut() = at;
                    }
                }
            }
            return;
        }
        match self.more.get_mut(&k) {
            Some(all) => {
                all.retain(|&p| p != at);
                let first = all.first().copied();
                if all.len() < 2 {
                    self.more.remove(&k);
                }
                match first {
                    Some(p) => {
                        self.first.insert(k, p);
                    }
                    None => {
                        self.first.remove(&k);
                    }
                }
            }
            None => {
                if self.first.get(&k) == Some(&at) {
                    self.first.remove(&k);
                }
            }
        }
    }

    fn get(&self, k: &K) -> Option<usize> {
        self.first.get(k).copied()
    }

    /// Adds many keys at once, into a table given room for them first.
    fn insert_all(&mut self, all: Vec<(K, usize)>) {
        self.first.reserve(all.len());
        for (k, at) in all {
            self.set(k, at, true);
        }
    }

    /// Every position under `k`, in order.
    fn all(&self, k: &K) -> Vec<usize> {
        match self.more.get(k) {
            Some(all) => all.clone(),
            None => self.get(k).into_iter().collect(),
        }
    }
}

/// How the texts of a set give the keys of its hashed indexes (`str`,
/// `beg`, `dom`, `dir`): a key is the text, without the delimiters around
/// it for `dom` and `dir`, compared and hashed without case under `-i`.
/// The tables ([`TextSlots`]) hold positions only and read the keys from
/// the texts: no key is copied (a million-entry map would allocate a
/// million of them, and its table would be three times the size).
#[derive(Clone, Copy)]
struct TextKeys<'t> {
    texts: &'t [Option<Box<str>>],
    delims: &'static [u8],
    icase: bool,
}

impl<'t> TextKeys<'t> {
    fn new(texts: &'t [Option<Box<str>>], kind: MatchKind, icase: bool) -> TextKeys<'t> {
        let delims: &[u8] = match kind {
            MatchKind::Dom => DOM_DELIMS,
            MatchKind::Dir => DIR_DELIMS,
            _ => b"",
        };
        TextKeys {
            texts,
            delims,
            icase,
        }
    }

    /// The key of the pattern at `at` (empty where there is none).
    fn of(&self, at: usize) -> &'t [u8] {
        let t = self.texts.get(at).and_then(|t| t.as_deref()).unwrap_or("");
        if self.delims.is_empty() {
            t.as_bytes()
        } else {
            strip_delims(t, self.delims).as_bytes()
        }
    }

    /// Whether the key of the pattern at `at` is `k`.
    fn eq(&self, at: usize, k: &[u8]) -> bool {
        let p = self.of(at);
        if self.icase {
            p.eq_ignore_ascii_case(k)
        } else {
            p == k
        }
    }

    /// The hash of key `k` (of its lowered bytes under `-i`): one-shot
    /// xxh3, seeded per process (see [`Hashed`]).
    fn hash(&self, k: &[u8]) -> u64 {
        use xxhash_rust::xxh3::xxh3_64_with_seed;
        if !self.icase || !k.iter().any(u8::is_ascii_uppercase) {
            return xxh3_64_with_seed(k, seed());
        }
        let mut buf = [0u8; 128];
        match buf.get_mut(..k.len()) {
            Some(b) => {
                b.copy_from_slice(k);
                b.make_ascii_lowercase();
                xxh3_64_with_seed(b, seed())
            }
            None => xxh3_64_with_seed(&k.to_ascii_lowercase(), seed()),
        }
    }

    fn hash_at(&self, at: usize) -> u64 {
        self.hash(self.of(at))
    }

    /// `k` as the keys of [`TextSlots::more`] are (lowered under `-i`).
    fn owned<'k>(&self, k: &'k [u8]) -> std::borrow::Cow<'k, [u8]> {
        if self.icase {
            std::borrow::Cow::Owned(k.to_ascii_lowercase())
        } else {
            std::borrow::Cow::Borrowed(k)
        }
    }
}

/// [`Slots`] for keys read from the texts ([`TextKeys`]): the table holds
/// the first position of each key; the rare keys of several patterns
/// also have all of theirs, by key, in `more`.
#[derive(Debug, Clone)]
struct TextSlots {
    first: hashbrown::HashTable<usize>,
    /// Lowered under `-i`.
    more: HashMap<Box<[u8]>, Vec<usize>, Seeded>,
}

impl TextSlots {
    fn new() -> TextSlots {
        TextSlots {
            first: hashbrown::HashTable::new(),
            more: seeded(),
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    fn reserve(&mut self, keys: TextKeys<'_>, n: usize) {
        self.first.reserve(n, |&p| keys.hash_at(p));
    }

    /// Adds (`add`) or removes position `at` under key `k`; the first of
    /// a key is its smallest position. The text at `at` is there.
    fn set(&mut self, keys: TextKeys<'_>, k: &[u8], at: usize, add: bool) {
        use hashbrown::hash_table::Entry;
        let h = keys.hash(k);
        if add {
            match (self.first).entry(h, |&p| keys.eq(p, k), |&p| keys.hash_at(p)) {
                Entry::Vacant(e) => {
                    e.insert(at);
                }
                Entry::Occupied(mut e) => {
                    let first = *e.get();
                    let all = (self.more)
                        .entry(keys.owned(k).into_owned().into())
                        .or_insert_with(|| vec![first]);
                    let i = all.partition_point(|&p| p < at);
                    all.insert(i, at);
                    if at < first {
                        *e.get_mut() = at;
                    }
                }
            }
            return;
        }
        let Ok(mut e) = self.first.find_entry(h, |&p| keys.eq(p, k)) else {
            return;
        };
        let owned = keys.owned(k);
        match self.more.get_mut(&*owned) {
            Some(all) => {
                all.retain(|&p| p != at);
                let first = all.first().copied();
                if all.len() < 2 {
                    self.more.remove(&*owned);
                }
                match first {
                    Some(p) => *e.get_mut() = p,
                    None => {
                        e.remove();
                    }
                }
            }
            None => {
                if *e.get() == at {
                    e.remove();
                }
            }
        }
    }

    /// The first position of key `k`.
    fn get(&self, keys: TextKeys<'_>, k: &[u8]) -> Option<usize> {
        self.first.find(keys.hash(k), |&p| keys.eq(p, k)).copied()
    }

    /// Adds the patterns at `ats` (their texts there), into a table given
    /// room for all of them first.
    fn insert_all(&mut self, keys: TextKeys<'_>, ats: Vec<usize>) {
        self.reserve(keys, ats.len());
        for at in ats {
            self.set(keys, keys.of(at), at, true);
        }
    }

    /// Every position under `k`, in order.
    fn all(&self, keys: TextKeys<'_>, k: &[u8]) -> Vec<usize> {
        match self.more.get(&*keys.owned(k)) {
            Some(all) => all.clone(),
            None => self.get(keys, k).into_iter().collect(),
        }
    }

    /// The first position of each key.
    fn firsts(&self) -> impl Iterator<Item = usize> + '_ {
        self.first.iter().copied()
    }
}

/// The indexes of the matchers long lists use; each keeps a pattern's
/// positions by its key (the first of equal patterns wins, as in order).
#[derive(Debug, Clone)]
struct Index {
    /// `ip`: networks by prefix length, then by masked address.
    v4: std::collections::BTreeMap<u8, Slots<u32>>,
    v6: std::collections::BTreeMap<u8, Slots<u128>>,
    /// `beg`: prefixes by length.
    prefixes: std::collections::BTreeMap<usize, TextSlots>,
    /// `dom`, `dir`: words (stripped of the delimiters around them).
    words: TextSlots,
    /// How many `dom`/`dir` patterns there are (those of delimiters only,
    /// which never match, included): a sample with more runs of words
    /// than this is cheaper to compare with each pattern.
    word_count: usize,
}

impl Default for Index {
    fn default() -> Index {
        Index {
            v4: Default::default(),
            v6: Default::default(),
            prefixes: Default::default(),
            words: TextSlots::new(),
            word_count: 0,
        }
    }
}

impl Index {
    fn set_net(&mut self, n: Net, at: usize, add: bool) {
        match n.addr {
            IpAddr::V4(a) => {
                let key = u32::from(a) & mask32(n.prefix);
                let s = self.v4.entry(n.prefix).or_insert_with(Slots::new);
                s.set(key, at, add);
                if s.is_empty() {
                    self.v4.remove(&n.prefix);
                }
            }
            IpAddr::V6(a) => {
                let key = u128::from(a) & mask128(n.prefix);
                let s = self.v6.entry(n.prefix).or_insert_with(Slots::new);
                s.set(key, at, add);
                if s.is_empty() {
                    self.v6.remove(&n.prefix);
                }
            }
        }
    }

    /// The positions of the networks equal to `n`.
    fn nets(&self, n: Net) -> Vec<usize> {
        match n.addr {
            IpAddr::V4(a) => (self.v4.get(&n.prefix))
                .map_or_else(Vec::new, |s| s.all(&(u32::from(a) & mask32(n.prefix)))),
            IpAddr::V6(a) => (self.v6.get(&n.prefix))
                .map_or_else(Vec::new, |s| s.all(&(u128::from(a) & mask128(n.prefix)))),
        }
    }

    /// The longest network holding `ip` (an IPv4 address also by its
    /// mapped IPv6 form, an IPv4-mapped one by its IPv4 form, as
    /// `Net::contains` compares them); among equal prefix lengths, the
    /// first added.
    fn find_net(&self, ip: IpAddr) -> Option<usize> {
        let (v4, v6) = match ip {
            IpAddr::V4(a) => (Some(a), a.to_ipv6_mapped()),
            IpAddr::V6(a) => (a.to_ipv4_mapped(), a),
        };
        let in4 = v4.and_then(|a| {
            let a = u32::from(a);
            (self.v4.iter().rev())
                .find_map(|(&len, nets)| nets.get(&(a & mask32(len))).map(|at| (len, at)))
        });
        let a6 = u128::from(v6);
        let in6 = (self.v6.iter().rev())
            .find_map(|(&len, nets)| nets.get(&(a6 & mask128(len))).map(|at| (len, at)));
        // The prefix lengths compare as numbers across the two families,
        // as the list they replace compared them.
        match (in4, in6) {
            (Some(a), Some(b)) => Some(if (a.0, usize::MAX - a.1) >= (b.0, usize::MAX - b.1) {
                a.1
            } else {
                b.1
            }),
            (a, b) => a.or(b).map(|h| h.1),
        }
    }

    fn set_prefix(&mut self, keys: TextKeys<'_>, p: &[u8], at: usize, add: bool) {
        let len = p.len();
        let s = self.prefixes.entry(len).or_insert_with(TextSlots::new);
        s.set(keys, p, at, add);
        if s.is_empty() {
            self.prefixes.remove(&len);
        }
    }

    fn prefixes_of(&self, keys: TextKeys<'_>, p: &[u8]) -> Vec<usize> {
        (self.prefixes.get(&p.len())).map_or_else(Vec::new, |s| s.all(keys, p))
    }

    /// The longest pattern `v` starts with.
    fn find_prefix(&self, keys: TextKeys<'_>, v: &[u8]) -> Option<usize> {
        (self.prefixes.range(..=v.len()).rev()).find_map(|(&len, ps)| ps.get(keys, &v[..len]))
    }

    fn set_word(&mut self, keys: TextKeys<'_>, w: &[u8], at: usize, add: bool) {
        if add {
            self.word_count += 1;
        } else {
            self.word_count -= 1;
        }
        if !w.is_empty() {
            self.words.set(keys, w, at, add);
        }
    }

    /// The first pattern (in order) that is a run of `v`'s delimited
    /// words: every run is looked up, the smallest position wins.
    fn find_word(&self, keys: TextKeys<'_>, v: &[u8], delims: &[u8]) -> Option<usize> {
        if self.words.is_empty() {
            return None;
        }
        let is_delim = |b: &u8| delims.contains(b);
        let starts =
            std::iter::once(0).chain((0..v.len()).filter(|&j| is_delim(&v[j])).map(|j| j + 1));
        let ends: Vec<usize> = ((0..v.len()).filter(|&j| is_delim(&v[j])))
            .chain(std::iter::once(v.len()))
            .collect();
        // A sample of many words against few patterns: compare each.
        if ends.len() * ends.len() > 2 * self.word_count + 64 {
            return (self.words.firsts())
                .filter(|&at| contains_word(v, keys.of(at), delims, keys.icase))
                .min();
        }
        let mut best: Option<usize> = None;
        for s in starts {
            for &e in ends.iter().filter(|&&e| e > s) {
                if let Some(at) = self.words.get(keys, &v[s..e]) {
                    best = Some(best.map_or(at, |b| b.min(at)));
                }
            }
        }
        best
    }
}

/// Whether `w` (without delimiters around it) is a run of `v`'s words.
fn contains_word(v: &[u8], w: &[u8], delims: &[u8], icase: bool) -> bool {
    let is_delim = |b: &u8| delims.contains(b);
    let eq = |a: &[u8]| {
        if icase {
            a.eq_ignore_ascii_case(w)
        } else {
            a == w
        }
    };
    w.len() <= v.len()
        && (0..=v.len() - w.len()).any(|i| {
            (i == 0 || is_delim(&v[i - 1]))
                && eq(&v[i..i + w.len()])
                && v.get(i + w.len()).is_none_or(is_delim)
        })
}

/// Calls `f` on each line of pattern or map file `path` that holds
/// something (its number, its text without surrounding blanks), blank
/// lines and `#` comments left out.
/// `f` is also told how many lines the file has, so that what it fills
/// can be given room for all of them at its first line (no growing, and
/// rehashing, on the way).
fn each_line(
    path: &str,
    mut f: impl FnMut(usize, usize, &str) -> Result<(), String>,
) -> Result<(), String> {
    let bytes = std::fs::read(crate::sys::cfgdir::resolve(path))
        .map_err(|_| format!("failed to open pattern file <{path}>"))?;
    let lines = memchr::memchr_iter(b'\n', &bytes).count() + 1;
    let text = String::from_utf8_lossy(&bytes);
    for (i, l) in text.lines().enumerate() {
        let l = l.trim_matches([' ', '\t', '\r']);
        if !l.is_empty() && !l.starts_with('#') {
            f(lines, i + 1, l)?;
        }
    }
    Ok(())
}

/// A pattern list the CLI can change while requests read it: the keys
/// (in a [`PatternSet`] of one matcher) and, for a map file of a `map_*`
/// converter, the values typed as its output and the default for keys it
/// lacks. An ACL's patterns (those of one `-f` file, or those written on
/// its line) are one too, without values.
///
/// The CLI (`add map`, `set map`, `del map`, `clear map` and the `acl`
/// ones) and the `set-map`/`del-map`/`add-acl`/`del-acl` actions change
/// the entries while requests look keys up, and no edit copies them:
/// there are two copies of the entries once one was edited. Lookups load
/// the current one (`data`) without a lock; a writer changes the other
/// (`writer`, which readers never see) in place, swaps it in, waits for
/// the lookups still reading the old one to end (a lookup lasts well
/// under a microsecond) and makes the same change to it, which becomes
/// the spare. An edit costs what the change costs its indexes: a hash
/// entry for the hashed matchers, a scan of the list for the others.
/// The spare is made, by a copy, at the first edit only; a map never
/// edited has one copy.
#[derive(Debug)]
pub(crate) struct Map {
    /// The file read, or "" for patterns written on an ACL line.
    path: String,
    kind: MatchKind,
    out: SmpType,
    icase: bool,
    /// Two columns, key and value (a map), or one (an ACL's patterns).
    values: bool,
    data: arc_swap::ArcSwap<MapData>,
    /// The spare copy (None until the first edit); the lock serialises
    /// writers (two CLI sessions changing one map).
    writer: std::sync::Mutex<Option<std::sync::Arc<MapData>>>,
    default: Option<Sample<'static>>,
    /// `map_regm`: a value's `\<n>` stand for the groups of the regex
    /// that matched.
    regm: bool,
}

/// One copy of a map's entries.
#[derive(Debug, Clone, PartialEq)]
struct MapData {
    keys: PatternSet,
    /// The values as written (the CLI shows them so), by the keys'
    /// positions; None for an ACL's pattern (which keeps one only when
    /// `add map` gave it one).
    value_texts: Vec<Option<Box<str>>>,
    /// The values typed, by the keys' positions, for an output other than
    /// a string (a string is its text).
    typed: Vec<Sample<'static>>,
    /// Each entry's id, by position (increasing with it): the CLI names
    /// an entry by it (`show map` shows it, `set map` and `del map` take
    /// `#<id>`), and no change of the others renumbers it.
    ids: Vec<u64>,
    next_id: u64,
    out: SmpType,
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.path == other.path
            && self.kind == other.kind
            && self.out == other.out
            && self.icase == other.icase
            && self.values == other.values
            && **self.data.load() == **other.data.load()
            && self.default == other.default
            && self.regm == other.regm
    }
}

/// A map value as output type `out` (`Str`, `Sint` or `Addr`).
fn map_value(text: &str, out: SmpType) -> Option<Sample<'static>> {
    match out {
        SmpType::Sint => parse_int(text).map(Sample::Sint),
        SmpType::Addr => match text.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) => Some(Sample::Ipv4(a)),
            IpAddr::V6(a) => Some(Sample::Ipv6(a)),
        },
        _ => Some(Sample::Str(std::borrow::Cow::Owned(
            text.as_bytes().to_vec(),
        ))),
    }
}

/// The entries a CLI command names: by key (every entry written so), or
/// by id (`#<id>`: that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry<'k> {
    Key(&'k str),
    Id(u64),
}

/// Why the CLI could not change a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MapEditError {
    /// The key is not a pattern of the map's matcher (HAProxy's reason).
    Key(String),
    /// The value is not of the converter's output type.
    Value(String),
    /// No entry has that key.
    NotFound,
}

impl MapData {
    fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
        self.value_texts.reserve(n);
        self.ids.reserve(n);
        if self.out != SmpType::Str {
            self.typed.reserve(n);
        }
    }

    fn empty(kind: MatchKind, icase: bool, out: SmpType) -> MapData {
        MapData {
            keys: PatternSet::new(kind, icase),
            value_texts: Vec::new(),
            typed: Vec::new(),
            ids: Vec::new(),
            next_id: 0,
            out,
        }
    }

    /// A new entry after the others; `value` None for an ACL's pattern.
    /// Nothing changes when the key or the value does not parse.
    fn push(&mut self, key: &str, value: Option<&str>) -> Result<(), MapEditError> {
        let typed = match value {
            Some(v) if self.out != SmpType::Str => {
                Some(map_value(v, self.out).ok_or_else(|| MapEditError::Value(v.to_string()))?)
            }
            _ => None,
        };
        self.keys.add(key, IntOp::Eq).map_err(MapEditError::Key)?;
        self.value_texts.push(value.map(Into::into));
        if let Some(t) = typed {
            self.typed.push(t);
        }
        self.new_id();
        Ok(())
    }

    fn new_id(&mut self) {
        self.ids.push(self.next_id);
        self.next_id += 1;
    }

    /// The position of the live entry of id `id`.
    fn at_id(&self, id: u64) -> Option<usize> {
        let at = self.ids.binary_search(&id).ok()?;
        self.keys.texts.get(at)?.as_ref().map(|_| at)
    }

    /// The value of entry `at` for a lookup.
    fn value(&self, at: usize) -> Option<Sample<'static>> {
        match self.out {
            SmpType::Str => {
                let t = self.value_texts.get(at)?.as_deref()?;
                Some(Sample::Str(std::borrow::Cow::Owned(t.as_bytes().to_vec())))
            }
            _ => self.typed.get(at).cloned(),
        }
    }

    /// `set map`: the value of every entry of key `key` (or `#<id>`: of
    /// that one).
    fn set(&mut self, key: Entry<'_>, value: &str, typed: &Option<Sample<'static>>) -> bool {
        let at = self.positions(key);
        for &i in &at {
            if let Some(v) = self.value_texts.get_mut(i) {
                *v = Some(value.into());
            }
            if let (Some(t), Some(slot)) = (typed, self.typed.get_mut(i)) {
                *slot = t.clone();
            }
        }
        !at.is_empty()
    }

    /// The positions of the live entries `key` names.
    fn positions(&self, key: Entry<'_>) -> Vec<usize> {
        match key {
            Entry::Key(k) => self.keys.positions(k),
            Entry::Id(id) => self.at_id(id).into_iter().collect(),
        }
    }

    /// `del map`: every entry of key `key` (or `#<id>`: that one); how
    /// many there were. The holes are closed once they are many.
    fn delete(&mut self, key: Entry<'_>) -> usize {
        let at = self.positions(key);
        for &i in &at {
            self.keys.remove(i);
            if let Some(v) = self.value_texts.get_mut(i) {
                *v = None;
            }
        }
        if self.keys.sparse() {
            self.compact();
        }
        at.len()
    }

    /// The entries moved to close the holes deleted ones left.
    fn compact(&mut self) {
        let (keys, moved) = self.keys.compacted();
        let n = keys.texts.len();
        let mut value_texts = vec![None; n];
        let mut typed = Vec::with_capacity(if self.typed.is_empty() { 0 } else { n });
        let mut ids = Vec::with_capacity(n);
        for (old, &new) in moved.iter().enumerate() {
            if new == usize::MAX {
                continue;
            }
            value_texts[new] = self.value_texts.get_mut(old).and_then(Option::take);
            if let Some(t) = self.typed.get(old) {
                typed.push(t.clone());
            }
            ids.push(self.ids[old]);
        }
        *self = MapData {
            keys,
            value_texts,
            typed,
            ids,
            next_id: self.next_id,
            out: self.out,
        };
    }
}

impl Map {
    /// Reads `path` (`<key> <value>` a line, the value the rest of the
    /// line) with HAProxy's messages for what is wrong in it.
    pub(crate) fn load(
        path: &str,
        kind: MatchKind,
        out: SmpType,
        default: Option<&str>,
    ) -> Result<Map, String> {
        Map::load_icase(path, kind, false, out, default)
    }

    /// [`Map::load`] with `-i` (an ACL's `-M -i -f <file>`).
    pub(crate) fn load_icase(
        path: &str,
        kind: MatchKind,
        icase: bool,
        out: SmpType,
        default: Option<&str>,
    ) -> Result<Map, String> {
        let mut data = MapData::empty(kind, icase, out);
        // The keys indexed at once after every line is read (see
        // `PatternSet::stage`).
        let mut pending = Pending::default();
        each_line(path, |lines, n, line| {
            if data.keys.texts.is_empty() {
                data.reserve(lines);
            }
            let (key, value) = match line.find([' ', '\t']) {
                Some(i) => (&line[..i], line[i..].trim_start_matches([' ', '\t'])),
                None => (line, ""),
            };
            let bad_value = || format!("unable to parse '{value}' at line {n} of file '{path}'");
            if out != SmpType::Str {
                data.typed
                    .push(map_value(value, out).ok_or_else(bad_value)?);
            }
            let parsed = (data.keys.parse(key, IntOp::Eq))
                .map_err(|e| format!("{e} at line {n} of file '{path}'"))?;
            data.keys.stage(Box::from(key), parsed, &mut pending);
            data.value_texts.push(Some(value.into()));
            data.new_id();
            Ok(())
        })?;
        data.keys.index_pending(pending);
        let default = match default {
            Some(d) => Some(map_value(d, out).ok_or_else(|| format!("unable to parse '{d}'"))?),
            None => None,
        };
        Ok(Map::of(path, data, out, true, default))
    }

    /// Reads the pattern file `path` of an ACL (`-f`): one pattern a line,
    /// a bad one reported with its line, as HAProxy does.
    pub(crate) fn load_patterns(path: &str, kind: MatchKind, icase: bool) -> Result<Map, String> {
        let mut keys = PatternSet::new(kind, icase);
        let mut pending = Pending::default();
        each_line(path, |lines, n, line| {
            if keys.texts.is_empty() {
                keys.reserve(lines);
            }
            let parsed = (keys.parse(line, IntOp::Eq))
                .map_err(|e| format!("{e} at line {n} of file '{path}'"))?;
            keys.stage(Box::from(line), parsed, &mut pending);
            Ok(())
        })?;
        keys.index_pending(pending);
        Ok(Map::patterns("", keys).with_path(path))
    }

    /// The patterns written on an ACL line.
    pub(crate) fn patterns(path: &str, keys: PatternSet) -> Map {
        let n = keys.texts.len();
        let data = MapData {
            keys,
            value_texts: vec![None; n],
            typed: Vec::new(),
            ids: (0..n as u64).collect(),
            next_id: n as u64,
            out: SmpType::Str,
        };
        Map::of(path, data, SmpType::Str, false, None)
    }

    fn with_path(mut self, path: &str) -> Map {
        self.path = path.to_string();
        self
    }

    fn of(
        path: &str,
        data: MapData,
        out: SmpType,
        values: bool,
        default: Option<Sample<'static>>,
    ) -> Map {
        Map {
            path: path.to_string(),
            kind: data.keys.kind(),
            icase: data.keys.icase(),
            out,
            values,
            data: arc_swap::ArcSwap::from_pointee(data),
            writer: std::sync::Mutex::new(None),
            default,
            regm: false,
        }
    }

    /// The map of a `map_regm` converter (its matcher is `reg`).
    pub(crate) fn with_groups(mut self) -> Map {
        self.regm = self.kind == MatchKind::Reg;
        self
    }

    /// Whether a value's `\<n>` stand for the groups of the match.
    pub(crate) fn is_regm(&self) -> bool {
        self.regm
    }

    pub(crate) fn kind(&self) -> MatchKind {
        self.kind
    }

    pub(crate) fn icase(&self) -> bool {
        self.icase
    }

    /// The output type of a map's values.
    pub(crate) fn out(&self) -> SmpType {
        self.out
    }

    /// Whether this map answers as a `map_*` converter of matcher
    /// `kind`, output `out` and default `default` would.
    pub(crate) fn looks_up(&self, kind: MatchKind, out: SmpType, default: Option<&str>) -> bool {
        self.values
            && !self.icase
            && self.kind == kind
            && self.out == out
            && self.default == default.and_then(|d| map_value(d, out))
    }

    /// Whether entries have values (a map) or not (an ACL's patterns).
    pub(crate) fn has_values(&self) -> bool {
        self.values
    }

    /// How many entries there are now.
    pub(crate) fn len(&self) -> usize {
        self.data.load().keys.len()
    }

    /// The entries as written, in order: (id, key, value; "" for
    /// patterns).
    pub(crate) fn entries(&self) -> Vec<(u64, String, String)> {
        let d = self.data.load();
        (d.keys.texts.iter().enumerate())
            .filter_map(|(i, k)| {
                let v = d.value_texts.get(i).and_then(|v| v.as_deref());
                Some((
                    d.ids[i],
                    k.as_deref()?.to_string(),
                    v.unwrap_or("").to_string(),
                ))
            })
            .collect()
    }

    /// Whether an entry has key `key` as written.
    pub(crate) fn has_key(&self, key: &str) -> bool {
        !self.data.load().keys.positions(key).is_empty()
    }

    /// Runs `f` on the current patterns.
    pub(crate) fn with_keys<R>(&self, f: impl FnOnce(&PatternSet) -> R) -> R {
        f(&self.data.load().keys)
    }

    /// Whether sample `s` matches one of the current patterns.
    pub(crate) fn matches(&self, s: Sample<'_>) -> bool {
        self.data.load().keys.matches(s)
    }

    /// Whether `value` is one of this map's output type (anything is, for
    /// patterns: they have no value).
    pub(crate) fn check_value(&self, value: &str) -> Result<(), MapEditError> {
        if !self.values {
            return Ok(());
        }
        map_value(value, self.out)
            .map(|_| ())
            .ok_or_else(|| MapEditError::Value(value.to_string()))
    }

    /// Whether `key` parses as a pattern of this matcher.
    pub(crate) fn check_key(&self, key: &str) -> Result<(), MapEditError> {
        PatternSet::new(self.kind, self.icase)
            .add(key, IntOp::Eq)
            .map_err(MapEditError::Key)
    }

    /// Changes the entries in place by `op`, in both copies (see [`Map`]):
    /// the spare first, which readers then see, then the one they read
    /// before, once they are done with it. `op` must do the same to both:
    /// on an error it changed nothing (neither copy is then touched).
    fn edit<R>(
        &self,
        op: impl Fn(&mut MapData) -> Result<R, MapEditError>,
    ) -> Result<R, MapEditError> {
        use std::sync::Arc;
        let mut spare = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // The first edit makes the second copy.
        let mut next = spare
            .take()
            .unwrap_or_else(|| Arc::new((**self.data.load()).clone()));
        let Some(d) = Arc::get_mut(&mut next) else {
            // Not ours alone (it cannot be: the spare is kept only once its
            // readers left): changed on a copy of its own.
            let mut d = (*next).clone();
            let r = op(&mut d)?;
            self.data.store(Arc::new(d));
            return Ok(r);
        };
        let r = match op(d) {
            Ok(r) => r,
            Err(e) => {
                *spare = Some(next);
                return Err(e);
            }
        };
        let mut old = self.data.swap(next);
        // The lookups that loaded the old copy hold it for a moment (the
        // swap counted them): then it is the writer's alone.
        let d = loop {
            if let Some(d) = Arc::get_mut(&mut old) {
                break d;
            }
            std::thread::yield_now();
        };
        let _ = op(d);
        *spare = Some(old);
        Ok(r)
    }

    /// `add map` or `add acl`: a new entry after the others.
    pub(crate) fn add(&self, key: &str, value: &str) -> Result<(), MapEditError> {
        self.edit(|d| {
            if self.values {
                d.push(key, Some(value))
            } else {
                // `add map` on an ACL's patterns: HAProxy keeps the value
                // (its `show` prints it) but gives the ACL nothing to use
                // it for.
                d.push(key, (!value.is_empty()).then_some(value))
            }
        })
    }

    /// `set map`: the value of every entry of key `key` (or `#<id>`: of
    /// that one).
    pub(crate) fn set(&self, key: Entry<'_>, value: &str) -> Result<(), MapEditError> {
        if !self.values {
            // An ACL's entries have no value to change.
            return match self.data.load().positions(key).is_empty() {
                false => Ok(()),
                true => Err(MapEditError::NotFound),
            };
        }
        let v = map_value(value, self.out).ok_or_else(|| MapEditError::Value(value.to_string()))?;
        let typed = (self.out != SmpType::Str).then_some(v);
        self.edit(|d| match d.set(key, value, &typed) {
            true => Ok(()),
            false => Err(MapEditError::NotFound),
        })
    }

    /// `del map` or `del acl`: every entry of key `key` (or `#<id>`:
    /// that one); how many there were.
    pub(crate) fn delete(&self, key: Entry<'_>) -> Result<usize, MapEditError> {
        self.edit(|d| match d.delete(key) {
            0 => Err(MapEditError::NotFound),
            n => Ok(n),
        })
    }

    /// Replaces every entry with what `build` makes from an empty copy
    /// (both copies are made anew: the old ones are all to go anyway).
    fn rebuild(&self, build: impl Fn(&mut MapData)) {
        let mut spare = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = || {
            let mut d = MapData::empty(self.kind, self.icase, self.out);
            build(&mut d);
            std::sync::Arc::new(d)
        };
        self.data.store(fresh());
        *spare = spare.is_some().then(fresh);
    }

    /// The entries become `entries` (a committed version), those the
    /// matcher or the output type refuses left out.
    pub(crate) fn replace(&self, entries: &[(String, Option<String>)]) {
        self.rebuild(|d| {
            for (k, v) in entries {
                let v = v.as_deref().unwrap_or("");
                let v = (self.values || !v.is_empty()).then_some(v);
                let _ = d.push(k, v);
            }
        });
    }

    /// `clear map` or `clear acl`: no entry left.
    pub(crate) fn clear(&self) {
        self.rebuild(|_| {});
    }

    /// The value of the key `s` matches (HAProxy's first or best match),
    /// else the default. The entries may change under the lookup, so the
    /// value is a copy.
    pub(crate) fn lookup<'a>(&'a self, s: Sample<'_>) -> Option<Sample<'a>> {
        let d = self.data.load();
        if self.regm {
            return self.lookup_groups(&d, s);
        }
        match d.keys.find(s, true) {
            Some(i) => d.value(i),
            None => self.default.as_ref().map(|v| match v {
                Sample::Str(b) => Sample::Str(std::borrow::Cow::Borrowed(&b[..])),
                other => other.clone(),
            }),
        }
    }

    /// `map_regm`'s lookup: the value of the first regex that matches,
    /// its `\<n>` replaced by that match's groups (HAProxy's
    /// `exp_replace`; a value it cannot expand gives no sample).
    fn lookup_groups<'a>(&'a self, d: &MapData, s: Sample<'_>) -> Option<Sample<'a>> {
        let s = s.cast(SmpType::Str)?;
        let input = s.bytes()?;
        let Some((i, caps)) = d.keys.find_groups(input) else {
            return self.default.clone();
        };
        let template = d.value_texts.get(i)?.as_deref()?.as_bytes();
        let mut out = Vec::with_capacity(template.len() + input.len());
        expand_groups(template, &caps, &mut out)?;
        Some(Sample::Str(std::borrow::Cow::Owned(out)))
    }

    /// `get map`'s (`as_map`) or `get acl`'s line for `key`: the matcher,
    /// whether the key is found (the default is not used), and what it
    /// found, as HAProxy prints it.
    pub(crate) fn describe_lookup(&self, key: &str, as_map: bool) -> String {
        let d = self.data.load();
        let case = if self.icase {
            "insensitive"
        } else {
            "sensitive"
        };
        let kind = if self.regm { "regm" } else { self.kind.name() };
        let head = format!("type={kind}, case={case}, ");
        let (found, yes) = if as_map {
            ("found", "found=yes")
        } else {
            ("match", "match=yes")
        };
        let hit = d
            .keys
            .find(
                Sample::Str(std::borrow::Cow::Borrowed(key.as_bytes())),
                true,
            )
            .and_then(|i| Some((i, d.keys.texts.get(i)?.as_deref()?)));
        let Some((i, k)) = hit else {
            return format!("{head}{found}=no\n");
        };
        // HAProxy indexes these matchers in a tree (when case counts),
        // the others in a list.
        let idx = match self.kind {
            MatchKind::Str | MatchKind::Beg if !self.icase => "tree",
            MatchKind::Ip => "tree",
            _ => "list",
        };
        if !as_map {
            return format!("{head}{yes}, idx={idx}, pattern=\"{k}\"\n");
        }
        let v = d.value_texts.get(i).and_then(|v| v.as_deref());
        let (true, Some(v), Some(typed)) = (self.values, v, d.value(i)) else {
            return format!("{head}{yes}, idx={idx}, key=\"{k}\", value=none\n");
        };
        let vtype = match (self.out, typed) {
            (SmpType::Sint, _) => "sint",
            (_, Sample::Ipv4(_)) => "ipv4",
            (_, Sample::Ipv6(_)) => "ipv6",
            _ => "str",
        };
        format!("{head}{yes}, idx={idx}, key=\"{k}\", value=\"{v}\", type=\"{vtype}\"\n")
    }
}

/// `template` with `\0`..`\9` replaced by the groups of `caps` (nothing
/// for a group that did not take part), `\xHH` by that byte and `\<c>`
/// by `c`, as HAProxy's `exp_replace` writes a replacement; None when it
/// ends in the middle of an escape.
pub(crate) fn expand_groups(
    template: &[u8],
    caps: &regex::bytes::Captures<'_>,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut i = 0;
    while i < template.len() {
        let c = template[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = *template.get(i)?;
        i += 1;
        match e {
            b'0'..=b'9' => {
                if let Some(g) = caps.get(usize::from(e - b'0')) {
                    out.extend_from_slice(g.as_bytes());
                }
            }
            b'x' => {
                let (h, l) = (*template.get(i)?, *template.get(i + 1)?);
                i += 2;
                // As HAProxy reads them: any two characters, as if hex.
                let digit = |b: u8| {
                    let b = b.to_ascii_uppercase().wrapping_sub(b'0');
                    if b > 9 {
                        b.wrapping_sub(b'A' - b'9' - 1)
                    } else {
                        b
                    }
                };
                out.push((digit(h) << 4).wrapping_add(digit(l)));
            }
            other => out.push(other),
        }
    }
    Some(())
}

/// `-m bin` patterns: hex digits.
fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    if let Some(c) = text.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("an hex digit is expected (found '{c}')"));
    }
    if text.len() % 2 == 1 {
        return Err("an even number of hex digit is expected".to_string());
    }
    Ok((0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or(0))
        .collect())
}

/// HAProxy's message for a regex its PCRE refuses. The regex crate's
/// reasons are worded otherwise; the usual ones are translated, with the
/// offset PCRE gives (the end of the pattern for an unclosed group).
pub(crate) fn regex_error(text: &str, e: &regex::Error) -> String {
    let detail = e.to_string();
    let reason = if detail.contains("unclosed group") {
        format!(
            "error=missing closing parenthesis, erroffset={}",
            text.len()
        )
    } else if detail.contains("unopened group") {
        format!(
            "error=unmatched closing parenthesis, erroffset={}",
            text.find(')').unwrap_or(0)
        )
    } else if detail.contains("unclosed character class") {
        format!(
            "error=missing terminating ] for character class, erroffset={}",
            text.len()
        )
    } else if detail.contains("repetition operator missing expression") {
        format!(
            "error=quantifier does not follow a repeatable item, erroffset={}",
            text.find(['*', '+', '?', '{']).unwrap_or(0)
        )
    } else {
        let last = detail.lines().last().unwrap_or("").trim();
        format!("error={}", last.trim_start_matches("error: "))
    };
    format!("regex '{text}' is invalid ({reason})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn set(kind: MatchKind, icase: bool, pats: &[&str]) -> PatternSet {
        let mut p = PatternSet::new(kind, icase);
        for t in pats {
            p.add(t, IntOp::Eq).unwrap();
        }
        p
    }

    fn s(v: &str) -> Sample<'_> {
        Sample::Str(Cow::Borrowed(v.as_bytes()))
    }

    #[test]
    fn strings() {
        let p = set(MatchKind::Str, false, &["a", "B"]);
        assert!(p.matches(s("a")) && p.matches(s("B")) && !p.matches(s("b")));
        let p = set(MatchKind::Str, true, &["B"]);
        assert!(p.matches(s("b")));
        // Keys longer than the hash's buffer for lowering them.
        let long = "Ab".repeat(100);
        let mut p = set(MatchKind::Str, true, &[&long, "x"]);
        assert_eq!(p.find(s(&long.to_ascii_uppercase()), false), Some(0));
        assert_eq!(p.positions(&long), vec![0]);
        p.remove(0);
        assert_eq!(p.find(s(&long), false), None);
        let p = set(MatchKind::Beg, true, &[&long]);
        assert!(p.matches(s(&(long.to_ascii_lowercase() + "/x"))));
        let p = set(MatchKind::Dom, false, &[".example.com"]);
        assert!(p.matches(s("www.example.com")));
        assert!(p.matches(s("example.com:80")));
        assert!(!p.matches(s("myexample.com")));
        let p = set(MatchKind::Dir, false, &["api"]);
        assert!(p.matches(s("/v1/api/x")) && !p.matches(s("/apix")));
        let p = set(MatchKind::Reg, true, &["^/A.*z$"]);
        assert!(p.matches(s("/abcZ")));
    }

    #[test]
    fn ints_and_ops() {
        let mut p = PatternSet::new(MatchKind::Int, false);
        p.add("10:20", IntOp::Eq).unwrap();
        p.add("100", IntOp::Gt).unwrap();
        assert!(p.matches(Sample::Sint(15)) && p.matches(Sample::Sint(101)));
        assert!(!p.matches(Sample::Sint(100)) && !p.matches(Sample::Sint(9)));
        assert_eq!(
            p.add("5:3", IntOp::Eq).unwrap_err(),
            "'5:3' is not a valid number range"
        );
        assert_eq!(p.add("x", IntOp::Eq).unwrap_err(), "'x' is not a number");
    }

    #[test]
    fn networks() {
        let p = set(MatchKind::Ip, false, &["10.0.0.0/8", "::1"]);
        assert!(p.matches(Sample::Ipv4("10.2.3.4".parse().unwrap())));
        assert!(p.matches(s("10.9.9.9")));
        assert!(p.matches(Sample::Ipv6("::ffff:10.0.0.1".parse().unwrap())));
        assert!(p.matches(Sample::Ipv6("::1".parse().unwrap())));
        assert!(!p.matches(Sample::Ipv4("11.0.0.1".parse().unwrap())));
    }

    #[test]
    fn map_edits() {
        let dir = std::env::temp_dir().join(format!("sluice-map-edit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.map");
        std::fs::write(&path, "/a 1\n/a/b 2\n").unwrap();
        let path = path.to_str().unwrap();
        let m = Map::load(path, MatchKind::Beg, SmpType::Sint, Some("0")).unwrap();
        let get = |k: &str| m.lookup(s(k));
        assert_eq!(get("/a/b/c"), Some(Sample::Sint(2)));
        m.add("/a/b/c", "3").unwrap();
        assert_eq!(get("/a/b/c"), Some(Sample::Sint(3)));
        assert_eq!(m.add("/x", "y"), Err(MapEditError::Value("y".into())));
        m.set(Entry::Key("/a"), "5").unwrap();
        assert_eq!(get("/a/z"), Some(Sample::Sint(5)));
        assert_eq!(m.set(Entry::Key("/zz"), "5"), Err(MapEditError::NotFound));
        assert_eq!(m.delete(Entry::Key("/a/b/c")), Ok(1));
        assert_eq!(get("/a/b/c"), Some(Sample::Sint(2)));
        assert_eq!(m.delete(Entry::Key("/a/b/c")), Err(MapEditError::NotFound));
        m.clear();
        assert_eq!(get("/a"), Some(Sample::Sint(0)));
        assert!(m.entries().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The indexes find what a scan of the patterns in order finds: the
    /// longest network or prefix (the first of equal ones), the first
    /// word in order.
    #[test]
    fn indexes_agree_with_a_scan() {
        // (`found` counts the lookups that hit.)
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let word = |r: &mut dyn FnMut(u64) -> u64| -> String {
            let parts = ["a", "b", "ab", "A", ".", "/", "?", ":", "x.y", ""];
            (0..1 + r(4))
                .map(|_| parts[r(parts.len() as u64) as usize])
                .collect()
        };
        let mut found = 0;
        for kind in [
            MatchKind::Str,
            MatchKind::Beg,
            MatchKind::Dom,
            MatchKind::Dir,
        ] {
            for icase in [false, true] {
                let pats: Vec<String> = (0..30).map(|_| word(&mut rnd)).collect();
                let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
                let mut p = set(kind, icase, &refs);
                // Then without some of them, deleted in place (every
                // pattern written as the one picked goes).
                let mut alive = vec![true; pats.len()];
                for round in 0..2 {
                    if round == 1 {
                        for _ in 0..10 {
                            let gone = pats[rnd(pats.len() as u64) as usize].clone();
                            let at = p.positions(&gone);
                            let want: Vec<usize> = (0..pats.len())
                                .filter(|&i| alive[i] && pats[i] == gone)
                                .collect();
                            assert_eq!(at, want, "{kind:?} {icase} positions of {gone:?}");
                            for i in at {
                                p.remove(i);
                                alive[i] = false;
                            }
                        }
                        assert_eq!(p.len(), alive.iter().filter(|a| **a).count());
                    }
                    for _ in 0..300 {
                        let v = word(&mut rnd) + &word(&mut rnd);
                        let lv = if icase {
                            v.to_ascii_lowercase()
                        } else {
                            v.clone()
                        };
                        let lower = |t: &str| {
                            if icase {
                                t.to_ascii_lowercase()
                            } else {
                                t.to_string()
                            }
                        };
                        let hits = pats.iter().enumerate().filter(|(i, t)| {
                            alive[*i] && p.match_text(kind, lv.as_bytes(), lower(t).as_bytes())
                        });
                        let want = match kind {
                            MatchKind::Beg => hits.max_by_key(|(i, t)| (t.len(), usize::MAX - i)),
                            _ => hits.min_by_key(|(i, _)| *i),
                        }
                        .map(|h| h.0);
                        found += usize::from(want.is_some());
                        assert_eq!(
                            p.find(s(&v), true),
                            want,
                            "{kind:?} {icase} {v:?} in {pats:?} (alive {alive:?})"
                        );
                    }
                }
            }
        }
        // The samples hit often enough to tell.
        assert!(found > 300, "{found}");
        let nets: Vec<String> = (0..40)
            .map(|i| match i % 3 {
                0 => format!("10.{}.0.0/{}", rnd(3), 8 + rnd(17)),
                1 => format!("::ffff:10.{}.0.0/{}", rnd(3), 96 + rnd(33)),
                _ => format!("10.{}.{}.{}", rnd(3), rnd(2), rnd(2)),
            })
            .collect();
        let refs: Vec<&str> = nets.iter().map(String::as_str).collect();
        let mut p = set(MatchKind::Ip, false, &refs);
        let parsed: Vec<Net> = nets.iter().map(|n| Net::parse(n).unwrap()).collect();
        let mut alive = vec![true; nets.len()];
        for round in 0..2 {
            if round == 1 {
                for _ in 0..15 {
                    let gone = nets[rnd(nets.len() as u64) as usize].clone();
                    for i in p.positions(&gone) {
                        p.remove(i);
                        alive[i] = false;
                    }
                }
            }
            for _ in 0..500 {
                let a: Ipv4Addr = format!("10.{}.{}.{}", rnd(3), rnd(2), rnd(2))
                    .parse()
                    .unwrap();
                for ip in [IpAddr::V4(a), IpAddr::V6(a.to_ipv6_mapped())] {
                    let want = (parsed.iter().enumerate())
                        .filter(|(i, n)| alive[*i] && n.contains(ip))
                        .max_by_key(|(i, n)| (n.prefix, usize::MAX - i))
                        .map(|h| h.0);
                    let sample = match ip {
                        IpAddr::V4(a) => Sample::Ipv4(a),
                        IpAddr::V6(a) => Sample::Ipv6(a),
                    };
                    found += usize::from(want.is_some());
                    assert_eq!(p.find(sample, true), want, "{ip} in {nets:?}");
                }
            }
        }
        assert!(found > 600, "{found}");
    }

    /// Edits change both copies alike (each edit after the first goes to
    /// the spare, then to the copy lookups read before); deletions leave
    /// holes, closed once they are many, entries keep their order.
    #[test]
    fn edits_in_place_and_their_holes() {
        let dir = std::env::temp_dir().join(format!("sluice-edit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.map");
        let text: String = (0..3000).map(|i| format!("/p{i}/ v{i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let m = Map::load(path.to_str().unwrap(), MatchKind::Beg, SmpType::Str, None).unwrap();
        let get = |k: &str| m.lookup(s(k)).and_then(|v| v.bytes().map(|b| b.to_vec()));
        assert_eq!(get("/p7/x"), Some(b"v7".to_vec()));
        for i in (0..3000).filter(|i| i % 3 != 0) {
            assert_eq!(m.delete(Entry::Key(&format!("/p{i}/"))), Ok(1));
        }
        assert_eq!(m.delete(Entry::Key("/p1/")), Err(MapEditError::NotFound));
        assert_eq!(m.len(), 1000);
        assert_eq!(get("/p7/x"), None);
        assert_eq!(get("/p9/x"), Some(b"v9".to_vec()));
        m.add("/p9/", "again").unwrap();
        m.add("/p", "short").unwrap();
        m.set(Entry::Key("/p9/"), "nine").unwrap();
        assert_eq!(get("/p9/x"), Some(b"nine".to_vec()));
        assert_eq!(get("/p7/x"), Some(b"short".to_vec()));
        let e = m.entries();
        assert_eq!(e.len(), 1002);
        // Ids are kept: the entries of the file keep theirs, new ones
        // come after.
        assert_eq!(e[3], (9, "/p9/".to_string(), "nine".to_string()));
        assert_eq!(e[1000], (3000, "/p9/".to_string(), "nine".to_string()));
        assert_eq!(e[1001], (3001, "/p".to_string(), "short".to_string()));
        assert_eq!(m.delete(Entry::Id(3000)), Ok(1));
        assert_eq!(m.delete(Entry::Id(3000)), Err(MapEditError::NotFound));
        m.set(Entry::Id(9), "only").unwrap();
        assert_eq!(get("/p9/x"), Some(b"only".to_vec()));
        // Both copies: the one readers see now, and the spare, alike.
        let spare = m
            .writer
            .lock()
            .unwrap()
            .clone()
            .expect("a spare after edits");
        assert_eq!(*spare, **m.data.load());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn methods() {
        let p = set(MatchKind::Meth, true, &["post", "patch"]);
        let m = |v: &'static str| Sample::Meth(Cow::Borrowed(v.as_bytes()));
        assert!(!p.matches(m("POST")));
        assert!(p.matches(m("PATCH")));
        let p = set(MatchKind::Meth, false, &["POST"]);
        assert!(p.matches(m("POST")) && !p.matches(m("post")));
    }
}
