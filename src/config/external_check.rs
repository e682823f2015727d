//! `option external-check` with `external-check command|path`, and the
//! global `external-check` and `insecure-fork-wanted` HAProxy requires
//! for it: parsed with HAProxy 2.6's messages, checked once the
//! configuration is whole, and turned into what a check runs
//! (`upstream/check/external.rs` runs it).

use super::diag::Diagnostic;
use super::model::{Config, Proxy};

/// A proxy's `external-check command|path` lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ExternalCheckCfg {
    pub(crate) command: Option<String>,
    pub(crate) path: Option<String>,
}

impl ExternalCheckCfg {
    /// `external-check command|path <value>`; `Err`: HAProxy's message.
    pub(crate) fn parse(&mut self, words: &[String]) -> Result<(), String> {
        let Some(what) = words.get(1).filter(|w| !w.is_empty()) else {
            return Err("missing argument after 'external-check'.".into());
        };
        if !matches!(what.as_str(), "command" | "path") {
            return Err(format!(
                "'external-check' only supports 'command' and 'path'. but got '{what}'."
            ));
        }
        let Some(value) = words.get(2).filter(|v| !v.is_empty()) else {
            return Err(format!("missing argument after '{what}'."));
        };
        if let Some(extra) = words.get(3) {
            return Err(format!(
                "'external-check' cannot handle unexpected argument '{extra}'."
            ));
        }
        if what == "command" {
            self.command = Some(value.clone());
        } else {
            self.path = Some(value.clone());
        }
        Ok(())
    }
}

/// What an external check runs: the command, its `PATH`, and the
/// proxy's address as the arguments and the environment give it (HAProxy's
/// first IPv4, IPv6 or UNIX listener; none for a backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExternalCheck {
    pub(crate) command: String,
    pub(crate) path: String,
    /// `<proxy_address> <proxy_port>` as arguments.
    pub(crate) args: (String, String),
    /// `HAPROXY_PROXY_ADDR`, `HAPROXY_PROXY_PORT`.
    pub(crate) env: (String, String),
}

impl ExternalCheck {
    pub(crate) fn of(p: &Proxy) -> ExternalCheck {
        const NOT_USED: &str = "NOT_USED";
        let first = p.binds.iter().find_map(|b| {
            if let Some(a) = b.addrs.first() {
                let (ip, port) = (a.ip().to_string(), a.port().to_string());
                return Some(((ip.clone(), port.clone()), (ip, port)));
            }
            let u = b.unix.as_ref()?;
            let path = match &u.name {
                super::model::UnixName::Path(p) => p.display().to_string(),
                super::model::UnixName::Abns(n) => n.clone(),
            };
            Some(((path.clone(), NOT_USED.into()), (path, String::new())))
        });
        let (args, env) = first.unwrap_or_else(|| {
            (
                (NOT_USED.into(), NOT_USED.into()),
                (String::new(), String::new()),
            )
        });
        ExternalCheck {
            command: p.external_check.command.clone().unwrap_or_default(),
            path: p.external_check.path.clone().unwrap_or_default(),
            args,
            env,
        }
    }
}

/// HAProxy's checks of `option external-check` once the configuration is
/// whole: the global `external-check` is required, `insecure-fork-wanted`
/// warned about, a command required.
pub(crate) fn check(config: &Config, diags: &mut Vec<Diagnostic>) {
    for p in config
        .proxies
        .iter()
        .filter(|p| p.check_type == super::model::CheckType::External)
    {
        if !config.global.external_check {
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "Proxy '{}' : 'option external-check' unable to find required 'global.external-check'.",
                    p.name
                ),
            ));
        }
        if !config.global.insecure_fork_wanted {
            diags.push(Diagnostic::warning(
                None,
                format!(
                    "Proxy '{}' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail.",
                    p.name
                ),
            ));
        }
        if config.global.external_check && p.external_check.command.is_none() {
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "Proxy '{}' : 'option external-check' unable to find required 'external-check command'.",
                    p.name
                ),
            ));
        }
    }
}
