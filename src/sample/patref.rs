//! The pattern references of the running configuration (HAProxy's
//! "pat_ref"), for the CLI's `map` and `acl` commands.
//!
//! A reference is one pattern file, shared by every `map_*` converter and
//! every ACL that reads it, or the patterns written on one ACL line. Each
//! has an id, as HAProxy numbers them: the `-u <id>` an ACL line gives,
//! else the smallest free one in the order the configuration creates
//! them; `#<id>` names one on the CLI. The users of a reference are the
//! [`Map`]s (one per converter or ACL matcher) that the CLI changes
//! together.
//!
//! A configuration's references are collected while it is read (the
//! parser is one thread: a thread-local collector, started and finished
//! by `config::parse_sources`) and travel with it; the one a snapshot is
//! compiled from is published here for the CLI. A configuration that is
//! dropped (a failed reload, a `-c` check) takes its references with it.
//! The lock of a reference is taken by the CLI, never by a lookup.

use std::cell::RefCell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use arc_swap::ArcSwap;

use super::pattern::{Entry, Map, MapEditError, MatchKind};
use super::value::SmpType;

/// What uses a reference: `map_*` converters, ACLs or both.
pub(crate) const MAP: u8 = 1;
pub(crate) const ACL: u8 = 2;

/// One pattern reference.
#[derive(Debug)]
pub(crate) struct PatRef {
    /// The id, -1 until the configuration is read (unless `-u` gave it).
    id: AtomicI64,
    /// The file, or none for an ACL line's own patterns.
    path: Option<String>,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    flags: u8,
    /// What it is: `pattern loaded from file '<path>'` (then who uses it:
    /// `bys`, then `late_bys`, HAProxy's order), or an ACL line's own.
    display: String,
    bys: Vec<String>,
    /// The uses of the formats HAProxy reads once the configuration is
    /// parsed.
    late_bys: Vec<String>,
    /// The users, in the order they were read.
    users: Vec<Arc<Map>>,
    /// HAProxy's `entry_cnt`: every pattern indexed counts once per
    /// lookup structure that holds it (users alike share one), a deletion
    /// once per entry, whatever its version.
    entry_cnt: i64,
    /// The version requests see, and the last one `prepare` made.
    curr_gen: u32,
    next_gen: u32,
    /// The entries of the other versions, in the order they were added:
    /// (version, key, value). Those of `curr_gen` are the users'.
    staged: Vec<(u32, String, Option<String>)>,
}

/// What a commit asks of a reference.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CommitError {
    /// Not a version between the current one and the last prepared.
    OutOfRange,
}

/// Users that HAProxy indexes in one structure (its "expression"): same
/// index, same pattern parser, same value parser, same flags. `get map`
/// answers one line for each.
fn class(m: &Map) -> (u8, u8, u8, bool) {
    use MatchKind::*;
    // The index (tree of strings, of prefixes, of addresses, lists).
    let (index, parse) = match m.kind() {
        Found | Bool => (0, 0),
        Int | Len => (0, 1),
        Ip => (1, 2),
        Bin => (2, 3),
        Str => (3, 4),
        Beg => (4, 4),
        Sub | Dir | Dom | End => (5, 4),
        // `map_regm` matches with its own function: another structure.
        Reg if m.is_regm() => (8, 5),
        Reg => (6, 5),
        Meth => (7, 6),
    };
    let value = match (m.has_values(), m.out()) {
        (false, _) => 0,
        (true, SmpType::Sint) => 1,
        (true, SmpType::Addr) => 2,
        (true, _) => 3,
    };
    (index, parse, value, m.icase())
}

impl PatRef {
    /// The id the CLI names it by (`#<id>`).
    pub(crate) fn id(&self) -> i64 {
        self.id.load(Ordering::Relaxed)
    }

    pub(crate) fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn flags(&self) -> u8 {
        self.inner().flags
    }

    /// The users, in the order they were read.
    pub(crate) fn users(&self) -> Vec<Arc<Map>> {
        self.inner().users.clone()
    }

    /// One user of each of HAProxy's lookup structures, in order.
    pub(crate) fn lookups(&self) -> Vec<Arc<Map>> {
        let users = self.users();
        let mut seen = Vec::new();
        users
            .into_iter()
            .filter(|m| {
                let c = class(m);
                let new = !seen.contains(&c);
                seen.push(c);
                new
            })
            .collect()
    }

    /// `show map`'s line for this reference.
    pub(crate) fn list_line(&self) -> String {
        let i = self.inner();
        let mut display = i.display.clone();
        for (n, by) in i.bys.iter().chain(&i.late_bys).enumerate() {
            display.push_str(if n == 0 { " used " } else { ", " });
            display.push_str(by);
        }
        format!(
            "{} ({}) {}. curr_ver={} next_ver={} entry_cnt={}\n",
            self.id(),
            self.path.as_deref().unwrap_or(""),
            display,
            i.curr_gen,
            i.next_gen,
            i.entry_cnt
        )
    }

    /// (current version, last prepared version).
    pub(crate) fn versions(&self) -> (u32, u32) {
        let i = self.inner();
        (i.curr_gen, i.next_gen)
    }

    /// `prepare`: a new version, empty, after the last one.
    pub(crate) fn prepare(&self) -> u32 {
        let mut i = self.inner();
        i.next_gen = i.next_gen.wrapping_add(1);
        i.next_gen
    }

    /// An entry of version `ver` (not the current one), already accepted
    /// by every user.
    fn stage(&self, ver: u32, key: &str, value: Option<&str>) {
        let mut i = self.inner();
        i.staged
            .push((ver, key.to_string(), value.map(str::to_string)));
    }

    /// The entries of version `ver` (not the current one).
    pub(crate) fn staged(&self, ver: u32) -> Vec<(String, Option<String>)> {
        (self.inner().staged.iter())
            .filter(|e| e.0 == ver)
            .map(|e| (e.1.clone(), e.2.clone()))
            .collect()
    }

    /// Removes the entries of other versions `drop` selects (by version
    /// and key), counted as deleted; how many there were.
    pub(crate) fn drop_staged(&self, drop: impl Fn(u32, &str) -> bool) -> usize {
        let mut i = self.inner();
        let before = i.staged.len();
        i.staged.retain(|e| !drop(e.0, &e.1));
        let n = before - i.staged.len();
        i.entry_cnt -= n as i64;
        n
    }

    /// `set`: the value of the other versions' entries of `key`; whether
    /// there was one.
    fn set_staged(&self, key: &str, value: &str) -> bool {
        let mut i = self.inner();
        let mut hit = false;
        for e in i.staged.iter_mut().filter(|e| e.1 == key) {
            e.2 = Some(value.to_string());
            hit = true;
        }
        hit
    }

    /// `commit @<ver>`: version `ver` becomes the one requests see, and
    /// every older version's entries go, the current ones included.
    pub(crate) fn commit(&self, ver: u32) -> Result<(), CommitError> {
        let mut i = self.inner();
        let (curr, next) = (i.curr_gen, i.next_gen);
        // HAProxy's range, in its unsigned arithmetic (versions wrap).
        if ver.wrapping_sub(curr.wrapping_add(1)) >= next.wrapping_sub(curr) {
            return Err(CommitError::OutOfRange);
        }
        i.curr_gen = ver;
        // Older: within the half of the version space below `ver`.
        let older = |g: u32| ver.wrapping_sub(1).wrapping_sub(g) <= u32::MAX >> 1;
        let live: Vec<(String, Option<String>)> = (i.staged.iter())
            .filter(|e| e.0 == ver)
            .map(|e| (e.1.clone(), e.2.clone()))
            .collect();
        let before = i.staged.len();
        i.staged.retain(|e| e.0 != ver && !older(e.0));
        let purged = before - i.staged.len() - live.len();
        let old_live = i.users.first().map_or(0, |m| m.len());
        i.entry_cnt -= (purged + old_live) as i64;
        for m in &i.users {
            m.replace(&live);
        }
        Ok(())
    }

    /// Counts `n` entries added to every lookup structure.
    fn note_added(&self, n: usize) {
        let lookups = self.lookups().len() as i64;
        self.inner().entry_cnt += lookups * n as i64;
    }

    /// Counts `n` entries deleted.
    pub(crate) fn note_deleted(&self, n: usize) {
        self.inner().entry_cnt -= n as i64;
    }

    /// Whether an entry of some version has key `key`.
    pub(crate) fn has_key(&self, key: &str) -> bool {
        let i = self.inner();
        i.users.first().is_some_and(|m| m.has_key(key)) || i.staged.iter().any(|e| e.1 == key)
    }

    /// Adds `key` (and `value`, for a map) to version `ver` (the current
    /// one by default), all or none. HAProxy gives the entry to each
    /// lookup structure in turn, the value parsed before the key, even
    /// for a version requests do not see yet, and on the first refusal
    /// takes it back out of all: its count then has one more for each
    /// structure that took it and one fewer for the removal.
    pub(crate) fn add(
        &self,
        ver: Option<u32>,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), MapEditError> {
        let v = value.unwrap_or("");
        let refused = (self.lookups().iter().enumerate())
            .find_map(|(k, m)| Some((k, m.check_value(v).and(m.check_key(key)).err()?)));
        if let Some((k, e)) = refused {
            self.inner().entry_cnt += k as i64 - 1;
            return Err(e);
        }
        let (curr, _) = self.versions();
        let ver = ver.unwrap_or(curr);
        if ver != curr {
            self.note_added(1);
            self.stage(ver, key, value);
            return Ok(());
        }
        for m in self.users() {
            m.add(key, v)?;
        }
        self.note_added(1);
        Ok(())
    }

    /// The value of every entry of `key`, of every version: a value a
    /// map's output type refuses changes nothing.
    pub(crate) fn set(&self, key: Entry<'_>, value: &str) -> Result<(), MapEditError> {
        let users = self.users();
        if let Some(e) = users.iter().find_map(|m| m.check_value(value).err()) {
            return Err(e);
        }
        let mut found = false;
        for m in &users {
            found |= m.set(key, value).is_ok();
        }
        if let Entry::Key(key) = key {
            found |= self.set_staged(key, value);
        }
        if found {
            Ok(())
        } else {
            Err(MapEditError::NotFound)
        }
    }

    /// Deletes every entry of `key`, of every version; whether there was
    /// one.
    pub(crate) fn delete(&self, key: Entry<'_>) -> bool {
        let mut live = None;
        for m in self.users() {
            if let Ok(n) = m.delete(key) {
                live = live.or(Some(n));
            }
        }
        if let Some(n) = live {
            self.note_deleted(n);
        }
        let staged = match key {
            Entry::Key(key) => self.drop_staged(|_, k| k == key),
            // The entries of other versions are named by key only.
            Entry::Id(_) => 0,
        };
        live.is_some() || staged > 0
    }

    fn add_user(&self, map: Arc<Map>) {
        let c = class(&map);
        let mut i = self.inner();
        if !i.users.iter().any(|u| class(u) == c) {
            i.entry_cnt += map.len() as i64;
        }
        i.users.push(map);
    }
}

/// A configuration's references, by id.
#[derive(Debug, Default, Clone)]
pub(crate) struct PatRefs {
    refs: Vec<Arc<PatRef>>,
}

/// References say where patterns come from, not what the configuration
/// is: two configurations that read the same files are equal.
impl PartialEq for PatRefs {
    fn eq(&self, _: &PatRefs) -> bool {
        true
    }
}

impl PatRefs {
    /// The references with one of `flags`, by id.
    pub(crate) fn listed(&self, flags: u8) -> Vec<Arc<PatRef>> {
        (self.refs.iter())
            .filter(|r| r.flags() & flags != 0)
            .cloned()
            .collect()
    }

    /// The reference of pattern file `path` (the rule actions name files
    /// only).
    pub(crate) fn file(&self, path: &str) -> Option<Arc<PatRef>> {
        self.refs.iter().find(|r| r.path() == Some(path)).cloned()
    }

    /// The reference `name` names (`#<id>`, or a file), when it has one
    /// of `flags`.
    pub(crate) fn find(&self, name: &str, flags: u8) -> Option<Arc<PatRef>> {
        let r = match name.strip_prefix('#') {
            Some(id) => {
                let id = parse_id(id)?;
                self.refs.iter().find(|r| r.id() == id)
            }
            None => self.refs.iter().find(|r| r.path() == Some(name)),
        }?;
        (r.flags() & flags != 0).then(|| r.clone())
    }
}

/// An id as C's `strtol` reads it, the whole word: sign, digits; nothing
/// at all reads as 0, as in HAProxy.
fn parse_id(s: &str) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let t = s.trim_start_matches([' ', '\t']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // HAProxy keeps an int.
    let n: i32 = digits.parse().ok()?;
    Some(if neg { -(n as i64) } else { n as i64 })
}

/// What the parser of one configuration has created so far.
#[derive(Default)]
struct Collecting {
    refs: Vec<Arc<PatRef>>,
    /// Those of the formats HAProxy reads once the configuration is
    /// parsed (`log-format`, `unique-id-format`, a dynamic `use_backend`).
    late: Vec<Arc<PatRef>>,
    in_late: bool,
    /// The statement being read: (file, line).
    at: (String, u32),
}

thread_local! {
    static COLLECTING: RefCell<Option<Collecting>> = const { RefCell::new(None) };
    /// The references of the configuration being compiled into a
    /// snapshot: its formats, compiled again there, read the same maps.
    static RESOLVING: RefCell<Option<PatRefs>> = const { RefCell::new(None) };
}

/// Runs `f`, the parse of a format HAProxy reads once the configuration is
/// parsed: the references it creates are numbered after the others (and
/// after the two ACLs of HAProxy's internal HTTP client, which come in
/// between).
/// `set-map` and `core.set_map`: the value of `key` in the running
/// configuration's map file `file` (its entries' values when it has the
/// key, a new entry else).
pub(crate) fn set_map(file: &str, key: &str, value: &str) {
    let Some(r) = running().file(file) else {
        return;
    };
    if r.has_key(key) {
        let _ = r.set(super::pattern::Entry::Key(key), value);
    } else {
        let _ = r.add(None, key, Some(value));
    }
}

/// `del-map` and `core.del_map`: every entry of `key` in map file `file`.
pub(crate) fn del_map(file: &str, key: &str) {
    if let Some(r) = running().file(file) {
        r.delete(super::pattern::Entry::Key(key));
    }
}

pub(crate) fn late<R>(f: impl FnOnce() -> R) -> R {
    let set = |v: bool| {
        COLLECTING.with(|c| {
            if let Some(c) = c.borrow_mut().as_mut() {
                c.in_late = v;
            }
        })
    };
    set(true);
    let r = f();
    set(false);
    r
}

/// Runs `f`, which compiles the configuration `refs` came with: its map
/// files are the users those references already have.
pub(crate) fn resolving<R>(refs: &PatRefs, f: impl FnOnce() -> R) -> R {
    RESOLVING.with(|r| *r.borrow_mut() = Some(refs.clone()));
    let out = f();
    RESOLVING.with(|r| *r.borrow_mut() = None);
    out
}

/// HAProxy's internal HTTP client defines two ACLs once the
/// configuration is parsed: their ids come before the late references'.
const HTTPCLIENT_REFS: usize = 2;

/// Starts collecting the references of the configuration this thread
/// reads.
pub(crate) fn begin() {
    COLLECTING.with(|c| *c.borrow_mut() = Some(Collecting::default()));
}

/// The statement the parser is reading (where converters are used).
pub(crate) fn at(file: &str, line: u32) {
    COLLECTING.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            c.at = (file.to_string(), line);
        }
    });
}

/// Ends the collection: ids given as HAProxy gives them (an id a `-u`
/// asked for is kept; the others take the smallest free ones in order).
pub(crate) fn finish() -> PatRefs {
    let (refs, late) = COLLECTING
        .with(|c| c.borrow_mut().take())
        .map(|c| (c.refs, c.late))
        .unwrap_or_default();
    let taken: Vec<i64> = (refs.iter().chain(&late))
        .map(|r| r.id())
        .filter(|&i| i != -1)
        .collect();
    let mut next = 0;
    let mut free = || {
        while taken.contains(&next) {
            next += 1;
        }
        next += 1;
        next - 1
    };
    for r in refs.iter().filter(|r| r.id() == -1) {
        r.id.store(free(), Ordering::Relaxed);
    }
    if late.iter().any(|r| r.id() == -1) {
        for _ in 0..HTTPCLIENT_REFS {
            free();
        }
    }
    for r in late.iter().filter(|r| r.id() == -1) {
        r.id.store(free(), Ordering::Relaxed);
    }
    let mut refs = refs;
    refs.extend(late);
    refs.sort_by_key(|r| r.id());
    PatRefs { refs }
}

/// The user of file `path` for a converter or an ACL (`flag`): a new map
/// made by `load`, recorded with the file's reference (created on first
/// use). A user `alike` of the same file (same matcher, flags, output
/// and default) is shared instead. A file read with
/// values (`two_columns`: a map, an ACL's `-M`) cannot be read without
/// them too, nor the other way round (HAProxy's messages).
pub(crate) fn file_user(
    path: &str,
    flag: u8,
    two_columns: bool,
    load: impl FnOnce() -> Result<Map, String>,
    alike: impl Fn(&Map) -> bool,
) -> Result<Arc<Map>, String> {
    let found = COLLECTING.with(|c| {
        let c = c.borrow();
        let c = c.as_ref()?;
        let by = format!(
            "by {} at file '{}' line {}",
            if flag == MAP { "map" } else { "acl" },
            c.at.0,
            c.at.1
        );
        let existing = (c.refs.iter().chain(&c.late)).find(|r| r.path() == Some(path));
        Some((existing.cloned(), by, c.in_late))
    });
    let Some((existing, by, late)) = found else {
        // Compiling a snapshot: the configuration's own users, or a new
        // one of its reference (the CLI changes them together).
        let known = RESOLVING.with(|r| r.borrow().as_ref().and_then(|refs| refs.file(path)));
        if let Some(r) = known {
            if let Some(u) = r.users().into_iter().find(|u| alike(u)) {
                return Ok(u);
            }
            let map = Arc::new(load()?);
            r.add_user(map.clone());
            return Ok(map);
        }
        // Not reading a configuration (a unit test): nothing to record.
        return load().map(Arc::new);
    };
    if let Some(r) = existing {
        if !late {
            // HAProxy creates it here, its late use comes after.
            COLLECTING.with(|c| {
                if let Some(c) = c.borrow_mut().as_mut()
                    && let Some(at) = c.late.iter().position(|l| Arc::ptr_eq(l, &r))
                {
                    let moved = c.late.remove(at);
                    c.refs.push(moved);
                }
            });
        }
        if r.users()
            .first()
            .is_some_and(|u| u.has_values() != two_columns)
        {
            let (was, now) = if two_columns {
                ("one", "two")
            } else {
                ("two", "one")
            };
            return Err(format!(
                "The file \"{path}\" is already used as {was} column file and cannot be used by as {now} column file."
            ));
        }
        if let Some(u) = r.users().into_iter().find(|u| alike(u)) {
            r.extend(flag, &by, late);
            return Ok(u);
        }
        let map = Arc::new(load()?);
        r.extend(flag, &by, late);
        r.add_user(map.clone());
        return Ok(map);
    }
    let map = Arc::new(load()?);
    let r = Arc::new(PatRef {
        id: AtomicI64::new(-1),
        path: Some(path.to_string()),
        inner: Mutex::new(Inner {
            flags: flag,
            display: format!("pattern loaded from file '{path}'"),
            bys: Vec::new(),
            late_bys: Vec::new(),
            users: Vec::new(),
            entry_cnt: 0,
            curr_gen: 0,
            next_gen: 0,
            staged: Vec::new(),
        }),
    });
    r.extend(flag, &by, late);
    r.add_user(map.clone());
    COLLECTING.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            if c.in_late {
                c.late.push(r);
            } else {
                c.refs.push(r);
            }
        }
    });
    Ok(map)
}

impl PatRef {
    fn extend(&self, flag: u8, by: &str, late: bool) {
        let mut i = self.inner();
        i.flags |= flag;
        if late {
            i.late_bys.push(by.to_string());
        } else {
            i.bys.push(by.to_string());
        }
    }
}

/// Records the patterns written on an ACL line, whose criterion keyword
/// is `kw`, at `file`:`line`, under the id `-u` gave.
pub(crate) fn acl_line(map: &Arc<Map>, kw: &str, file: &str, line: u32, id: Option<i64>) {
    COLLECTING.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            let r = Arc::new(PatRef {
                id: AtomicI64::new(id.unwrap_or(-1)),
                path: None,
                inner: Mutex::new(Inner {
                    flags: ACL,
                    display: format!("acl '{kw}' file '{file}' line {line}"),
                    bys: Vec::new(),
                    late_bys: Vec::new(),
                    users: Vec::new(),
                    entry_cnt: 0,
                    curr_gen: 0,
                    next_gen: 0,
                    staged: Vec::new(),
                }),
            });
            r.add_user(map.clone());
            c.refs.push(r);
        }
    });
}

/// The running configuration's references.
static RUNNING: LazyLock<ArcSwap<PatRefs>> =
    LazyLock::new(|| ArcSwap::from_pointee(PatRefs::default()));

/// Makes `refs` the ones the CLI sees.
pub(crate) fn publish(refs: &PatRefs) {
    RUNNING.store(Arc::new(refs.clone()));
}

/// The running configuration's references.
pub(crate) fn running() -> Arc<PatRefs> {
    RUNNING.load_full()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_as_strtol_reads_them() {
        assert_eq!(parse_id(""), Some(0));
        assert_eq!(parse_id("12"), Some(12));
        assert_eq!(parse_id("+3"), Some(3));
        assert_eq!(parse_id("-1"), Some(-1));
        assert_eq!(parse_id("x"), None);
        assert_eq!(parse_id("1x"), None);
        assert_eq!(parse_id("+"), None);
    }
}
