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

    fn finish(&self) -> u64 {
        self.0
    }
}

fn hashed<K>() -> Hashed<K> {
    static SEED: LazyLock<u64> = LazyLock::new(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    HashMap::with_hasher(Seeded(*SEED))
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
#[derive(Debug, Clone)]
pub(crate) struct PatternSet {
    kind: MatchKind,
    icase: bool,
    /// `-m str` without `-i`: exact values, looked up by hash, with the
    /// index of each (its place among `texts`).
    exact: Hashed<Box<[u8]>>,
    /// Every other pattern not in `index`, in order (lowered for `-i`
    /// string matchers), with its index.
    list: Vec<(Pat, usize)>,
    /// The `ip`, `beg`, `dom` and `dir` patterns.
    index: Index,
    /// The patterns as written: two sets are equal when these are (a
    /// reload compares configurations).
    texts: Vec<String>,
}

impl PartialEq for PatternSet {
    fn eq(&self, other: &PatternSet) -> bool {
        self.kind == other.kind && self.icase == other.icase && self.texts == other.texts
    }
}

impl PatternSet {
    pub(crate) fn new(kind: MatchKind, icase: bool) -> PatternSet {
        PatternSet {
            kind,
            icase,
            exact: hashed(),
            list: Vec::new(),
            index: Index::default(),
            texts: Vec::new(),
        }
    }

    pub(crate) fn kind(&self) -> MatchKind {
        self.kind
    }

    /// The patterns as written, in order (`http_auth_group`'s group names).
    pub(crate) fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Adds one pattern; the error is HAProxy's text for a bad one.
    pub(crate) fn add(&mut self, text: &str, op: IntOp) -> Result<(), String> {
        use MatchKind::*;
        let at = self.texts.len();
        let pat = match self.kind {
            // HAProxy takes and ignores patterns here; methods compare
            // with the patterns as written (`texts`).
            Found | Bool | Meth => None,
            Int | Len => Some(Pat::Range(parse_range(text, op)?)),
            Ip => match Net::parse(text) {
                Some(n) => {
                    self.index.add_net(n, at);
                    None
                }
                None => return Err(format!("'{text}' is not a valid IPv4 or IPv6 address")),
            },
            Beg | Dom | Dir => {
                let b = if self.icase {
                    text.to_ascii_lowercase().into_bytes()
                } else {
                    text.as_bytes().to_vec()
                };
                match self.kind {
                    Beg => self.index.add_prefix(b, at),
                    Dom => self.index.add_word(strip_delims(&b, DOM_DELIMS), at),
                    _ => self.index.add_word(strip_delims(&b, DIR_DELIMS), at),
                }
                None
            }
            Bin => Some(Pat::Bytes(parse_hex(text)?.into())),
            Reg => {
                let re = regex::bytes::RegexBuilder::new(text)
                    .case_insensitive(self.icase)
                    .build()
                    .map_err(|e| regex_error(text, &e))?;
                Some(Pat::Re(re))
            }
            Str if !self.icase => {
                // The first of equal keys wins, as in HAProxy's tree.
                self.exact.entry(text.as_bytes().into()).or_insert(at);
                None
            }
            Str | End | Sub => {
                let b = if self.icase {
                    text.to_ascii_lowercase().into_bytes()
                } else {
                    text.as_bytes().to_vec()
                };
                Some(Pat::Bytes(b.into()))
            }
        };
        if let Some(p) = pat {
            self.list.push((p, at));
        }
        self.texts.push(text.to_string());
        Ok(())
    }

    /// The patterns whose (index, text) `keep` accepts, in order and
    /// re-indexed, parsed as they were (an integer pattern keeps the
    /// operator it was read under).
    pub(crate) fn retained(&self, keep: impl Fn(usize, &str) -> bool) -> PatternSet {
        let mut out = PatternSet::new(self.kind, self.icase);
        if self.index.is_used(self.kind) {
            // Indexed patterns parse again alike (no operator applies).
            for (i, t) in self.texts.iter().enumerate() {
                if keep(i, t) {
                    let _ = out.add(t, IntOp::Eq);
                }
            }
            return out;
        }
        let mut new_at = vec![usize::MAX; self.texts.len()];
        for (i, t) in self.texts.iter().enumerate() {
            if keep(i, t) {
                new_at[i] = out.texts.len();
                out.texts.push(t.clone());
            }
        }
        out.list = self
            .list
            .iter()
            .filter(|(_, at)| new_at[*at] != usize::MAX)
            .map(|(p, at)| (p.clone(), new_at[*at]))
            .collect();
        for (i, t) in out.texts.iter().enumerate() {
            if self.kind == MatchKind::Str && !self.icase {
                out.exact.entry(t.as_bytes().into()).or_insert(i);
            }
        }
        out
    }

    pub(crate) fn icase(&self) -> bool {
        self.icase
    }

    /// Room for `n` more patterns.
    fn reserve(&mut self, n: usize) {
        self.texts.reserve(n);
        match self.kind {
            MatchKind::Str if !self.icase => self.exact.reserve(n),
            MatchKind::Dom | MatchKind::Dir => self.index.words.reserve(n),
            MatchKind::Ip | MatchKind::Beg => {}
            _ => self.list.reserve(n),
        }
    }

    /// The first regex (in order) that matches `v`, with its groups.
    fn find_groups<'v>(&self, v: &'v [u8]) -> Option<(usize, regex::bytes::Captures<'v>)> {
        self.list.iter().find_map(|(p, at)| match p {
            Pat::Re(re) => re.captures(v).map(|c| (*at, c)),
            _ => None,
        })
    }

    /// Whether sample `s` (not yet cast) matches one pattern.
    pub(crate) fn matches(&self, s: Sample<'_>) -> bool {
        self.find(s, false).is_some()
    }

    /// The index (in the order they were added) of a pattern sample `s`
    /// matches: the first in order, or with `best` (a map lookup) the
    /// longest prefix for `ip` and `beg`, as HAProxy's trees give.
    pub(crate) fn find(&self, s: Sample<'_>, _best: bool) -> Option<usize> {
        use MatchKind::*;
        if self.kind == Found {
            return Some(0);
        }
        let s = s.cast(self.kind.input())?;
        let first = |f: &dyn Fn(&Pat) -> bool| self.list.iter().find(|(p, _)| f(p)).map(|p| p.1);
        match (self.kind, s) {
            (Bool, Sample::Bool(b)) => b.then_some(0),
            (Int, Sample::Sint(n)) => first(&|p| in_range(p, n)),
            (Len, Sample::Str(v)) => first(&|p| in_range(p, v.len() as i64)),
            (Ip, Sample::Ipv4(a)) => self.index.find_net(IpAddr::V4(a)),
            (Ip, Sample::Ipv6(a)) => self.index.find_net(IpAddr::V6(a)),
            (Bin, Sample::Bin(v)) => first(&|p| matches!(p, Pat::Bytes(b) if **b == *v)),
            (Reg, Sample::Str(v)) => first(&|p| matches!(p, Pat::Re(re) if re.is_match(&v))),
            (Meth, Sample::Meth(v)) => self.match_method(&v),
            (Str, Sample::Str(v)) if !self.icase => self.exact.get(&*v).copied(),
            // The longest prefix (any match would do without `best`).
            (Beg, Sample::Str(v)) => self.index.find_prefix(&self.lowered(&v)),
            // The first word in order, as a scan finds it.
            (Dom, Sample::Str(v)) => self.index.find_word(&self.lowered(&v), DOM_DELIMS),
            (Dir, Sample::Str(v)) => self.index.find_word(&self.lowered(&v), DIR_DELIMS),
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
fn strip_delims(pat: &[u8], delims: &[u8]) -> Vec<u8> {
    let start = pat.iter().take_while(|b| delims.contains(b)).count();
    let pat = &pat[start..];
    let end = pat.len() - pat.iter().rev().take_while(|b| delims.contains(b)).count();
    pat[..end].to_vec()
}

/// The indexes of the matchers long lists use; each keeps a pattern's
/// first index by its key (the first of equal patterns wins, as in order).
#[derive(Debug, Clone)]
struct Index {
    /// `ip`: networks by prefix length, then by masked address.
    v4: std::collections::BTreeMap<u8, Hashed<u32>>,
    v6: std::collections::BTreeMap<u8, Hashed<u128>>,
    /// `beg`: prefixes by length.
    prefixes: std::collections::BTreeMap<usize, Hashed<Box<[u8]>>>,
    /// `dom`, `dir`: words (stripped of the delimiters around them).
    words: Hashed<Box<[u8]>>,
    /// How many `dom`/`dir` patterns are nothing but delimiters (those
    /// never match) or indexed: a sample with more runs of words than
    /// this is cheaper to compare with each pattern.
    word_count: usize,
}

impl Default for Index {
    fn default() -> Index {
        Index {
            v4: Default::default(),
            v6: Default::default(),
            prefixes: Default::default(),
            words: hashed(),
            word_count: 0,
        }
    }
}

impl Index {
    fn is_used(&self, kind: MatchKind) -> bool {
        matches!(
            kind,
            MatchKind::Ip | MatchKind::Beg | MatchKind::Dom | MatchKind::Dir
        )
    }

    fn add_net(&mut self, n: Net, at: usize) {
        match n.addr {
            IpAddr::V4(a) => {
                let key = u32::from(a) & mask32(n.prefix);
                (self.v4.entry(n.prefix).or_insert_with(hashed))
                    .entry(key)
                    .or_insert(at);
            }
            IpAddr::V6(a) => {
                let key = u128::from(a) & mask128(n.prefix);
                (self.v6.entry(n.prefix).or_insert_with(hashed))
                    .entry(key)
                    .or_insert(at);
            }
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
                .find_map(|(&len, nets)| nets.get(&(a & mask32(len))).map(|&at| (len, at)))
        });
        let a6 = u128::from(v6);
        let in6 = (self.v6.iter().rev())
            .find_map(|(&len, nets)| nets.get(&(a6 & mask128(len))).map(|&at| (len, at)));
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

    fn add_prefix(&mut self, p: Vec<u8>, at: usize) {
        (self.prefixes.entry(p.len()).or_insert_with(hashed))
            .entry(p.into())
            .or_insert(at);
    }

    /// The longest pattern `v` starts with.
    fn find_prefix(&self, v: &[u8]) -> Option<usize> {
        (self.prefixes.range(..=v.len()).rev()).find_map(|(&len, ps)| ps.get(&v[..len]).copied())
    }

    fn add_word(&mut self, w: Vec<u8>, at: usize) {
        self.word_count += 1;
        if !w.is_empty() {
            self.words.entry(w.into()).or_insert(at);
        }
    }

    /// The first pattern (in order) that is a run of `v`'s delimited
    /// words: every run is looked up, the smallest index wins.
    fn find_word(&self, v: &[u8], delims: &[u8]) -> Option<usize> {
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
            return (self.words.iter())
                .filter(|(w, _)| contains_word(v, w, delims))
                .map(|(_, &at)| at)
                .min();
        }
        let mut best: Option<usize> = None;
        for s in starts {
            for &e in ends.iter().filter(|&&e| e > s) {
                if let Some(&at) = self.words.get(&v[s..e]) {
                    best = Some(best.map_or(at, |b| b.min(at)));
                }
            }
        }
        best
    }
}

/// Whether `w` (without delimiters around it) is a run of `v`'s words.
fn contains_word(v: &[u8], w: &[u8], delims: &[u8]) -> bool {
    let is_delim = |b: &u8| delims.contains(b);
    w.len() <= v.len()
        && (0..=v.len() - w.len()).any(|i| {
            (i == 0 || is_delim(&v[i - 1]))
                && &v[i..i + w.len()] == w
                && v.get(i + w.len()).is_none_or(is_delim)
        })
}

/// Calls `f` on each line of pattern or map file `path` that holds
/// something (its number, its text without surrounding blanks), blank
/// lines and `#` comments left out.
fn each_line(
    path: &str,
    lines: impl FnOnce(usize),
    mut f: impl FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|_| format!("failed to open pattern file <{path}>"))?;
    // Room for every line at once: no growing (and rehashing) on the way.
    lines(memchr::memchr_iter(b'\n', &bytes).count() + 1);
    let text = String::from_utf8_lossy(&bytes);
    for (i, l) in text.lines().enumerate() {
        let l = l.trim_matches([' ', '\t', '\r']);
        if !l.is_empty() && !l.starts_with('#') {
            f(i + 1, l)?;
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
/// ones) changes the entries while requests look keys up: lookups load
/// the current [`MapData`] without a lock; a writer builds a new one from
/// a copy under `writer` and swaps it in.
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
    /// Serialises writers (two CLI sessions changing one map).
    writer: std::sync::Mutex<()>,
    default: Option<Sample<'static>>,
    /// `map_regm`: a value's `\<n>` stand for the groups of the regex
    /// that matched.
    regm: bool,
}

/// One version of a map's entries.
#[derive(Debug, Clone, PartialEq)]
struct MapData {
    keys: PatternSet,
    /// Empty for an ACL's patterns.
    values: Vec<Sample<'static>>,
    /// The values as written (the CLI shows them so).
    value_texts: Vec<String>,
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
        self.values.reserve(n);
        self.value_texts.reserve(n);
    }

    fn empty(kind: MatchKind, icase: bool) -> MapData {
        MapData {
            keys: PatternSet::new(kind, icase),
            values: Vec::new(),
            value_texts: Vec::new(),
        }
    }

    fn push(&mut self, key: &str, value: &str, out: SmpType) -> Result<(), MapEditError> {
        let v = map_value(value, out).ok_or_else(|| MapEditError::Value(value.to_string()))?;
        self.keys.add(key, IntOp::Eq).map_err(MapEditError::Key)?;
        self.values.push(v);
        self.value_texts.push(value.to_string());
        Ok(())
    }

    /// The entries whose key `keep` accepts.
    fn retained(&self, keep: impl Fn(&str) -> bool) -> MapData {
        let kept: Vec<bool> = self.keys.texts().iter().map(|k| keep(k)).collect();
        let pick = |i: usize| kept.get(i).copied().unwrap_or(false);
        MapData {
            keys: self.keys.retained(|i, _| pick(i)),
            values: (self.values.iter().enumerate())
                .filter(|(i, _)| pick(*i))
                .map(|(_, v)| v.clone())
                .collect(),
            value_texts: (self.value_texts.iter().enumerate())
                .filter(|(i, _)| pick(*i))
                .map(|(_, v)| v.clone())
                .collect(),
        }
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
        let mut data = MapData::empty(kind, icase);
        let room = std::cell::Cell::new(0);
        each_line(
            path,
            |n| room.set(n),
            |n, line| {
                if room.get() > 0 {
                    data.reserve(room.take());
                }
                let (key, value) = match line.find([' ', '\t']) {
                    Some(i) => (&line[..i], line[i..].trim_start_matches([' ', '\t'])),
                    None => (line, ""),
                };
                data.push(key, value, out).map_err(|e| match e {
                    MapEditError::Key(e) => format!("{e} at line {n} of file '{path}'"),
                    _ => format!("unable to parse '{value}' at line {n} of file '{path}'"),
                })
            },
        )?;
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
        let room = std::cell::Cell::new(0);
        each_line(
            path,
            |n| room.set(n),
            |n, line| {
                if room.get() > 0 {
                    keys.reserve(room.take());
                }
                keys.add(line, IntOp::Eq)
                    .map_err(|e| format!("{e} at line {n} of file '{path}'"))
            },
        )?;
        Ok(Map::patterns("", keys).with_path(path))
    }

    /// The patterns written on an ACL line.
    pub(crate) fn patterns(path: &str, keys: PatternSet) -> Map {
        let data = MapData {
            keys,
            values: Vec::new(),
            value_texts: Vec::new(),
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
            writer: std::sync::Mutex::new(()),
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
        self.data.load().keys.texts().len()
    }

    /// The entries as written, in order: (key, value; "" for patterns).
    pub(crate) fn entries(&self) -> Vec<(String, String)> {
        let d = self.data.load();
        (d.keys.texts().iter().enumerate())
            .map(|(i, k)| (k.clone(), d.value_texts.get(i).cloned().unwrap_or_default()))
            .collect()
    }

    /// Whether an entry has key `key` as written.
    pub(crate) fn has_key(&self, key: &str) -> bool {
        let d = self.data.load();
        let k = &d.keys;
        // Exact keys are hashed as written; the other indexes hold keys
        // changed (lowered, stripped, masked), so the texts are scanned.
        if k.kind == MatchKind::Str && !k.icase {
            return k.exact.contains_key(key.as_bytes());
        }
        k.texts().iter().any(|t| t == key)
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

    /// Changes the entries: `f` edits a copy, which replaces them.
    fn edit(
        &self,
        f: impl FnOnce(&MapData) -> Result<MapData, MapEditError>,
    ) -> Result<(), MapEditError> {
        let _w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let next = f(&self.data.load())?;
        self.data.store(std::sync::Arc::new(next));
        Ok(())
    }

    /// `add map` or `add acl`: a new entry after the others.
    pub(crate) fn add(&self, key: &str, value: &str) -> Result<(), MapEditError> {
        self.edit(|d| {
            let mut d = d.clone();
            if self.values {
                d.push(key, value, self.out)?;
            } else {
                d.keys.add(key, IntOp::Eq).map_err(MapEditError::Key)?;
                // `add map` on an ACL's patterns: HAProxy keeps the value
                // (its `show` prints it) but gives the ACL nothing to use
                // it for. The texts cover only the entries up to the last
                // one that has one.
                if !value.is_empty() {
                    d.value_texts
                        .resize(d.keys.texts().len() - 1, String::new());
                    d.value_texts.push(value.to_string());
                }
            }
            Ok(d)
        })
    }

    /// `set map`: the value of every entry of key `key`.
    pub(crate) fn set(&self, key: &str, value: &str) -> Result<(), MapEditError> {
        if !self.values {
            // An ACL's entries have no value to change.
            let d = self.data.load();
            return match d.keys.texts().iter().any(|k| k == key) {
                true => Ok(()),
                false => Err(MapEditError::NotFound),
            };
        }
        let v = map_value(value, self.out).ok_or_else(|| MapEditError::Value(value.to_string()))?;
        self.edit(|d| {
            let mut d = d.clone();
            let mut hit = false;
            for (i, k) in d.keys.texts().iter().enumerate() {
                if k == key && i < d.values.len() {
                    d.values[i] = v.clone();
                    d.value_texts[i] = value.to_string();
                    hit = true;
                }
            }
            if hit {
                Ok(d)
            } else {
                Err(MapEditError::NotFound)
            }
        })
    }

    /// `del map` or `del acl`: every entry of key `key`; how many there
    /// were.
    pub(crate) fn delete(&self, key: &str) -> Result<usize, MapEditError> {
        let mut n = 0;
        self.edit(|d| {
            n = d.keys.texts().iter().filter(|k| *k == key).count();
            if n == 0 {
                return Err(MapEditError::NotFound);
            }
            Ok(d.retained(|k| k != key))
        })?;
        Ok(n)
    }

    /// The entries become `entries` (a committed version), those the
    /// matcher or the output type refuses left out.
    pub(crate) fn replace(&self, entries: &[(String, Option<String>)]) {
        let _ = self.edit(|_| {
            let mut d = MapData::empty(self.kind, self.icase);
            for (k, v) in entries {
                let v = v.as_deref().unwrap_or("");
                if self.values {
                    let _ = d.push(k, v, self.out);
                } else if d.keys.add(k, IntOp::Eq).is_ok() && !v.is_empty() {
                    d.value_texts
                        .resize(d.keys.texts().len() - 1, String::new());
                    d.value_texts.push(v.to_string());
                }
            }
            Ok(d)
        });
    }

    /// `clear map` or `clear acl`: no entry left.
    pub(crate) fn clear(&self) {
        let _ = self.edit(|_| Ok(MapData::empty(self.kind, self.icase)));
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
            Some(i) => d.values.get(i).cloned(),
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
        let Some(Sample::Str(template)) = d.values.get(i) else {
            return d.values.get(i).cloned();
        };
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
            .and_then(|i| Some((i, d.keys.texts().get(i)?)));
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
        let (Some(v), Some(typed)) = (d.value_texts.get(i), d.values.get(i)) else {
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
fn regex_error(text: &str, e: &regex::Error) -> String {
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
        m.set("/a", "5").unwrap();
        assert_eq!(get("/a/z"), Some(Sample::Sint(5)));
        assert_eq!(m.set("/zz", "5"), Err(MapEditError::NotFound));
        assert_eq!(m.delete("/a/b/c"), Ok(1));
        assert_eq!(get("/a/b/c"), Some(Sample::Sint(2)));
        assert_eq!(m.delete("/a/b/c"), Err(MapEditError::NotFound));
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
        for kind in [MatchKind::Beg, MatchKind::Dom, MatchKind::Dir] {
            for icase in [false, true] {
                let pats: Vec<String> = (0..30).map(|_| word(&mut rnd)).collect();
                let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
                let p = set(kind, icase, &refs);
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
                    let hits = pats
                        .iter()
                        .enumerate()
                        .filter(|(_, t)| p.match_text(kind, lv.as_bytes(), lower(t).as_bytes()));
                    let want = match kind {
                        MatchKind::Beg => hits.max_by_key(|(i, t)| (t.len(), usize::MAX - i)),
                        _ => hits.min_by_key(|(i, _)| *i),
                    }
                    .map(|h| h.0);
                    found += usize::from(want.is_some());
                    assert_eq!(
                        p.find(s(&v), true),
                        want,
                        "{kind:?} {icase} {v:?} in {pats:?}"
                    );
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
        let p = set(MatchKind::Ip, false, &refs);
        let parsed: Vec<Net> = nets.iter().map(|n| Net::parse(n).unwrap()).collect();
        for _ in 0..500 {
            let a: Ipv4Addr = format!("10.{}.{}.{}", rnd(3), rnd(2), rnd(2))
                .parse()
                .unwrap();
            for ip in [IpAddr::V4(a), IpAddr::V6(a.to_ipv6_mapped())] {
                let want = (parsed.iter().enumerate())
                    .filter(|(_, n)| n.contains(ip))
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
        assert!(found > 600, "{found}");
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
