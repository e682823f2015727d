//! `ring` sections as HAProxy 2.6 reads them: an in-memory buffer of log
//! lines (`log ring@<name>`), shown by the CLI's `show events`, and the
//! syslog servers over TCP its lines are forwarded to. `state/ring.rs`
//! keeps the buffers, `observe/log/ring_fwd.rs` forwards them.

use std::net::SocketAddr;
use std::time::Duration;

use super::log::Format;
use crate::loc::Loc;

/// A ring's size and its events' length when its section says nothing
/// (HAProxy's `BUFSIZE`).
pub(crate) const DEFAULT_RING_SIZE: usize = 16384;

/// The ring HAProxy 2.6 always has: `buf0`, in `timed` format, 1 MiB.
pub(crate) const BUF0: &str = "buf0";
pub(crate) const BUF0_SIZE: usize = 1 << 20;
pub(crate) const BUF0_DESCRIPTION: &str = "in-memory ring buffer";

/// A ring's forwarding timeouts when the section gives none (HAProxy's
/// defaults for the proxy of a ring).
pub(crate) const DEFAULT_RING_CONNECT: Duration = Duration::from_secs(1);
pub(crate) const DEFAULT_RING_SERVER: Duration = Duration::from_secs(5);

/// A `ring <name>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RingSection {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `description`: what `show events` says of it (its name without).
    pub(crate) description: Option<String>,
    /// `format`: the header each line gets (`raw` by default).
    pub(crate) format: Format,
    /// `maxlen`: the longest event, header included.
    pub(crate) maxlen: usize,
    /// `size`: the bytes of the buffer.
    pub(crate) size: usize,
    /// `timeout connect`, `timeout server` (None: the defaults).
    pub(crate) timeout_connect: Option<Duration>,
    pub(crate) timeout_server: Option<Duration>,
    /// `server <name> <addr>:<port> [log-proto legacy|octet-count]`.
    pub(crate) servers: Vec<RingServer>,
}

impl RingSection {
    pub(crate) fn new(name: &str, loc: &Loc) -> RingSection {
        RingSection {
            name: name.to_string(),
            loc: loc.clone(),
            description: None,
            format: Format::Raw,
            maxlen: DEFAULT_RING_SIZE,
            size: DEFAULT_RING_SIZE,
            timeout_connect: None,
            timeout_server: None,
            servers: Vec::new(),
        }
    }

    /// The `buf0` ring, which every process has.
    pub(crate) fn buf0() -> RingSection {
        RingSection {
            description: Some(BUF0_DESCRIPTION.to_string()),
            format: Format::Timed,
            maxlen: BUF0_SIZE,
            size: BUF0_SIZE,
            ..RingSection::new(
                BUF0,
                &Loc {
                    file: std::sync::Arc::from(""),
                    line: 0,
                },
            )
        }
    }

    /// What `show events` lists after the ring's type.
    pub(crate) fn description(&self) -> &str {
        self.description.as_deref().unwrap_or(&self.name)
    }
}

/// One `server` line of a ring: a syslog server over TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RingServer {
    pub(crate) name: String,
    pub(crate) addr: SocketAddr,
    /// `log-proto octet-count` (RFC 6587's octet counting: `<len> <msg>`);
    /// otherwise `legacy`, each line ended by a line feed.
    pub(crate) octet_count: bool,
}

/// The formats a ring's `format` line takes (HAProxy's log formats).
pub(crate) fn ring_format(name: &str) -> Option<Format> {
    Format::parse(name)
}

/// C `atol` on a size: the leading digits (`20k` is 20), 0 without any.
pub(crate) fn atol_size(text: &str) -> usize {
    text.bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0usize, |n, d| {
            n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
        })
}
