//! The objects of one `cache` section, kept across reloads that leave the
//! section's settings alone (the registry holds them by name).
//!
//! The index is split in shards by key, each behind its own lock, so two
//! requests for different objects do not wait for each other, and a hit
//! takes one shard's read lock and nothing else. Memory is counted in
//! HAProxy's 1 KiB blocks against `total-max-size`, each object's size
//! measured as HAProxy measures it (so `show cache` says the same), and
//! the least recently used objects give their room to new ones: a hit
//! only writes its object's last-use tick; the list of objects by age is
//! a heap the fills and evictions keep (behind one lock, off the hit
//! path), an object whose tick moved since it was pushed being pushed
//! again when it comes out.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use bytes::Bytes;

use super::lock;
use crate::config::model::CacheSection;

/// HAProxy's cache block.
pub(crate) const BLOCK: u64 = 1024;

/// What HAProxy 2.6 counts for an object besides its blocks' content
/// (its `struct cache_entry` on x86-64, measured: `show cache` sizes less
/// the stored blocks).
pub(crate) const ENTRY_SIZE: u64 = 112;

/// The index's shards (a power of two).
const SHARDS: usize = 16;

/// A primary key: the SHA-1 of the request's URI (with its host).
pub(crate) type Key = [u8; 20];

/// A secondary key (`process-vary on`): the `Accept-Encoding` bitmap and
/// the `Referer`'s CRC, as HAProxy builds them.
pub(crate) type SecondaryKey = [u8; 8];

/// One stored response.
#[derive(Debug)]
pub(crate) struct Entry {
    /// A number of its own (insertion order; `show cache` prints it as
    /// HAProxy prints an address).
    pub(crate) seq: u64,
    pub(crate) key: Key,
    pub(crate) secondary: SecondaryKey,
    /// The `Vary` fields it depends on (0: none).
    pub(crate) signature: u32,
    /// The response head as stored: status line and fields, each line
    /// ending with CRLF, without the blank line.
    pub(crate) head: Bytes,
    /// Unix seconds: when it expires, when it was stored, and the age the
    /// server gave it (`Age`).
    pub(crate) expire: u64,
    pub(crate) stored_at: u64,
    pub(crate) age: u64,
    /// The ETag's value and the last-modified date (Unix seconds), for
    /// conditional requests.
    pub(crate) etag: Option<Box<[u8]>>,
    pub(crate) last_modified: i64,
    /// The body, once complete.
    body: OnceLock<Bytes>,
    /// HAProxy's measure of it, and its blocks.
    size: AtomicU64,
    blocks: AtomicU64,
    /// Last use (the cache's tick).
    last_used: AtomicU64,
    /// Hits being sent.
    pub(crate) readers: AtomicU32,
    /// Out of the index (evicted, expired, replaced).
    dead: AtomicBool,
}

impl Entry {
    pub(crate) fn body(&self) -> Option<&Bytes> {
        self.body.get()
    }

    pub(crate) fn is_complete(&self) -> bool {
        self.body.get().is_some()
    }

    pub(crate) fn expired(&self, now: u64) -> bool {
        self.expire <= now
    }

    pub(crate) fn size(&self) -> u64 {
        self.size.load(Relaxed)
    }

    pub(crate) fn blocks(&self) -> u64 {
        self.blocks.load(Relaxed)
    }

    /// The `Age` a hit carries.
    pub(crate) fn age_at(&self, now: u64) -> u64 {
        (now.saturating_sub(self.stored_at) + self.age).min(1 << 31)
    }
}

/// The index of one shard: the objects of each primary key (several with
/// `process-vary`).
type Shard = HashMap<Key, Vec<Arc<Entry>>>;

/// The objects by last use, oldest first.
#[derive(Default)]
struct Lru {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    by_seq: HashMap<u64, Arc<Entry>>,
}

/// One `cache` section's objects.
pub(crate) struct Cache {
    pub(crate) name: Arc<str>,
    pub(crate) settings: CacheSection,
    shards: Box<[RwLock<Shard>]>,
    lru: Mutex<Lru>,
    /// Blocks taken by objects, complete or being filled.
    used: AtomicU64,
    /// Blocks of the objects being filled or sent (HAProxy's "hot" rows:
    /// not available).
    hot: AtomicU64,
    seq: AtomicU64,
    tick: AtomicU64,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").field("name", &self.name).finish()
    }
}

/// What [`Cache::lookup`] found.
pub(crate) enum Lookup {
    Hit(Arc<Entry>),
    Miss,
}

/// A response being stored: its data are taken as they are relayed, and
/// the object is usable once [`Fill::complete`] is called. Dropped before
/// that, the object is removed.
pub(crate) struct Fill {
    cache: Arc<Cache>,
    entry: Arc<Entry>,
    data: Vec<u8>,
    done: bool,
}

impl Cache {
    pub(crate) fn new(settings: &CacheSection) -> Cache {
        Cache {
            name: Arc::from(settings.name.as_str()),
            settings: settings.clone(),
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            lru: Mutex::new(Lru::default()),
            used: AtomicU64::new(0),
            hot: AtomicU64::new(0),
            seq: AtomicU64::new(1),
            tick: AtomicU64::new(1),
        }
    }

    fn shard(&self, key: &Key) -> &RwLock<Shard> {
        &self.shards[key[1] as usize % SHARDS]
    }

    /// The object stored for `key`: if the first one is varied, the one
    /// whose secondary key `secondary` (built with its signature) matches.
    /// Incomplete and expired objects are misses (an expired one is
    /// removed).
    pub(crate) fn lookup(
        &self,
        key: &Key,
        now: u64,
        secondary: impl FnOnce(u32) -> Option<SecondaryKey>,
    ) -> Lookup {
        let found = {
            let shard = self.shard(key).read().unwrap_or_else(|p| p.into_inner());
            let Some(list) = shard.get(key) else {
                return Lookup::Miss;
            };
            let Some(first) = list.first() else {
                return Lookup::Miss;
            };
            if first.expired(now) {
                Err(first.clone())
            } else if !first.is_complete() {
                return Lookup::Miss;
            } else if first.signature == 0 {
                Ok(first.clone())
            } else {
                let Some(want) = secondary(first.signature) else {
                    return Lookup::Miss;
                };
                match list
                    .iter()
                    .find(|e| secondary_matches(&e.secondary, &want) && !e.expired(now))
                {
                    Some(e) if e.is_complete() => Ok(e.clone()),
                    _ => return Lookup::Miss,
                }
            }
        };
        match found {
            Ok(e) => {
                e.last_used.store(self.tick.fetch_add(1, Relaxed), Relaxed);
                Lookup::Hit(e)
            }
            Err(expired) => {
                self.remove(&expired);
                Lookup::Miss
            }
        }
    }

    /// A hit is being sent: its blocks are hot until [`Cache::done`].
    pub(crate) fn reading(&self, e: &Entry) {
        if e.readers.fetch_add(1, Relaxed) == 0 {
            self.hot.fetch_add(e.blocks(), Relaxed);
        }
    }

    pub(crate) fn done(&self, e: &Entry) {
        if e.readers.fetch_sub(1, Relaxed) == 1 {
            self.hot.fetch_sub(e.blocks(), Relaxed);
        }
    }

    /// Starts storing a response under `key` (and `secondary`, with the
    /// `Vary` `signature`): `None` when an object of the same keys is
    /// being filled already (HAProxy does not store twice at once), when
    /// the key has `max-secondary-entries` objects, or when there is no
    /// room. `size` is HAProxy's measure of the head.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn begin(
        self: &Arc<Self>,
        key: Key,
        (asked, secondary): (SecondaryKey, SecondaryKey),
        signature: u32,
        head: Bytes,
        times: (u64, u64, u64),
        validators: (Option<Box<[u8]>>, i64),
        size: u64,
    ) -> Option<Fill> {
        let (expire, stored_at, age) = times;
        let blocks = size.div_ceil(BLOCK);
        if size > u64::from(self.settings.max_object_size) || !self.reserve(blocks) {
            return None;
        }
        let entry = Arc::new(Entry {
            seq: self.seq.fetch_add(1, Relaxed),
            key,
            secondary,
            signature,
            head,
            expire,
            stored_at,
            age,
            etag: validators.0,
            last_modified: validators.1,
            body: OnceLock::new(),
            size: AtomicU64::new(size),
            blocks: AtomicU64::new(blocks),
            last_used: AtomicU64::new(0),
            readers: AtomicU32::new(0),
            dead: AtomicBool::new(false),
        });
        let mut replaced = None;
        let refused = {
            let mut shard = self.shard(&key).write().unwrap_or_else(|p| p.into_inner());
            let list = shard.entry(key).or_default();
            // The object this one replaces: the same key, or for a varied
            // one, the one the request's own secondary key would hit.
            let same = list.iter().position(|e| {
                signature == 0 && e.signature == 0
                    || (e.signature != 0 && secondary_matches(&e.secondary, &asked))
            });
            let live = list.iter().filter(|e| !e.expired(stored_at)).count() as u32;
            match same {
                Some(i) if !list[i].is_complete() && !list[i].expired(stored_at) => true,
                Some(i) => {
                    replaced = Some(list.remove(i));
                    list.push(entry.clone());
                    false
                }
                None if signature != 0 && live >= self.settings.max_secondary_entries => true,
                None => {
                    list.push(entry.clone());
                    false
                }
            }
        };
        if let Some(old) = replaced {
            self.forget(&old);
        }
        if refused {
            self.used.fetch_sub(blocks, Relaxed);
            return None;
        }
        self.hot.fetch_add(blocks, Relaxed);
        Some(Fill {
            cache: self.clone(),
            entry,
            data: Vec::new(),
            done: false,
        })
    }

    /// Takes `blocks` for an object, evicting the least recently used
    /// ones as needed; false when even an empty cache could not.
    fn reserve(&self, blocks: u64) -> bool {
        let max = u64::from(self.settings.max_blocks);
        if blocks > max {
            return false;
        }
        let mut lru = lock(&self.lru);
        // Each object comes out at most twice (once more if it was used or
        // being sent): past that, what is left is all being sent.
        let mut tries = 2 * lru.heap.len() + 1;
        while self.used.load(Relaxed) + blocks > max {
            tries = match tries.checked_sub(1) {
                Some(t) => t,
                None => return false,
            };
            let Some(Reverse((tick, seq))) = lru.heap.pop() else {
                return false;
            };
            let Some(e) = lru.by_seq.get(&seq).cloned() else {
                continue;
            };
            if e.dead.load(Relaxed) {
                lru.by_seq.remove(&seq);
                continue;
            }
            let now = e.last_used.load(Relaxed);
            // Used since it was pushed, or being sent: back in the heap
            // at its place.
            if now != tick || e.readers.load(Relaxed) > 0 {
                lru.heap.push(Reverse((now.max(tick + 1), seq)));
                continue;
            }
            lru.by_seq.remove(&seq);
            drop(lru);
            self.remove(&e);
            lru = lock(&self.lru);
        }
        self.used.fetch_add(blocks, Relaxed);
        true
    }

    /// Takes `e` out of the index and gives its blocks back.
    fn remove(&self, e: &Arc<Entry>) {
        {
            let mut shard = self
                .shard(&e.key)
                .write()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(list) = shard.get_mut(&e.key) {
                list.retain(|x| !Arc::ptr_eq(x, e));
                if list.is_empty() {
                    shard.remove(&e.key);
                }
            }
        }
        self.forget(e);
    }

    /// `e` is out of the index: its blocks are free (once).
    fn forget(&self, e: &Entry) {
        if !e.dead.swap(true, Relaxed) {
            self.used.fetch_sub(e.blocks(), Relaxed);
        }
    }

    /// A successful unsafe request (`POST`, `PUT`, `DELETE`...) on `key`:
    /// its objects go (RFC 7234 4.4, as HAProxy does).
    pub(crate) fn invalidate(&self, key: &Key) {
        let list = {
            let mut shard = self.shard(key).write().unwrap_or_else(|p| p.into_inner());
            shard.remove(key).unwrap_or_default()
        };
        for e in &list {
            self.forget(e);
        }
    }

    /// `show cache`'s view: the available blocks and every live object,
    /// by key as HAProxy's tree orders them (expired ones are removed).
    pub(crate) fn listing(&self, now: u64) -> (u64, Vec<Arc<Entry>>) {
        let mut all = Vec::new();
        let mut expired = Vec::new();
        for s in self.shards.iter() {
            let shard = s.read().unwrap_or_else(|p| p.into_inner());
            for list in shard.values() {
                for e in list {
                    if e.expired(now) {
                        expired.push(e.clone());
                    } else {
                        all.push(e.clone());
                    }
                }
            }
        }
        for e in &expired {
            self.remove(e);
        }
        all.sort_by_key(|e| (key_u32(&e.key), e.seq));
        let max = u64::from(self.settings.max_blocks);
        (max.saturating_sub(self.hot.load(Relaxed)), all)
    }
}

/// The key as HAProxy's tree orders and `show cache` prints it: its first
/// four bytes, read in the machine's order.
pub(crate) fn key_u32(key: &Key) -> u32 {
    u32::from_ne_bytes([key[0], key[1], key[2], key[3]])
}

/// HAProxy's comparison of secondary keys: the `Accept-Encoding` part
/// matches when every encoding of the stored response is accepted (and
/// the response's has no unknown one), the rest byte for byte.
fn secondary_matches(stored: &SecondaryKey, new: &SecondaryKey) -> bool {
    let r = u32::from_ne_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let n = u32::from_ne_bytes([new[0], new[1], new[2], new[3]]);
    const OTHER: u32 = 1 << 10;
    r & OTHER == 0 && r & n == r && stored[4..] == new[4..]
}

impl Fill {
    /// Takes the next piece of the body; false (and the object dropped)
    /// when it grows past `max-object-size` or finds no room.
    pub(crate) fn take(&mut self, data: &[u8]) -> bool {
        let e = &self.entry;
        if e.dead.load(Relaxed) {
            return false;
        }
        // HAProxy stores each block of data with its 4-byte header.
        let size = e.size() + 4 + data.len() as u64;
        if size > u64::from(self.cache.settings.max_object_size) {
            return false;
        }
        let blocks = size.div_ceil(BLOCK);
        let more = blocks - e.blocks();
        if more > 0 {
            if !self.cache.reserve(more) {
                return false;
            }
            e.blocks.fetch_add(more, Relaxed);
            self.cache.hot.fetch_add(more, Relaxed);
        }
        e.size.store(size, Relaxed);
        self.data.extend_from_slice(data);
        true
    }

    /// The body is all here (`trailers`: HAProxy's measure of a chunked
    /// body's end): the object is served from now on.
    pub(crate) fn complete(&mut self, end_size: u64) -> bool {
        let e = self.entry.clone();
        if self.done || e.dead.load(Relaxed) {
            return false;
        }
        if end_size > 0 && !self.take_end(end_size) {
            return false;
        }
        let _ = e.body.set(Bytes::from(std::mem::take(&mut self.data)));
        let tick = self.cache.tick.fetch_add(1, Relaxed);
        e.last_used.store(tick, Relaxed);
        {
            let mut lru = lock(&self.cache.lru);
            lru.heap.push(Reverse((tick, e.seq)));
            lru.by_seq.insert(e.seq, e.clone());
        }
        self.done = true;
        self.cache.hot.fetch_sub(e.blocks(), Relaxed);
        true
    }

    /// The end of a chunked body, counted as HAProxy stores it.
    fn take_end(&mut self, n: u64) -> bool {
        let e = &self.entry;
        let size = e.size() + n;
        if size > u64::from(self.cache.settings.max_object_size) {
            return false;
        }
        let more = size.div_ceil(BLOCK) - e.blocks();
        if more > 0 {
            if !self.cache.reserve(more) {
                return false;
            }
            e.blocks.fetch_add(more, Relaxed);
            self.cache.hot.fetch_add(more, Relaxed);
        }
        e.size.store(size, Relaxed);
        true
    }
}

impl Drop for Fill {
    fn drop(&mut self) {
        if !self.done {
            self.cache.hot.fetch_sub(self.entry.blocks(), Relaxed);
            self.cache.remove(&self.entry);
        }
    }
}

impl crate::state::Registry {
    /// The cache named `name` with these settings, if an earlier
    /// generation made it.
    pub(crate) fn find_cache(&self, settings: &CacheSection) -> Option<Arc<Cache>> {
        lock(&self.caches)
            .get(&settings.name)
            .filter(|c| c.settings == *settings)
            .cloned()
    }

    /// Puts `cache` in place of any of its name.
    pub(crate) fn set_cache(&self, cache: Arc<Cache>) {
        lock(&self.caches).insert(cache.name.to_string(), cache);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(mb: u32) -> Arc<Cache> {
        let mut s = CacheSection::new(
            "c".into(),
            crate::loc::Loc {
                file: Arc::from(""),
                line: 0,
            },
        );
        s.max_blocks = mb * 1024;
        s.max_object_size = mb * 512 * 1024;
        Arc::new(Cache::new(&s))
    }

    fn store(c: &Arc<Cache>, k: u8, len: usize) -> bool {
        let mut key = [0u8; 20];
        key[0] = k;
        key[1] = k;
        let Some(mut f) = c.begin(
            key,
            ([0; 8], [0; 8]),
            0,
            Bytes::from_static(b"HTTP/1.1 200 OK\r\n"),
            (u64::MAX, 0, 0),
            (None, 0),
            200,
        ) else {
            return false;
        };
        f.take(&vec![b'x'; len]) && f.complete(0)
    }

    fn hit(c: &Cache, k: u8) -> bool {
        let mut key = [0u8; 20];
        key[0] = k;
        key[1] = k;
        matches!(c.lookup(&key, 1, |_| None), Lookup::Hit(_))
    }

    /// The least recently used object goes first, a recent hit keeps one.
    #[test]
    fn evicts_the_least_recently_used() {
        let c = cache(1);
        // Four objects of 300 KiB fill the 1 MiB (1024 blocks) but one.
        for k in 1..=3 {
            assert!(store(&c, k, 300 * 1024));
        }
        assert!(hit(&c, 1));
        assert!(store(&c, 4, 300 * 1024));
        assert!(hit(&c, 1), "used last, kept");
        assert!(!hit(&c, 2), "least recently used, evicted");
        assert!(hit(&c, 3) && hit(&c, 4));
        assert!(c.used.load(Relaxed) <= 1024);
    }

    /// An object being filled is a miss and cannot be filled twice; a
    /// fill dropped before its end leaves nothing.
    #[test]
    fn one_fill_at_a_time() {
        let c = cache(1);
        let key = [7u8; 20];
        let begin = || {
            c.begin(
                key,
                ([0; 8], [0; 8]),
                0,
                Bytes::from_static(b"HTTP/1.1 200 OK\r\n"),
                (u64::MAX, 0, 0),
                (None, 0),
                200,
            )
        };
        let f = begin().expect("first fill");
        assert!(begin().is_none(), "a second fill of the same key");
        assert!(matches!(c.lookup(&key, 1, |_| None), Lookup::Miss));
        drop(f);
        assert_eq!(c.used.load(Relaxed), 0);
        let mut f = begin().expect("after the first was dropped");
        assert!(f.take(b"abc"));
        assert!(f.complete(0));
        assert!(matches!(c.lookup(&key, 1, |_| None), Lookup::Hit(_)));
    }
}
