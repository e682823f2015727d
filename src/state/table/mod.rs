//! Stick tables: entries keyed by an address, an integer, a string or a
//! binary block, each holding the data types its table stores (counters,
//! tags, frequency counters, the server it sticks to), as HAProxy 2.6
//! keeps them, with its expiry and its eviction of the oldest entries when
//! the table is full.
//!
//! The store takes no lock shared by the whole table on a lookup: keys are
//! spread over shards, each a read-write lock over a hash index of slot
//! numbers, and a lookup takes one shard's read lock; the data of an
//! entry are atomic words updated in place. The entries themselves are
//! rows of a slab allocated in chunks as the table fills (no allocation
//! per entry), a row being the entry's header, key and data (see
//! `schema`). Only adding and removing entries take the table's
//! allocation lock, before a shard's write lock (never the other way).
//!
//! A stream that tracks an entry holds a reference on it ([`Held`]): an
//! entry referenced is never removed, by expiry, eviction or the CLI.
//!
//! For the peers protocol, a table declared with `peers` keeps its local
//! updates in order ([`Table::updates_after`]) and takes a peer's
//! entries ([`Table::apply_remote`]).

pub(crate) mod entry;
pub(crate) mod freq;
pub(crate) mod key;
pub(crate) mod registry;
pub(crate) mod schema;
pub(crate) mod track;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use hashbrown::HashTable;

use crate::config::model::TableDef;
pub(crate) use entry::Entry;
pub(crate) use key::KeyWords;
use schema::{H_EXPIRE, H_REFS, Schema};

/// Shards of the key index: enough that threads rarely meet on one.
const SHARDS: usize = 64;
/// Entries per chunk of the slab, at most.
const CHUNK: usize = 4096;
/// HAProxy's margin for the remote updates in the sequence numbers.
const REMOTE: u32 = 1 << 31;

/// One stick table.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) def: TableDef,
    pub(crate) schema: Schema,
    shards: Box<[RwLock<HashTable<u32>>]>,
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    chunk_slots: usize,
    alloc: Mutex<Alloc>,
    used: AtomicU32,
    /// The last update sequence given (HAProxy's `update`).
    update: AtomicU32,
    /// The entries by sequence of their last update, for the peers of a
    /// table declared with `peers`.
    updates: Option<Mutex<BTreeMap<u32, u32>>>,
    seed: u64,
}

/// What adding and removing entries share.
#[derive(Debug, Default)]
struct Alloc {
    /// Slots freed, to be used again.
    free: Vec<u32>,
    /// Slots never used yet start here.
    next: u32,
    /// The entries by the date they were queued for expiration under,
    /// the oldest first (HAProxy's `exps` tree): keyed by that date on 64
    /// bits then the order they were queued in, holding the slot. An
    /// entry touched since it was queued is queued again under its new
    /// date when found; a slot freed or used again leaves a stale item
    /// behind, dropped when reached.
    queue: BTreeMap<u64, u32>,
    /// The order of the last item queued.
    order: u32,
}

/// The low bits of a queue key: the order items were queued in.
const ORDER_BITS: u32 = 20;

/// The key of an item queued now (`now`: the tables' clock on 32 and 64
/// bits) for `date` (32 bits, within 2^31 ms of now).
fn queue_key(a: &mut Alloc, date: u32, now: (u32, u64)) -> u64 {
    let d = now
        .1
        .wrapping_add_signed(i64::from(date.wrapping_sub(now.0) as i32));
    a.order = a.order.wrapping_add(1);
    d << ORDER_BITS | u64::from(a.order & ((1 << ORDER_BITS) - 1))
}

/// The date of a queue key, on the tables' 32-bit clock.
fn key_date(k: u64) -> u32 {
    ((k >> ORDER_BITS) as u32).max(1)
}

/// Why an entry could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The table is full and keeps its entries (`nopurge`), or all the
    /// oldest are in use.
    Full,
}

impl Table {
    pub(crate) fn new(def: TableDef) -> Table {
        let schema = Schema::of(&def);
        let size = def.size.max(1) as usize;
        let chunk_slots = size.min(CHUNK);
        let chunks = (0..size.div_ceil(chunk_slots)).map(|_| OnceLock::new());
        let updates = def.peers.is_some().then(|| Mutex::new(BTreeMap::new()));
        Table {
            schema,
            shards: (0..SHARDS).map(|_| RwLock::new(HashTable::new())).collect(),
            chunks: chunks.collect(),
            chunk_slots,
            alloc: Mutex::new(Alloc::default()),
            used: AtomicU32::new(0),
            update: AtomicU32::new(0),
            updates,
            seed: random_seed(),
            def,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.def.name
    }

    /// Entries held now.
    pub(crate) fn used(&self) -> u32 {
        self.used.load(Relaxed)
    }

    /// The words of slot `slot` (empty for a slot never allocated, which
    /// no caller has).
    pub(crate) fn words(&self, slot: u32) -> &[AtomicU64] {
        let slot = slot as usize;
        let Some(chunk) = self
            .chunks
            .get(slot / self.chunk_slots)
            .and_then(OnceLock::get)
        else {
            return &[];
        };
        let at = (slot % self.chunk_slots) * self.schema.stride;
        chunk.get(at..at + self.schema.stride).unwrap_or(&[])
    }

    fn key_of(&self, slot: u32) -> impl Iterator<Item = u64> + '_ {
        let w = self.words(slot);
        let k = schema::HEADER;
        w.get(k..k + self.schema.key_words)
            .unwrap_or(&[])
            .iter()
            .map(|a| a.load(Relaxed))
    }

    fn hash(&self, key: &[u64]) -> u64 {
        let mut bytes = [0u8; 64];
        if key.len() <= 8 {
            for (i, w) in key.iter().enumerate() {
                bytes[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
            }
            return xxhash_rust::xxh3::xxh3_64_with_seed(&bytes[..key.len() * 8], self.seed);
        }
        let v: Vec<u8> = key.iter().flat_map(|w| w.to_le_bytes()).collect();
        xxhash_rust::xxh3::xxh3_64_with_seed(&v, self.seed)
    }

    fn hash_slot(&self, slot: u32) -> u64 {
        let k: Vec<u64> = self.key_of(slot).collect();
        self.hash(&k)
    }

    fn shard(&self, hash: u64) -> &RwLock<HashTable<u32>> {
        &self.shards[(hash >> 58) as usize % SHARDS]
    }

    fn same_key(&self, slot: u32, key: &[u64]) -> bool {
        self.key_of(slot).eq(key.iter().copied())
    }

    /// Runs `f` on the entry of `key`, if there is one, without touching
    /// it (a read, as the `table_*` converters and `src_*` fetches do).
    pub(crate) fn with<R>(&self, key: &KeyWords, f: impl FnOnce(Entry<'_>) -> R) -> Option<R> {
        let k = key.words();
        let h = self.hash(k);
        let shard = read(self.shard(h));
        let &slot = shard.find(h, |&s| self.same_key(s, k))?;
        Some(f(Entry { table: self, slot }))
    }

    /// The entry of `key`, referenced, if there is one.
    pub(crate) fn find(self: &Arc<Self>, key: &KeyWords) -> Option<Held> {
        let k = key.words();
        let h = self.hash(k);
        let shard = read(self.shard(h));
        let &slot = shard.find(h, |&s| self.same_key(s, k))?;
        self.words(slot)[H_REFS].fetch_add(1, Relaxed);
        Some(Held {
            table: self.clone(),
            slot,
        })
    }

    /// The entry of `key`, made when there is none (HAProxy's
    /// `stktable_get_entry`), referenced; `Err` when the table is full and
    /// keeps its entries, or its oldest are all in use.
    pub(crate) fn get_or_create(self: &Arc<Self>, key: &KeyWords) -> Result<Held, Full> {
        if let Some(h) = self.find(key) {
            return Ok(h);
        }
        self.made(key, freq::now64())
    }

    /// [`get_or_create`](Self::get_or_create) at `now` (the tables' clock
    /// on 64 bits, read by the caller, who touches the entry at the same
    /// date: HAProxy reads its clock once per turn of its loop, so that
    /// an entry made and touched by one action keeps its first date).
    pub(crate) fn get_or_create_at(
        self: &Arc<Self>,
        key: &KeyWords,
        now: u64,
    ) -> Result<Held, Full> {
        if let Some(h) = self.find(key) {
            return Ok(h);
        }
        self.made(key, now)
    }

    fn made(self: &Arc<Self>, key: &KeyWords, now: u64) -> Result<Held, Full> {
        let slot = self.create(key.words(), now)?;
        Ok(Held {
            table: self.clone(),
            slot,
        })
    }

    /// Adds the entry of `key` (or finds it, if another thread just did),
    /// with one reference.
    fn create(&self, k: &[u64], now64: u64) -> Result<u32, Full> {
        let now = now64 as u32;
        let mut a = lock(&self.alloc);
        if self.used() >= self.def.size
            && (self.def.nopurge || self.trash_oldest(&mut a, (self.def.size >> 8) + 1) == 0)
        {
            return Err(Full::Full);
        }
        let slot = match a.free.pop() {
            Some(s) => s,
            None => {
                let s = a.next;
                let chunk = s as usize / self.chunk_slots;
                let cell = self.chunks.get(chunk).ok_or(Full::Full)?;
                cell.get_or_init(|| {
                    (0..self.chunk_slots * self.schema.stride)
                        .map(|_| AtomicU64::new(0))
                        .collect()
                });
                a.next += 1;
                s
            }
        };
        let exp = freq::tick_add(now, self.def.expire);
        let w = self.words(slot);
        for x in w {
            x.store(0, Relaxed);
        }
        w[H_EXPIRE].store(u64::from(exp), Relaxed);
        w[H_REFS].store(1 | u64::from(exp) << 32, Relaxed);
        for (i, &x) in k.iter().enumerate() {
            w[schema::HEADER + i].store(x, Relaxed);
        }
        let h = self.hash(k);
        let mut shard = write(self.shard(h));
        if let Some(&other) = shard.find(h, |&s| self.same_key(s, k)) {
            // Made meanwhile by another thread: that one is used.
            self.words(other)[H_REFS].fetch_add(1, Relaxed);
            w[H_REFS].store(0, Relaxed);
            a.free.push(slot);
            return Ok(other);
        }
        shard.insert_unique(h, slot, |&s| self.hash_slot(s));
        drop(shard);
        let key = queue_key(&mut a, exp, (now, now64));
        a.queue.insert(key, slot);
        self.used.fetch_add(1, Relaxed);
        Ok(slot)
    }

    /// Removes an unreferenced entry (the allocation lock held): out of
    /// its shard, its slot free.
    fn kill(&self, a: &mut Alloc, slot: u32) -> bool {
        let w = self.words(slot);
        let k: Vec<u64> = self.key_of(slot).collect();
        let h = self.hash(&k);
        let mut shard = write(self.shard(h));
        if w[H_REFS].load(Relaxed) as u32 != 0 {
            return false;
        }
        if let Ok(e) = shard.find_entry(h, |&s| s == slot) {
            e.remove();
        }
        drop(shard);
        let seq = (w[H_EXPIRE].load(Relaxed) >> 32) as u32;
        w[H_REFS].store(0, Relaxed);
        if let Some(u) = &self.updates {
            let mut u = lock(u);
            if u.get(&seq) == Some(&slot) {
                u.remove(&seq);
            }
        }
        a.free.push(slot);
        self.used.fetch_sub(1, Relaxed);
        true
    }

    /// Whether a queue item still stands for its slot's entry.
    fn queued(&self, slot: u32, date: u32) -> bool {
        (self.words(slot)[H_REFS].load(Relaxed) >> 32) as u32 == date
    }

    /// Queues again an entry touched since it was queued, under its new
    /// date `exp`; returns the new key.
    fn requeue(&self, a: &mut Alloc, slot: u32, exp: u32, now: (u32, u64)) -> u64 {
        let exp = exp.max(1);
        let r = &self.words(slot)[H_REFS];
        let refs = r.load(Relaxed) as u32;
        r.store(u64::from(refs) | u64::from(exp) << 32, Relaxed);
        let key = queue_key(a, exp, now);
        a.queue.insert(key, slot);
        key
    }

    /// HAProxy's `__stktable_trash_oldest`: removes up to `batch` of the
    /// oldest unreferenced entries, looking at no more than twice as
    /// many; returns how many went.
    fn trash_oldest(&self, a: &mut Alloc, batch: u32) -> u32 {
        let now64 = freq::now64();
        let now = (now64 as u32, now64);
        let mut budget = batch as i64 * 2;
        let mut done = 0;
        let mut from = 0;
        while done < batch {
            let Some((&k, &slot)) = a.queue.range(from..).next() else {
                break;
            };
            from = k + 1;
            let date = key_date(k);
            if !self.queued(slot, date) {
                a.queue.remove(&k);
                continue;
            }
            budget -= 1;
            if budget < 0 {
                break;
            }
            let w = self.words(slot);
            // A referenced entry stays where it is.
            if w[H_REFS].load(Relaxed) as u32 != 0 {
                continue;
            }
            let exp = w[H_EXPIRE].load(Relaxed) as u32;
            if exp != date {
                a.queue.remove(&k);
                // Looked at again in its turn, as HAProxy does.
                from = from.min(self.requeue(a, slot, exp, now));
                continue;
            }
            if self.kill(a, slot) {
                a.queue.remove(&k);
                done += 1;
            }
        }
        done
    }

    /// HAProxy's `stktable_trash_expired`: removes the entries whose date
    /// has passed, unless referenced; returns the date of the next to
    /// expire, if any.
    pub(crate) fn trash_expired(&self) -> Option<u32> {
        let now64 = freq::now64();
        let now = now64 as u32;
        let mut a = lock(&self.alloc);
        let mut from = 0;
        while let Some((&k, &slot)) = a.queue.range(from..).next() {
            from = k + 1;
            let date = key_date(k);
            if !self.queued(slot, date) {
                a.queue.remove(&k);
                continue;
            }
            if !freq::expired(date, now) {
                return Some(date);
            }
            let w = self.words(slot);
            if w[H_REFS].load(Relaxed) as u32 != 0 {
                continue;
            }
            let exp = w[H_EXPIRE].load(Relaxed) as u32;
            if !freq::expired(exp, now) {
                a.queue.remove(&k);
                self.requeue(&mut a, slot, exp, (now, now64));
                continue;
            }
            if self.kill(&mut a, slot) {
                a.queue.remove(&k);
            }
        }
        None
    }

    /// Removes the entry of `slot` now if it has expired and nothing
    /// references it (HAProxy's `stksess_kill_if_expired`).
    fn kill_if_expired(&self, slot: u32) {
        if self.def.expire == 0 {
            return;
        }
        let w = self.words(slot);
        if !freq::expired(w[H_EXPIRE].load(Relaxed) as u32, freq::coarse_ms()) {
            return;
        }
        let mut a = lock(&self.alloc);
        if w[H_REFS].load(Relaxed) as u32 == 0 && (w[H_REFS].load(Relaxed) >> 32) != 0 {
            self.kill(&mut a, slot);
        }
    }

    /// Gives the entry a new expiration date and, for a table with peers,
    /// a new update sequence (HAProxy's `stktable_touch_local`).
    pub(crate) fn touch(&self, slot: u32) {
        self.touch_at(slot, freq::now_ms());
    }

    /// [`touch`](Self::touch) at `now`, read by the caller.
    pub(crate) fn touch_at(&self, slot: u32, now: u32) {
        let exp = freq::tick_add(now, self.def.expire);
        self.touch_with(slot, exp, true);
    }

    fn touch_with(&self, slot: u32, exp: u32, local: bool) {
        let w = &self.words(slot)[H_EXPIRE];
        let Some(updates) = &self.updates else {
            w.store(u64::from(exp), Relaxed);
            return;
        };
        let mut u = lock(updates);
        let old = (w.load(Relaxed) >> 32) as u32;
        if u.get(&old) == Some(&slot) {
            u.remove(&old);
        }
        let n = self.update.fetch_add(1, Relaxed).wrapping_add(1);
        let seq = if local { n } else { n.wrapping_add(REMOTE) };
        u.insert(seq, slot);
        w.store(u64::from(exp) | u64::from(seq) << 32, Relaxed);
    }

    /// Every entry's slot, in the order of their keys' bytes (HAProxy's
    /// trees), for `show table` and `clear table`.
    pub(crate) fn slots_by_key(&self) -> Vec<(Vec<u8>, u32)> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            let shard = read(shard);
            for &slot in shard.iter() {
                let k = key::bytes_of(self.key_of(slot), self.def.key);
                all.push((k, slot));
            }
        }
        all.sort();
        all
    }

    /// Removes the entry of `key` (`clear table <t> key <k>`): `Ok(false)`
    /// when there is none, `Err` when it is in use.
    pub(crate) fn remove(&self, key: &KeyWords) -> Result<bool, InUse> {
        let k = key.words();
        let h = self.hash(k);
        let slot = match read(self.shard(h)).find(h, |&s| self.same_key(s, k)) {
            Some(&s) => s,
            None => return Ok(false),
        };
        let mut a = lock(&self.alloc);
        if !self.same_key(slot, k) || (self.words(slot)[H_REFS].load(Relaxed) >> 32) == 0 {
            return Ok(false);
        }
        if self.kill(&mut a, slot) {
            Ok(true)
        } else {
            Err(InUse)
        }
    }

    /// Removes the entry of slot `slot` if nothing references it
    /// (`clear table <t>`, entry by entry).
    pub(crate) fn remove_slot(&self, slot: u32) -> bool {
        let mut a = lock(&self.alloc);
        if (self.words(slot)[H_REFS].load(Relaxed) >> 32) == 0 {
            return false;
        }
        self.kill(&mut a, slot)
    }

    /// Removes the entry of slot `slot` if it has expired and nothing
    /// references it (what `show table` does to what it lists).
    pub(crate) fn remove_if_expired(&self, slot: u32) {
        self.kill_if_expired(slot);
    }

    /// The entries updated here since sequence `seq` (exclusive), in the
    /// order of their updates, for a peer: the sequence and the entry's
    /// key and data as [`Entry::snapshot`] gives them. Empty for a table
    /// without peers.
    #[allow(dead_code)] // the peers layer's (tested below)
    pub(crate) fn updates_after(&self, seq: u32, max: usize) -> Vec<(u32, Vec<u8>, entry::Values)> {
        let Some(u) = &self.updates else {
            return Vec::new();
        };
        let picked: Vec<(u32, u32)> = {
            let u = lock(u);
            u.range(seq.wrapping_add(1)..)
                .filter(|(s, _)| **s < REMOTE)
                .take(max)
                .map(|(s, slot)| (*s, *slot))
                .collect()
        };
        // Read under the shard lock of each key so that a slot freed
        // meanwhile is not read as another entry.
        picked
            .into_iter()
            .filter_map(|(s, slot)| {
                let key = key::KeyWords::of(
                    &key::bytes_of(self.key_of(slot), self.def.key),
                    self.schema.key_words,
                );
                self.with(&key, |e| (e.slot == slot).then(|| e.snapshot()))
                    .flatten()
                    .map(|v| {
                        (
                            s,
                            key::bytes_of(key.words().iter().copied(), self.def.key),
                            v,
                        )
                    })
            })
            .collect()
    }

    /// The last local update sequence given.
    #[allow(dead_code)] // the peers layer's (tested below)
    pub(crate) fn last_update(&self) -> u32 {
        self.update.load(Relaxed)
    }

    /// Takes an entry a peer sent: made if missing, its data set from
    /// `values` (the types this table stores; others ignored), its
    /// expiration `expire_ms` from now, its update marked remote (never
    /// sent back). `Err` when the table is full.
    #[allow(dead_code)] // the peers layer's (tested below)
    pub(crate) fn apply_remote(
        self: &Arc<Self>,
        key: &[u8],
        values: &entry::Values,
        expire_ms: u32,
    ) -> Result<(), Full> {
        let k = key::KeyWords::of(key, self.schema.key_words);
        let now = freq::now64();
        let held = self.get_or_create_at(&k, now)?;
        held.entry().restore(values);
        let exp = freq::tick_add(now as u32, expire_ms);
        self.touch_with(held.slot, exp, false);
        Ok(())
    }
}

/// Starts the task that removes `t`'s entries as they expire (HAProxy's
/// `process_table_expire`), for a table with `expire`, when a runtime
/// runs; it ends with the table.
pub(crate) fn start_expiry(t: &Arc<Table>) {
    if t.def.expire == 0 {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(t);
    let period = std::time::Duration::from_millis(u64::from(t.def.expire));
    rt.spawn(async move {
        loop {
            let wait = {
                let Some(t) = weak.upgrade() else { return };
                match t.trash_expired() {
                    Some(next) => std::time::Duration::from_millis(u64::from(
                        next.wrapping_sub(freq::now_ms()).min(i32::MAX as u32),
                    )),
                    None => period,
                }
            };
            // At least a millisecond: a date just reached is past next time.
            tokio::time::sleep(wait.max(std::time::Duration::from_millis(1))).await;
        }
    });
}

/// `clear table <t> key <k>` on an entry a stream tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InUse;

/// A reference on an entry: it stays in its table while held. Dropping
/// it releases the entry, which goes at once if it expired meanwhile.
#[derive(Debug)]
pub(crate) struct Held {
    table: Arc<Table>,
    slot: u32,
}

impl Held {
    pub(crate) fn entry(&self) -> Entry<'_> {
        Entry {
            table: &self.table,
            slot: self.slot,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let r = &self.table.words(self.slot)[H_REFS];
        if r.fetch_sub(1, Relaxed) as u32 == 1 {
            self.table.kill_if_expired(self.slot);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// A seed for the key hashes, different in each process (keys come from
/// clients).
fn random_seed() -> u64 {
    crate::sample::random::next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{KeyType, SrvKey, Stored};
    use crate::sample::stick::{Counter, DataType};
    use crate::sample::value::Sample;

    fn table(size: u32, expire: u32, nopurge: bool) -> Arc<Table> {
        Arc::new(Table::new(TableDef {
            name: "t".into(),
            key: KeyType::Ip,
            size,
            expire,
            nopurge,
            peers: None,
            srvkey: SrvKey::Name,
            store: vec![
                Stored {
                    data: DataType::Gpc0,
                    count: 1,
                    period: 0,
                },
                Stored {
                    data: DataType::HttpReqRate,
                    count: 1,
                    period: 10_000,
                },
            ],
            loc: crate::loc::Loc {
                file: Arc::from("t"),
                line: 1,
            },
        }))
    }

    fn key(t: &Table, last: u8) -> KeyWords {
        key::from_sample(
            Sample::Ipv4(std::net::Ipv4Addr::new(10, 0, 0, last)),
            t.def.key,
        )
        .unwrap()
    }

    fn keys(t: &Table) -> Vec<u8> {
        t.slots_by_key().iter().map(|(k, _)| k[3]).collect()
    }

    /// The row of `type ip store http_req_rate(10s)` (the documented
    /// memory figure): the header's two words, the key's, the counter's
    /// two; with the hash index and the expiration queue, 80 bytes an
    /// entry measured.
    #[test]
    fn rate_limit_rows_are_five_words() {
        let mut def = table(1, 0, false).def.clone();
        def.store.retain(|s| s.data == DataType::HttpReqRate);
        assert_eq!(Schema::of(&def).stride, 5);
    }

    #[test]
    fn entries_are_made_found_and_counted() {
        let t = table(10, 0, false);
        let h = t.get_or_create(&key(&t, 1)).unwrap();
        assert_eq!(h.entry().inc_gpc(Counter::Gpc0), Some(1));
        assert_eq!(h.entry().inc_gpc(Counter::Gpc0), Some(2));
        h.entry().add(DataType::HttpReqRate, 0, 1);
        assert_eq!(t.used(), 1);
        let again = t.get_or_create(&key(&t, 1)).unwrap();
        assert_eq!(again.entry().slot, h.entry().slot);
        assert_eq!(again.entry().refs(), 2);
        assert_eq!(
            t.with(&key(&t, 1), |e| e.counter(Counter::Gpc0)),
            Some(Some(2))
        );
        assert_eq!(
            t.with(&key(&t, 1), |e| e.counter(Counter::HttpReqRate)),
            Some(Some(1))
        );
        // Not stored: no value.
        assert_eq!(
            t.with(&key(&t, 1), |e| e.counter(Counter::ConnCnt)),
            Some(None)
        );
        assert!(t.with(&key(&t, 2), |_| ()).is_none());
    }

    #[test]
    fn a_full_table_drops_its_oldest_unreferenced_entries() {
        let t = table(4, 0, false);
        for i in 1..=4 {
            drop(t.get_or_create(&key(&t, i)).unwrap());
        }
        // 1 is touched after the others: 2 is now the oldest.
        let held3 = t.get_or_create(&key(&t, 3)).unwrap();
        freq::skip(2);
        t.touch(t.find(&key(&t, 1)).unwrap().entry().slot);
        drop(t.get_or_create(&key(&t, 5)).unwrap());
        assert_eq!(keys(&t), [1, 3, 4, 5]);
        // 3 is referenced: 4 goes instead.
        drop(t.get_or_create(&key(&t, 6)).unwrap());
        assert_eq!(keys(&t), [1, 3, 5, 6]);
        drop(held3);
        assert_eq!(t.used(), 4);
    }

    /// An entry used again before newer ones were made is still older
    /// than they are: HAProxy queues it again by its date, not last.
    #[test]
    fn a_full_table_drops_by_date_of_last_use() {
        let t = table(3, 0, false);
        drop(t.get_or_create(&key(&t, 1)).unwrap());
        freq::skip(2);
        drop(t.get_or_create(&key(&t, 2)).unwrap());
        // 1 used again, then 3 made: 1 (used at 2) is older than 3.
        freq::skip(2);
        t.touch(t.find(&key(&t, 1)).unwrap().entry().slot);
        freq::skip(2);
        drop(t.get_or_create(&key(&t, 3)).unwrap());
        freq::skip(2);
        // Full: the one used longest ago, 2, goes; then 1.
        drop(t.get_or_create(&key(&t, 4)).unwrap());
        assert_eq!(keys(&t), [1, 3, 4]);
        drop(t.get_or_create(&key(&t, 5)).unwrap());
        assert_eq!(keys(&t), [3, 4, 5]);
    }

    #[test]
    fn nopurge_refuses_new_entries_when_full() {
        let t = table(2, 0, true);
        drop(t.get_or_create(&key(&t, 1)).unwrap());
        drop(t.get_or_create(&key(&t, 2)).unwrap());
        assert_eq!(t.get_or_create(&key(&t, 3)).err(), Some(Full::Full));
        assert!(t.get_or_create(&key(&t, 2)).is_ok());
    }

    #[test]
    fn expired_entries_go_unless_in_use() {
        let t = table(10, 60_000, false);
        drop(t.get_or_create(&key(&t, 1)).unwrap());
        let held = t.get_or_create(&key(&t, 2)).unwrap();
        freq::skip(30_000);
        drop(t.get_or_create(&key(&t, 3)).unwrap());
        freq::skip(40_000);
        // 3 is the next to expire, 20 s on.
        let next = t.trash_expired().unwrap();
        assert!((19_000..=20_000).contains(&next.wrapping_sub(freq::now_ms())));
        assert_eq!(keys(&t), [2, 3]);
        // Released after its date: it goes at once.
        drop(held);
        assert_eq!(keys(&t), [3]);
        assert_eq!(t.used(), 1);
        // A touched entry lives on.
        t.touch(t.find(&key(&t, 3)).unwrap().entry().slot);
        freq::skip(30_000);
        assert!(t.trash_expired().is_some());
        assert_eq!(keys(&t), [3]);
    }

    #[test]
    fn removed_keys_and_entries_in_use() {
        let t = table(10, 0, false);
        let held = t.get_or_create(&key(&t, 1)).unwrap();
        assert_eq!(t.remove(&key(&t, 1)), Err(InUse));
        drop(held);
        assert_eq!(t.remove(&key(&t, 1)), Ok(true));
        assert_eq!(t.remove(&key(&t, 1)), Ok(false));
        assert_eq!(t.used(), 0);
        // A freed slot serves the next entry, zeroed.
        let h = t.get_or_create(&key(&t, 9)).unwrap();
        assert_eq!(h.entry().counter(Counter::Gpc0), Some(0));
    }

    #[test]
    fn peered_tables_keep_their_updates_in_order() {
        let mut def = table(10, 0, false).def.clone();
        def.peers = Some("p".into());
        let t = Arc::new(Table::new(def));
        for i in [1, 2, 1] {
            let h = t.get_or_create(&key(&t, i)).unwrap();
            h.entry().inc_gpc(Counter::Gpc0);
            t.touch(h.entry().slot);
        }
        let u = t.updates_after(0, 10);
        let order: Vec<(u32, u8)> = u.iter().map(|(s, k, _)| (*s, k[3])).collect();
        assert_eq!(order, [(2, 2), (3, 1)]);
        assert_eq!(t.updates_after(2, 10).len(), 1);
        // A peer's entry is taken, and not sent back.
        let vals = u[1].2.clone();
        t.apply_remote(&[10, 0, 0, 7], &vals, 1000).unwrap();
        assert_eq!(
            t.with(&key(&t, 7), |e| e.counter(Counter::Gpc0)),
            Some(Some(2))
        );
        assert_eq!(t.updates_after(0, 10).len(), 2);
    }
}
