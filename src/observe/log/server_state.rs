//! Server state changes told in HAProxy 2.6's words, shared by the health
//! checks (`upstream::check`) and the admin actions of the CLI and the
//! stats page (`observe::stats::admin`): the servers left, how a server is
//! named, and the events of a change an operator made.

use std::sync::atomic::Ordering::Relaxed;

use crate::snapshot::{BackendRt, ServerRt};
use crate::state::AdminState;

/// Counts of usable active and backup servers of `be`, and whether it has
/// no server left.
pub(crate) fn counts(be: &BackendRt) -> (usize, usize) {
    let mut act = 0;
    let mut bck = 0;
    for s in &be.servers {
        if s.state.usable() {
            if s.backup {
                bck += 1;
            } else {
                act += 1;
            }
        }
    }
    (act, bck)
}

/// How HAProxy names a server in its events: `Backup Server` for backups.
pub(crate) fn server_word(backup: bool) -> &'static str {
    if backup { "Backup Server" } else { "Server" }
}

/// HAProxy's note when only backup servers are left.
pub(crate) fn on_backup(act: usize, bck: usize) -> &'static str {
    if act == 0 && bck > 0 {
        " Running on backup."
    } else {
        ""
    }
}

/// Tells an admin change made from the CLI (`set server .. state`,
/// `disable|enable server`) in HAProxy 2.6's words: maintenance at
/// `alert` with the servers left (and `emerg` when none is), drain and
/// the way back at `notice`. Entering maintenance cuts the sessions with
/// `on-marked-down shutdown-sessions`, as HAProxy does.
pub(crate) fn admin_event(be: &BackendRt, s: &ServerRt, before: u8, to: AdminState) {
    use crate::state::{ADMF_FDRAIN, ADMF_FMAINT};
    let st = &s.state;
    let who = format!("{} {}/{}", server_word(s.backup), be.name, st.name);
    let (act, bck) = counts(be);
    match to {
        AdminState::Maint if before & ADMF_FMAINT == 0 => {
            if st.shutdown_on_down.load(Relaxed) {
                st.cut_sessions();
            }
            tracing::error!(
                target: "sluice::event",
                severity = "alert",
                "{who} is going DOWN for maintenance. {act} active and {bck} backup servers left.{} {} sessions active, 0 requeued, {} remaining in queue.",
                on_backup(act, bck),
                st.inflight(),
                st.waiters.load(Relaxed),
            );
            if act + bck == 0 {
                be.state.went_down.fetch_add(1, Relaxed);
                tracing::error!(
                    target: "sluice::event",
                    severity = "emerg",
                    "backend {} has no server available!",
                    be.name
                );
            }
        }
        AdminState::Drain if before & ADMF_FDRAIN == 0 && st.health.is_up() => tracing::info!(
            target: "sluice::event",
            severity = "notice",
            "{who} enters drain state. {act} active and {bck} backup servers online.{} 0 sessions requeued, {} total in queue.",
            on_backup(act, bck),
            be.state.queue.len(),
        ),
        // A DOWN server is told with the servers left, as HAProxy does.
        AdminState::Drain if before & ADMF_FDRAIN == 0 => tracing::info!(
            target: "sluice::event",
            severity = "notice",
            "{who} enters drain state. {act} active and {bck} backup servers left.{} {} sessions active, 0 requeued, {} remaining in queue.",
            on_backup(act, bck),
            st.inflight(),
            st.waiters.load(Relaxed),
        ),
        AdminState::Ready if before & ADMF_FMAINT != 0 => tracing::info!(
            target: "sluice::event",
            severity = "notice",
            "{who} is {}/READY (leaving forced maintenance).",
            up_word(st),
        ),
        AdminState::Ready if before & ADMF_FDRAIN != 0 => tracing::info!(
            target: "sluice::event",
            severity = "notice",
            "{who} is {} (leaving forced drain).",
            up_word(st),
        ),
        _ => {}
    }
}

/// `UP` or `DOWN`, as HAProxy words a server's state after an admin
/// change.
fn up_word(st: &crate::state::ServerState) -> &'static str {
    if st.health.is_up() { "UP" } else { "DOWN" }
}

/// A server put in `MAINT (resolution)`: `why` is HAProxy's reason (`DNS
/// NX status`, `entry removed from SRV record`...), told as its
/// maintenance is, with the servers left.
pub(crate) fn resolution_down(be: &BackendRt, s: &ServerRt, why: &str) {
    let st = &s.state;
    if st.shutdown_on_down.load(Relaxed) {
        st.cut_sessions();
    }
    let (act, bck) = counts(be);
    tracing::error!(
        target: "sluice::event",
        severity = "alert",
        "{} {}/{} is going DOWN for maintenance ({why}). {act} active and {bck} backup servers left.{} {} sessions active, 0 requeued, {} remaining in queue.",
        server_word(s.backup),
        be.name,
        st.name,
        on_backup(act, bck),
        st.inflight(),
        st.waiters.load(Relaxed),
    );
    if act + bck == 0 {
        be.state.went_down.fetch_add(1, Relaxed);
        tracing::error!(
            target: "sluice::event",
            severity = "emerg",
            "backend {} has no server available!",
            be.name
        );
    }
}

/// A server out of `MAINT (resolution)` (its name resolves again); with
/// `valid_answer`, HAProxy's note that a valid A/AAAA answer did it.
pub(crate) fn resolution_up(be: &BackendRt, s: &ServerRt, valid_answer: bool) {
    let st = &s.state;
    let fqdn = st.fqdn.load();
    let (state, admin) = (
        if st.health.is_up() { "UP" } else { "DOWN" },
        if st.admin() & crate::state::ADMF_FDRAIN != 0 {
            "DRAIN"
        } else {
            "READY"
        },
    );
    tracing::warn!(
        target: "sluice::event",
        severity = "notice",
        "{} {}/{} ('{}') is {state}/{admin} (resolves again).",
        server_word(s.backup),
        be.name,
        st.name,
        fqdn.as_deref().map_or("(null)", String::as_str),
    );
    if valid_answer {
        tracing::warn!(
            target: "sluice::event",
            severity = "notice",
            "Server {}/{} administratively READY thanks to valid DNS answer.",
            be.name,
            st.name,
        );
    }
}

/// A server moved to another address (`by`: the nameserver that answered,
/// `DNS cache`, `DNS additional record`, `stats socket command`).
pub(crate) fn address_changed(
    be: &BackendRt,
    s: &ServerRt,
    old: &str,
    new: std::net::IpAddr,
    by: &str,
) {
    tracing::warn!(
        target: "sluice::event",
        severity = "notice",
        "{}/{} changed its IP from {old} to {new} by {by}.",
        be.name,
        s.state.name,
    );
}

/// A template slot given an SRV record's target.
pub(crate) fn fqdn_changed(be: &BackendRt, s: &ServerRt, to: &str) {
    tracing::info!(
        target: "sluice::event",
        severity = "notice",
        "{}/{} changed its FQDN from (null) to {to} by 'SRV record'",
        be.name,
        s.state.name,
    );
}
