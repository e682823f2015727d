//! Stickiness from tables (`stick match|on|store-request|store-response`),
//! as HAProxy 2.6's `process_sticking_rules` and `process_store_rules`:
//! the request's rules may send it to the server an entry names, and
//! note the keys whose entries will name the server that answers; the
//! response's rules note more, then every noted entry is made or found and
//! given that server. HTTP and TCP alike.

use std::sync::Arc;

use crate::acl::eval::RequestView;
use crate::config::model::SrvKey;
use crate::sample::Ctx;
use crate::snapshot::{BackendRt, StickRt};
use crate::state::table::Table;
use crate::state::table::key::{self, KeyWords};

/// HAProxy's `s->store[8]`: the most entries one stream stores.
const MAX_STORES: usize = 8;

/// The entries a stream will store the server in once it answers: (the
/// table, the key, whether a response rule noted it).
#[derive(Debug, Default)]
pub(crate) struct Stores(Vec<(Arc<Table>, KeyWords, bool)>);

impl Stores {
    fn has(&self, t: &Table, response: bool) -> bool {
        self.0
            .iter()
            .any(|(s, _, r)| *r == response && std::ptr::eq(&**s, t))
    }

    fn push(&mut self, t: &Arc<Table>, key: KeyWords, response: bool) {
        if self.0.len() < MAX_STORES {
            self.0.push((t.clone(), key, response));
        }
    }
}

/// The key a rule's expression gives, in its table's form.
fn key_of(rule: &StickRt, cx: &Ctx<'_>) -> Option<KeyWords> {
    key::from_sample(rule.key.eval(cx)?, rule.table.def.key)
}

fn holds(rule: &StickRt, be: &BackendRt, cx: &Ctx<'_>) -> bool {
    rule.cond
        .as_ref()
        .is_none_or(|c| be.acls.eval(c, cx as &dyn RequestView))
}

/// Runs `be`'s request rules: the server (index in `be.servers`) an entry
/// sends the request to, unless one is `assigned` already (a persistence
/// cookie's), and the keys to store.
pub(crate) fn on_request(
    be: &BackendRt,
    cx: &Ctx<'_>,
    mut assigned: bool,
    stores: &mut Stores,
    force: bool,
) -> Option<usize> {
    let mut target = None;
    for rule in &be.stick {
        let stores_it = rule.kind.stores_request();
        // Only the first store rule of each table applies.
        if stores_it && stores.has(&rule.table, false) {
            continue;
        }
        if !holds(rule, be, cx) {
            continue;
        }
        let Some(key) = key_of(rule, cx) else {
            continue;
        };
        if rule.kind.matches() {
            let t = &rule.table;
            let found = t.with(&key, |e| {
                let server = (!assigned).then(|| server_of(be, t, e, force)).flatten();
                t.touch(e.slot);
                server
            });
            if let Some(Some(i)) = found {
                target = Some(i);
                assigned = true;
            }
        }
        if stores_it {
            stores.push(&rule.table, key, false);
        }
    }
    target
}

/// The server an entry names (its key first, then its id), if it takes
/// the request: not stopped, or `option persist`.
fn server_of(
    be: &BackendRt,
    t: &Table,
    e: crate::state::table::entry::Entry<'_>,
    force: bool,
) -> Option<usize> {
    let by_key = e.server_key().and_then(|k| match t.def.srvkey {
        SrvKey::Name => be.servers.iter().position(|s| s.name == *k),
        SrvKey::Addr => be.servers.iter().position(|s| addr_key(s) == *k),
    });
    let i = by_key.or_else(|| {
        let id = e.get(crate::sample::stick::DataType::ServerId, 0)?;
        be.servers.iter().position(|s| i64::from(s.sid) == id)
    })?;
    (be.servers[i].state.takes_persistent() || be.persist || force).then_some(i)
}

/// A server's address as `srvkey addr` keeps it: `<ip>:<port>`.
fn addr_key(s: &crate::snapshot::ServerRt) -> String {
    let a = s.state.addr();
    format!("{}:{}", a.ip(), a.port())
}

/// Runs `be`'s response rules (`res`: None in TCP mode), then stores
/// `server` (index in `be.servers`) in every entry noted.
pub(crate) fn on_response(be: &BackendRt, cx: &Ctx<'_>, server: usize, stores: &Stores) {
    let mut more = Stores::default();
    for rule in &be.store_response {
        if more.has(&rule.table, true) || !holds(rule, be, cx) {
            continue;
        }
        if let Some(key) = key_of(rule, cx)
            && stores.0.len() + more.0.len() < MAX_STORES
        {
            more.push(&rule.table, key, true);
        }
    }
    let s = &be.servers[server];
    if s.opts.non_stick {
        return;
    }
    for (t, key, _) in stores.0.iter().chain(&more.0) {
        let now = crate::state::table::freq::now64();
        let Ok(held) = t.get_or_create_at(key, now) else {
            continue;
        };
        let e = held.entry();
        let addr;
        let name = match t.def.srvkey {
            SrvKey::Name => &s.name,
            SrvKey::Addr => {
                addr = addr_key(s);
                &addr
            }
        };
        e.set_server(s.sid as i32, name);
        t.touch_at(e.slot, now as u32);
    }
}

/// Whether `be` has stick rules to run at all.
pub(crate) fn any(be: &BackendRt) -> bool {
    !be.stick.is_empty() || !be.store_response.is_empty()
}
