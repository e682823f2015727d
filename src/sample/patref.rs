//! The maps the running configuration loaded, by file name (HAProxy's
//! "pat_ref"), for the CLI's `show map` and `get map`.
//!
//! Each `map_*` converter registers the [`Map`] it loaded. The registry
//! holds them weakly: a configuration that is dropped (a failed reload, a
//! `-c` check, the previous configuration once a reload is done) takes its
//! maps with it, and the file is read again by the next one, as HAProxy's
//! reload re-reads files. The lock is taken when a configuration is read
//! and by the CLI, never by a lookup.

use std::sync::{Arc, Mutex, Weak};

use super::pattern::Map;

static MAPS: Mutex<Vec<Weak<Map>>> = Mutex::new(Vec::new());

/// Records `map` (one converter's) under its file name.
pub(crate) fn register_map(map: &Arc<Map>) {
    let mut maps = MAPS.lock().unwrap_or_else(|e| e.into_inner());
    maps.retain(|m| m.strong_count() > 0);
    maps.push(Arc::downgrade(map));
}

/// The live maps of file `path`, in the order their converters were read.
pub(crate) fn maps_of(path: &str) -> Vec<Arc<Map>> {
    let maps = MAPS.lock().unwrap_or_else(|e| e.into_inner());
    maps.iter()
        .filter_map(Weak::upgrade)
        .filter(|m| m.path() == path)
        .collect()
}
