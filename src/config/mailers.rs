//! `mailers` sections and a proxy's `email-alert` settings, as HAProxy 2.6
//! reads them: the mailers a proxy sends its servers' state changes to,
//! and the checks once the configuration is whole (a proxy naming an
//! unknown section, settings that lack `from`, `to` or `mailers`, a
//! section no proxy uses). `upstream/check/mail.rs` sends the mails.

use std::net::SocketAddr;
use std::time::Duration;

use super::diag::Diagnostic;
use super::model::Config;
use crate::loc::Loc;

/// `timeout mail`'s default.
pub(crate) const DEFAULT_MAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// A `mailers <name>` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MailersSection {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    /// `timeout mail`: the time for one mail, connection included.
    pub(crate) timeout: Duration,
    /// `mailer <name> <addr>:<port>` lines, in order.
    pub(crate) mailers: Vec<(String, SocketAddr)>,
}

/// A proxy's `email-alert` lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct EmailAlert {
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) mailers: Option<String>,
    pub(crate) myhostname: Option<String>,
    /// `email-alert level`: a syslog level, 0 (emerg) to 7 (debug);
    /// None: `alert`.
    pub(crate) level: Option<u8>,
}

impl EmailAlert {
    /// Any `email-alert` line was written.
    pub(crate) fn any(&self) -> bool {
        self.from.is_some()
            || self.to.is_some()
            || self.mailers.is_some()
            || self.myhostname.is_some()
            || self.level.is_some()
    }

    /// `from`, `to` and `mailers` are all set: alerts are sent.
    pub(crate) fn complete(&self) -> bool {
        self.from.is_some() && self.to.is_some() && self.mailers.is_some()
    }

    /// Reads `email-alert <what> <value>` (`words[0]` is `email-alert`);
    /// `Err` holds HAProxy's message. Words after the value are ignored,
    /// as HAProxy ignores them.
    pub(crate) fn parse(&mut self, words: &[String]) -> Result<(), String> {
        let Some(what) = words.get(1).filter(|w| !w.is_empty()) else {
            return Err("missing argument after 'email-alert'.".into());
        };
        let value = words.get(2).filter(|v| !v.is_empty()).cloned();
        match what.as_str() {
            "from" => self.from = value,
            "to" => self.to = value,
            "mailers" => self.mailers = value,
            "myhostname" => self.myhostname = value,
            "level" => {
                let v = value.unwrap_or_default();
                match crate::config::log::LEVELS.iter().position(|l| *l == v) {
                    Some(l) => self.level = Some(l as u8),
                    // HAProxy 2.6 names the words the other way round.
                    None => return Err(format!("unknown log level '{what}' after '{v}'")),
                }
            }
            other => return Err(format!("email-alert: unknown argument '{other}'.")),
        }
        Ok(())
    }
}

/// A `mailer <name> <addr>:<port>` line's address, or HAProxy's message.
pub(crate) fn mailer_addr(text: &str) -> Result<SocketAddr, String> {
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("missing port specification in '{text}'"));
    };
    if let Some(c) = port.chars().find(|c| !c.is_ascii_digit()) {
        return Err(format!(
            "invalid character '{c}' in port number '{port}' in '{text}'"
        ));
    }
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => return Err(format!("invalid port '{port}'")),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let resolve = &super::addr::system_resolve;
    let ip = super::addr::resolve_host(host, super::addr::Family::Any, port, resolve)
        .map_err(|_| format!("invalid address: '{host}' in '{text}'"))?;
    Ok(SocketAddr::new(ip, port))
}

/// The checks once every section is read: each proxy's `email-alert
/// mailers` names a section, settings are whole or ignored with HAProxy's
/// warning, and the sections no proxy sends through are dropped with its
/// warning.
pub(crate) fn check(config: &Config, diags: &mut Vec<Diagnostic>) {
    // HAProxy checks a configuration whole only once it parsed cleanly.
    if diags.iter().any(Diagnostic::is_alert) {
        return;
    }
    let mut used = vec![false; config.global.mailers.len()];
    for p in &config.proxies {
        let e = &p.email_alert;
        if !e.any() {
            continue;
        }
        if !e.complete() {
            diags.push(Diagnostic::warning(
                None,
                format!(
                    "'email-alert' will be ignored for {} '{}' (the presence any of 'email-alert from', 'email-alert level' 'email-alert mailers', 'email-alert myhostname', or 'email-alert to' requires each of 'email-alert from', 'email-alert mailers' and 'email-alert to' to be present).",
                    super::parser::type_str(p.kind),
                    p.name
                ),
            ));
            continue;
        }
        let name = e.mailers.as_deref().unwrap_or_default();
        match config.global.mailers.iter().position(|m| m.name == name) {
            Some(i) => used[i] = true,
            None => diags.push(Diagnostic::alert(
                None,
                format!("Proxy '{}': unable to find mailers '{name}'.", p.name),
            )),
        }
    }
    for (m, used) in config.global.mailers.iter().zip(used) {
        if !used {
            diags.push(Diagnostic::warning(
                None,
                format!("Removing incomplete section 'mailers {}'.", m.name),
            ));
        }
    }
}

/// What a backend sends its alerts with, compiled from its settings and
/// its mailers section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alerting {
    pub(crate) from: String,
    pub(crate) to: String,
    /// `myhostname`, else the system's host name.
    pub(crate) hostname: String,
    /// The most verbose level mailed (syslog numbering).
    pub(crate) level: u8,
    pub(crate) timeout: Duration,
    pub(crate) mailers: Vec<SocketAddr>,
}

impl Alerting {
    /// None when the proxy sends no alerts.
    pub(crate) fn compile(config: &Config, e: &EmailAlert) -> Option<Alerting> {
        if !e.complete() {
            return None;
        }
        let name = e.mailers.as_deref()?;
        let section = config.global.mailers.iter().find(|m| m.name == name)?;
        Some(Alerting {
            from: e.from.clone()?,
            to: e.to.clone()?,
            hostname: e
                .myhostname
                .clone()
                .unwrap_or_else(|| crate::sys::process::hostname().to_string()),
            level: e.level.unwrap_or(1),
            timeout: section.timeout,
            mailers: section.mailers.iter().map(|(_, a)| *a).collect(),
        })
    }
}
