//! `log-forward` sections as HAProxy 2.6 reads them: syslog received over
//! UDP (`dgram-bind`) and TCP (`bind`) and sent on to the section's `log`
//! targets. `observe/log/forward.rs` receives and sends.

use std::net::SocketAddr;
use std::time::Duration;

use super::log::LogTarget;
use crate::loc::Loc;

/// A `log-forward <name>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogForward {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `bind <addr>:<port>`: TCP listeners (octet-counted or line-ended
    /// messages).
    pub(crate) binds: Vec<SocketAddr>,
    /// `dgram-bind <addr>:<port>`: UDP sockets, one message a datagram.
    pub(crate) dgram_binds: Vec<SocketAddr>,
    /// `log` lines: where the messages go.
    pub(crate) targets: Vec<LogTarget>,
    /// `log global`: the global section's targets as well, first.
    pub(crate) global: bool,
    /// `maxconn`: TCP clients at once (HAProxy's default for the section).
    pub(crate) maxconn: u32,
    /// `backlog`: the TCP listeners' backlog (None: the system's).
    pub(crate) backlog: Option<u32>,
    /// `timeout client`: how long a TCP client may stay silent.
    pub(crate) timeout_client: Option<Duration>,
}

/// `maxconn`'s default in a `log-forward` section (HAProxy's).
pub(crate) const DEFAULT_FORWARD_MAXCONN: u32 = 10;

impl LogForward {
    pub(crate) fn new(name: &str, loc: &Loc) -> LogForward {
        LogForward {
            name: name.to_string(),
            loc: loc.clone(),
            binds: Vec::new(),
            dgram_binds: Vec::new(),
            targets: Vec::new(),
            global: false,
            maxconn: DEFAULT_FORWARD_MAXCONN,
            backlog: None,
            timeout_client: None,
        }
    }

    /// Every target in effect: the global ones first with `log global`.
    pub(crate) fn all_targets(&self, global: &[LogTarget]) -> Vec<LogTarget> {
        let mut v = Vec::new();
        if self.global {
            v.extend(global.iter().cloned());
        }
        v.extend(self.targets.iter().cloned());
        v
    }
}
