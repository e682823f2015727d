//! A proxy's logging as compiled into the snapshot: where its lines go
//! and under which tag ([`LogSetup`]), and a frontend's access log format
//! and options ([`FrontendLog`]). `observe::log` sends and renders them.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::config::log::{GlobalLog, LogTarget, ProxyLog, Sink};
use crate::config::log_format::LogFormat;

/// The program name in syslog headers unless `log-tag` says otherwise.
pub(crate) const DEFAULT_TAG: &str = "sluice";

/// Where a proxy's lines go, and under which tag.
#[derive(Debug)]
pub(crate) struct LogSetup {
    pub(crate) targets: Vec<(LogTarget, Arc<Sink>)>,
    pub(crate) tag: Arc<str>,
    /// `log-send-hostname`: the host name of the syslog headers.
    pub(crate) hostname: Option<Arc<str>>,
}

impl LogSetup {
    /// The setup of a proxy, or `None` when it logs nowhere.
    pub(crate) fn compile(p: &ProxyLog, g: &GlobalLog) -> Option<LogSetup> {
        if !p.has_targets(g) {
            return None;
        }
        let targets = p
            .all_targets(g)
            .into_iter()
            .map(|t| {
                let s = Arc::new(t.sink.clone());
                (t, s)
            })
            .collect();
        let tag = p
            .tag
            .clone()
            .or_else(|| g.tag.clone())
            .unwrap_or_else(|| DEFAULT_TAG.to_string());
        Some(LogSetup {
            targets,
            tag: Arc::from(tag),
            hostname: g.send_hostname.as_deref().map(Arc::from),
        })
    }
}

/// A frontend's access log: targets, format and options.
#[derive(Debug)]
pub(crate) struct FrontendLog {
    pub(crate) setup: LogSetup,
    /// `None`: no log format, HAProxy's "Connect from" line at accept.
    pub(crate) format: Option<LogFormat>,
    /// `log-format-sd`: the structured data of RFC 5424 headers.
    pub(crate) sd: Option<LogFormat>,
    pub(crate) dontlognull: bool,
    pub(crate) dontlog_normal: bool,
    pub(crate) separate_errors: bool,
    pub(crate) logasap: bool,
    /// `%lc`.
    pub(crate) counter: AtomicU64,
}

impl FrontendLog {
    /// The log of proxy `name` (whose table an empty table argument of
    /// the format names).
    pub(crate) fn compile(name: &str, p: &ProxyLog, g: &GlobalLog) -> Option<Arc<FrontendLog>> {
        let setup = LogSetup::compile(p, g)?;
        let format = p.format.as_ref().and_then(|f| {
            crate::sample::stick::compiling_for(name, || LogFormat::compile(f.text())).ok()
        });
        let sd = p
            .sd
            .as_ref()
            .and_then(|f| crate::sample::stick::compiling_for(name, || LogFormat::compile(f)).ok());
        Some(Arc::new(FrontendLog {
            setup,
            format,
            sd,
            dontlognull: p.dontlognull,
            dontlog_normal: p.dontlog_normal,
            separate_errors: p.separate_errors,
            logasap: p.logasap,
            counter: AtomicU64::new(0),
        }))
    }
}
