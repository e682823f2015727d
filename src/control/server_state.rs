//! `server-state-file` and `load-server-state-from-file`: at start-up, the
//! servers take the state an operator saved with `show servers state`
//! (HAProxy's format, version 1): admin state, weight, health, checks and
//! agent on or off, and for servers resolved by the DNS their name,
//! address and port (HAProxy's `init-addr last`), so that a restart
//! finds `server-template` slots where they were.
//!
//! Only at start-up: a reload keeps every server's live state in the
//! process, which is newer than any file.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering::Relaxed;

use crate::config::model::{Config, LoadServerState};
use crate::snapshot::ServerRt;
use crate::snapshot::runtime::Runtime;
use crate::state::health::Forced;
use crate::state::{ADMF_FDRAIN, ADMF_FMAINT, ADMF_HMAINT, AdminState};

/// The state file a backend reads, if any.
fn file_of(cfg: &Config, p: &crate::config::model::Proxy) -> Option<String> {
    let base = cfg.global.server_state_base.as_deref();
    let join = |name: &str| match base {
        Some(b) if !name.starts_with('/') => format!("{}/{name}", b.trim_end_matches('/')),
        _ => name.to_string(),
    };
    match p.load_server_state? {
        LoadServerState::Global => cfg.global.server_state_file.as_deref().map(join),
        LoadServerState::Local => {
            Some(join(p.server_state_file_name.as_deref().unwrap_or(&p.name)))
        }
        LoadServerState::None => None,
    }
}

/// Applies the state files of `cfg`'s backends to the servers of `rt`.
/// A file that cannot be read is told once and skipped, as HAProxy does.
pub(crate) fn load(rt: &Runtime, cfg: &Config) {
    let snap = rt.snapshot();
    let mut files: HashMap<String, Option<String>> = HashMap::new();
    for p in cfg.proxies.iter().filter(|p| p.kind.has_backend()) {
        let Some(path) = file_of(cfg, p) else {
            continue;
        };
        let text =
            files
                .entry(path.clone())
                .or_insert_with(|| match std::fs::read_to_string(&path) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        tracing::warn!("Can't open server state file '{path}': {e}");
                        None
                    }
                });
        let (Some(text), Some(be)) = (text.as_deref(), snap.backend(&p.name)) else {
            continue;
        };
        let mut lines = text.lines();
        if lines.next().map(str::trim) != Some("1") {
            tracing::warn!("Can't load server state file '{path}': unknown version");
            continue;
        }
        for line in lines.filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let f: Vec<&str> = line.split(' ').collect();
            if f.len() < 25 || f[1] != p.name {
                continue;
            }
            if let Some(s) = be.servers.iter().find(|s| s.name == f[3]) {
                apply(s, &f);
            }
        }
    }
}

/// One saved line to server `s`.
fn apply(s: &ServerRt, f: &[&str]) {
    let num = |i: usize| f[i].parse::<i64>().unwrap_or(0);
    let st = &s.state;
    let admin = num(6) as u8;
    if admin & ADMF_FMAINT != 0 {
        st.set_admin(AdminState::Maint);
    } else if admin & ADMF_FDRAIN != 0 {
        st.set_admin(AdminState::Drain);
    }
    // A weight set at run time, when the configured one is the same.
    if num(8) == i64::from(s.weight) && (0..=256).contains(&num(7)) {
        st.weight.store(num(7) as u32, Relaxed);
    }
    let h = &st.health;
    if h.is_checked() && num(13) & 0x04 == 0 {
        h.set_check_enabled(false);
    }
    if h.agent_configured() && num(14) & 0x04 == 0 {
        h.set_agent_enabled(false);
    }
    // The operational state as saved, the health at its end of the range
    // (HAProxy's `srv_set_running` / `srv_set_stopped`).
    if !st.is_maint() {
        h.force(if num(5) == 0 {
            Forced::Down
        } else {
            Forced::Up
        });
    }
    if s.resolve.is_none() {
        return;
    }
    // A server the DNS moves: its name, address and port as saved.
    if f[17] != "-" {
        st.fqdn.store(Some(std::sync::Arc::new(f[17].to_string())));
        st.set_admin_flag(ADMF_HMAINT, admin & ADMF_HMAINT != 0);
    }
    let port = u16::try_from(num(18)).unwrap_or(0);
    if let Ok(ip) = f[4].parse::<IpAddr>() {
        st.set_addr(SocketAddr::new(ip, port));
        st.set_rmaint(false);
    }
}
