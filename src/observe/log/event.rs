//! State-change events to syslog. The data plane and the checkers report
//! server transitions through `tracing` in HAProxy's words ("Server b/s is
//! DOWN, ..."); this layer picks those events up and sends them to the
//! log targets of the backend concerned, at HAProxy 2.6's severities:
//! DOWN and maintenance at `alert`, UP and drain at `notice`, "backend X
//! has no server available!" at `emerg`, a stopped proxy at `warning`.

use std::sync::{OnceLock, Weak};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::config::log::{ALERT, EMERG, NOTICE, WARNING};
use crate::observe::log::time::Date;
use crate::snapshot::runtime::Runtime;

static RUNTIME: OnceLock<Weak<Runtime>> = OnceLock::new();

/// Lets events find the current configuration's log targets.
pub(crate) fn attach(rt: &std::sync::Arc<Runtime>) {
    let _ = RUNTIME.set(std::sync::Arc::downgrade(rt));
}

/// The process runtime, once [`attach`]ed.
pub(crate) fn runtime() -> Option<std::sync::Arc<Runtime>> {
    RUNTIME.get().and_then(Weak::upgrade)
}

/// The `tracing` layer forwarding state changes to syslog.
#[derive(Debug, Default, Clone, Copy)]
pub struct EventLayer;

struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            use std::fmt::Write as _;
            let _ = write!(self.0, "{value:?}");
        }
    }
}

/// What an event is about: the proxy whose targets get it, the severity,
/// and whether it may have left the backend without any server.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Class<'a> {
    pub(crate) proxy: &'a str,
    pub(crate) severity: u8,
    pub(crate) went_down: bool,
}

/// Recognizes HAProxy's state-change messages.
pub(crate) fn classify(msg: &str) -> Option<Class<'_>> {
    let server_msg = msg.strip_prefix("Backup ").unwrap_or(msg);
    if let Some(rest) = server_msg.strip_prefix("Server ") {
        let (proxy, _) = rest.split_once('/')?;
        let down = rest.contains(" is DOWN") || rest.contains(" is going DOWN");
        // NOLB (`is stopping`) is told at notice, but may leave the backend
        // without a server for new traffic all the same.
        let stopping = rest.contains(" is stopping");
        return Some(Class {
            proxy,
            severity: if down { ALERT } else { NOTICE },
            went_down: down || stopping,
        });
    }
    // A server moved by the DNS: `b/s changed its IP from ...`, `b/s
    // changed its FQDN from ...`.
    if let Some((who, rest)) = msg.split_once(' ')
        && (rest.starts_with("changed its IP from ") || rest.starts_with("changed its FQDN from "))
        && let Some((proxy, _)) = who.split_once('/')
    {
        return Some(Class {
            proxy,
            severity: NOTICE,
            went_down: false,
        });
    }
    // `option log-health-checks`: `Health check for [backup ]server b/s ...`.
    if let Some(rest) = msg.strip_prefix("Health check for ") {
        let rest = rest.strip_prefix("backup ").unwrap_or(rest);
        let (proxy, _) = rest.strip_prefix("server ")?.split_once('/')?;
        return Some(Class {
            proxy,
            severity: NOTICE,
            went_down: false,
        });
    }
    // A script's `Proxy:pause()` and `resume()`.
    if let Some(proxy) = msg
        .strip_prefix("Paused frontend ")
        .or_else(|| msg.strip_prefix("Resumed frontend "))
        .and_then(|r| r.strip_suffix('.'))
    {
        return Some(Class {
            proxy,
            severity: WARNING,
            went_down: false,
        });
    }
    if let Some(rest) = msg.strip_prefix("Proxy ")
        && let Some(proxy) = rest
            .strip_suffix(" stopped.")
            .or_else(|| rest.split_once(" stopped (").map(|(p, _)| p))
    {
        return Some(Class {
            proxy,
            severity: WARNING,
            went_down: false,
        });
    }
    None
}

impl<S: Subscriber> Layer<S> for EventLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if *event.metadata().level() > tracing::Level::INFO {
            return;
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        let Some(class) = classify(&m.0) else { return };
        let Some(rt) = RUNTIME.get().and_then(Weak::upgrade) else {
            return;
        };
        rt.with_snapshot(|snap| {
            let Some(p) = snap.proxies.iter().find(|p| p.name == class.proxy) else {
                return;
            };
            let setup = p
                .backend
                .as_ref()
                .and_then(|b| b.log.as_deref())
                .or_else(|| {
                    p.frontend
                        .as_ref()
                        .and_then(|f| f.log.as_ref())
                        .map(|l| &l.setup)
                });
            let Some(setup) = setup else { return };
            let now = Date::now();
            setup.send(class.severity, &now, &m.0);
            if class.went_down
                && let Some(be) = &p.backend
                && !be.servers.iter().any(|s| s.state.usable())
            {
                let msg = format!("backend {} has no server available!", be.name);
                setup.send(EMERG, &now, &msg);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities() {
        let c = classify("Server be/s1 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms.").unwrap();
        assert_eq!((c.proxy, c.severity, c.went_down), ("be", ALERT, true));
        let c = classify("Server be/s1 is going DOWN for maintenance.").unwrap();
        assert_eq!(c.severity, ALERT);
        let c = classify("Server be/s1 is UP, reason: Layer4 check passed, check duration: 0ms.")
            .unwrap();
        assert_eq!((c.severity, c.went_down), (NOTICE, false));
        assert_eq!(
            classify("Server be/s1 enters drain mode.")
                .unwrap()
                .severity,
            NOTICE
        );
        assert_eq!(
            classify("Proxy fe stopped (cumulated conns: FE: 1, BE: 0).")
                .unwrap()
                .severity,
            WARNING
        );
        let c = classify("Server be/s1 is stopping, reason: Layer7 check conditionally passed, code: 404, check duration: 0ms.").unwrap();
        assert_eq!((c.severity, c.went_down), (NOTICE, true));
        assert_eq!(classify("sluice started"), None);
        let c = classify("be/s1 changed its IP from (none) to 10.0.0.1 by dns/ns1.").unwrap();
        assert_eq!((c.proxy, c.severity), ("be", NOTICE));
        let c = classify("Server be/s1 is going DOWN for maintenance (DNS NX status). 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.").unwrap();
        assert_eq!((c.severity, c.went_down), (ALERT, true));
    }
}
