//! `resolvers <name>` sections (`nameserver`, `parse-resolv-conf`,
//! `accepted_payload_size`, `resolve_retries`, `timeout resolve|retry`,
//! `hold <status> <period>`), with HAProxy 2.6's messages.

use std::net::SocketAddr;

use super::*;

impl State<'_> {
    /// `resolvers <name>`.
    pub(super) fn start_resolvers(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing name for resolvers section.");
            self.section = Section::Skip;
            return;
        };
        if let Some(c) = bad_name_char(name) {
            self.alert(
                loc,
                format!("character '{c}' is not permitted in 'resolvers' name '{name}'."),
            );
        }
        if let Some(other) = self.global.resolvers.iter().find(|r| r.name == *name) {
            // HAProxy capitalizes this one.
            let msg = format!(
                "Parsing [{loc}]: resolvers '{name}' has same name as another resolvers (declared at {}).",
                other.loc
            );
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            self.section = Section::Skip;
            return;
        }
        self.global
            .resolvers
            .push(ResolversSection::new(name, loc.clone()));
        self.section = Section::Resolvers(self.global.resolvers.len() - 1);
    }

    pub(super) fn resolvers_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let arg = |k: usize| words.get(k).map(String::as_str).unwrap_or("");
        match words[0].as_str() {
            "nameserver" => self.nameserver(i, loc, words),
            "parse-resolv-conf" => self.parse_resolv_conf(i, loc),
            "accepted_payload_size" => match arg(1).parse::<u32>() {
                Ok(n) if (12..=65535).contains(&n) => {
                    self.global.resolvers[i].accepted_payload_size = n as u16;
                }
                _ => self.alert(
                    loc,
                    format!(
                        "'accepted_payload_size' must be between 12 and 65535 inclusive (was {}).",
                        arg(1)
                    ),
                ),
            },
            "resolve_retries" => match arg(1).parse::<u32>() {
                Ok(n) if n >= 1 => self.global.resolvers[i].resolve_retries = n,
                _ => self.alert(loc, format!("'{}' expects <nb> as argument.", words[0])),
            },
            "timeout" => {
                let which = arg(1);
                if arg(2).is_empty() && matches!(which, "retry" | "resolve") {
                    return self.alert(
                        loc,
                        format!("'timeout {which}' expects <time> as argument."),
                    );
                }
                let Some(kind) = ["retry", "resolve"].iter().find(|k| **k == which) else {
                    return self.alert(
                        loc,
                        format!(
                            "'timeout' expects 'retry' or 'resolve' and <time> as arguments got '{which}'."
                        ),
                    );
                };
                match parse_time(arg(2)) {
                    Ok(d) => {
                        let r = &mut self.global.resolvers[i];
                        if *kind == "retry" {
                            r.timeout_retry = d;
                        } else {
                            r.timeout_resolve = d;
                        }
                    }
                    Err(e) => self.resolvers_time_error(loc, &format!("timeout {kind}"), &e),
                }
            }
            "hold" => {
                if arg(2).is_empty() {
                    self.alert(loc, "'hold' expects an <event> and a <time> as arguments.");
                    self.diags.push(Diagnostic::alert(
                        None,
                        "<event> can be either 'valid', 'nx', 'refused', 'timeout', or 'other'",
                    ));
                    return;
                }
                let d = match parse_time(arg(2)) {
                    Ok(d) => d,
                    Err(e) => return self.resolvers_time_error(loc, "hold", &e),
                };
                let h = &mut self.global.resolvers[i].hold;
                match arg(1) {
                    "nx" => h.nx = d,
                    "other" => h.other = d,
                    "refused" => h.refused = d,
                    "timeout" => h.timeout = d,
                    "valid" => h.valid = d,
                    "obsolete" => h.obsolete = d,
                    other => self.alert(
                        loc,
                        format!(
                            "'hold' unknown <event>: '{other}', expects either 'nx', 'timeout', 'valid', 'obsolete' or 'other'."
                        ),
                    ),
                }
            }
            other => self.alert(
                loc,
                format!("unknown keyword '{other}' in 'resolvers' section"),
            ),
        }
    }

    /// HAProxy's message for a bad time in a `resolvers` section.
    fn resolvers_time_error(&mut self, loc: &Loc, kw: &str, e: &crate::config::units::TimeError) {
        use crate::config::units::TimeError;
        let msg = match e {
            TimeError::BadChar(c) => format!("unexpected character '{c}' in argument to <{kw}>."),
            _ => format!("'{kw}' expects <time> as argument."),
        };
        self.tight(Level::Alert, loc, msg);
    }

    /// `nameserver <name> <ip>[:<port>]` (`udp@`, `tcp@`, `ipv4@`,
    /// `ipv6@` prefixes; port 53 by default).
    fn nameserver(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let (Some(name), Some(addr_text)) = (
            words.get(1).filter(|w| !w.is_empty()),
            words.get(2).filter(|w| !w.is_empty()),
        ) else {
            return self.alert(
                loc,
                "'nameserver' expects <name> and <addr>[:<port>] as arguments.",
            );
        };
        if let Some(other) = self.global.resolvers[i]
            .nameservers
            .iter()
            .find(|n| n.name == *name)
        {
            let msg = format!(
                "Parsing [{loc}]: nameserver '{name}' has same name as another nameserver (declared at {}).",
                other.loc
            );
            self.diags
                .push(Diagnostic::new(Level::Alert, Some(loc.clone()), msg));
            return;
        }
        let (tcp, rest) = match addr_text.strip_prefix("tcp@") {
            Some(r) => (true, r),
            None => (false, addr_text.strip_prefix("udp@").unwrap_or(addr_text)),
        };
        let parsed = addr::split_server(rest).and_then(|hp| {
            let ip: std::net::IpAddr = hp
                .host
                .parse()
                .map_err(|_| format!("invalid address: '{}' in '{addr_text}'", hp.host))?;
            Ok(SocketAddr::new(ip, if hp.port == 0 { 53 } else { hp.port }))
        });
        match parsed {
            Ok(a) => self.global.resolvers[i].nameservers.push(Nameserver {
                name: name.clone(),
                addr: a,
                tcp,
                loc: loc.clone(),
            }),
            Err(e) => self.alert(loc, format!("'nameserver {name}' : {e}\n")),
        }
    }

    /// `parse-resolv-conf`: the `nameserver` lines of /etc/resolv.conf,
    /// named after their addresses.
    fn parse_resolv_conf(&mut self, i: usize, loc: &Loc) {
        let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        for ns in resolv_conf_nameservers(&text) {
            let name = ns.ip().to_string();
            let r = &mut self.global.resolvers[i];
            if r.nameservers.iter().any(|n| n.name == name) {
                continue;
            }
            r.nameservers.push(Nameserver {
                name,
                addr: ns,
                tcp: false,
                loc: loc.clone(),
            });
        }
    }
}

/// The `nameserver` addresses of a resolv.conf text, port 53.
pub(crate) fn resolv_conf_nameservers(text: &str) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("nameserver")).then_some(())?;
            let ip: std::net::IpAddr = w.next()?.parse().ok()?;
            Some(SocketAddr::new(ip, 53))
        })
        .collect()
}
