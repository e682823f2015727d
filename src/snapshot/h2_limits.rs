//! A frontend's HTTP/2 settings and limits, compiled from the `global`
//! section's `tune.h2.*` (the engine, `http/h2/`, sets its connections up
//! from them). Data only: the snapshot holds it, the engine reads it.

use crate::config::model::{Global, H2Tune};

/// The HTTP/2 settings and limits of a frontend's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS (`tune.h2.max-concurrent-streams`).
    pub(crate) max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE (`tune.h2.initial-window-size`): each
    /// stream's receive window. (The connection's is the largest there
    /// is, `http::h2`'s `CONNECTION_WINDOW`.)
    pub(crate) initial_window_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE (`tune.h2.header-table-size`).
    pub(crate) header_table_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE (`tune.h2.max-frame-size`).
    pub(crate) max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a request's headers must fit the
    /// buffer an HTTP/1 head fits (`tune.bufsize - tune.maxrewrite`), as
    /// in HAProxy. A larger header block, CONTINUATION frames included,
    /// is refused; a much larger one closes the connection.
    pub(crate) max_header_list_size: u32,
    /// Extended CONNECT (RFC 8441) announced: WebSockets over HTTP/2
    /// (not under `h2-workaround-bogus-websocket-clients`).
    pub(crate) connect_protocol: bool,
}

impl Limits {
    pub(crate) fn of(g: &Global) -> Limits {
        let t = &g.h2;
        Limits {
            max_concurrent_streams: t
                .max_concurrent_streams
                .unwrap_or(H2Tune::DEFAULT_MAX_CONCURRENT_STREAMS),
            initial_window_size: t
                .initial_window_size
                .unwrap_or(H2Tune::DEFAULT_INITIAL_WINDOW_SIZE),
            header_table_size: t
                .header_table_size
                .unwrap_or(H2Tune::DEFAULT_HEADER_TABLE_SIZE),
            max_frame_size: t.max_frame_size.unwrap_or(H2Tune::DEFAULT_MAX_FRAME_SIZE),
            max_header_list_size: g.max_head() as u32,
            connect_protocol: !g.h2_no_websocket,
        }
    }
}
