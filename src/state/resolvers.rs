//! The counters of each nameserver of the `resolvers` sections, kept by
//! section and nameserver name across reloads, as `show resolvers`
//! prints them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock, Mutex};

/// HAProxy 2.6's counters of one nameserver, in `show resolvers` order.
#[derive(Debug, Default)]
pub(crate) struct NsCounters {
    pub(crate) sent: AtomicU64,
    pub(crate) snd_error: AtomicU64,
    pub(crate) valid: AtomicU64,
    pub(crate) update: AtomicU64,
    pub(crate) cname: AtomicU64,
    pub(crate) cname_error: AtomicU64,
    pub(crate) any_err: AtomicU64,
    pub(crate) nx: AtomicU64,
    pub(crate) timeout: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) other: AtomicU64,
    pub(crate) invalid: AtomicU64,
    pub(crate) too_big: AtomicU64,
    pub(crate) truncated: AtomicU64,
    pub(crate) outdated: AtomicU64,
}

impl NsCounters {
    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }

    /// The counters with their `show resolvers` names, in its order.
    pub(crate) fn named(&self) -> [(&'static str, u64); 15] {
        let g = |c: &AtomicU64| c.load(Relaxed);
        [
            ("sent", g(&self.sent)),
            ("snd_error", g(&self.snd_error)),
            ("valid", g(&self.valid)),
            ("update", g(&self.update)),
            ("cname", g(&self.cname)),
            ("cname_error", g(&self.cname_error)),
            ("any_err", g(&self.any_err)),
            ("nx", g(&self.nx)),
            ("timeout", g(&self.timeout)),
            ("refused", g(&self.refused)),
            ("other", g(&self.other)),
            ("invalid", g(&self.invalid)),
            ("too_big", g(&self.too_big)),
            ("truncated", g(&self.truncated)),
            ("outdated", g(&self.outdated)),
        ]
    }
}

type Table = HashMap<(String, String), Arc<NsCounters>>;

static COUNTERS: LazyLock<Mutex<Table>> = LazyLock::new(Default::default);

/// The counters of nameserver `ns` of section `section` (made on first
/// use; never on the request path).
pub(crate) fn counters(section: &str, ns: &str) -> Arc<NsCounters> {
    super::lock(&COUNTERS)
        .entry((section.to_string(), ns.to_string()))
        .or_default()
        .clone()
}
