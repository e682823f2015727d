//! `mailers` sections (`mailer`, `timeout mail`) and the proxies'
//! `email-alert` lines, with HAProxy 2.6's messages; the types and the
//! checks once the configuration is whole are `config/mailers.rs`'s.

use super::*;
use crate::config::mailers::{DEFAULT_MAIL_TIMEOUT, MailersSection, mailer_addr};

impl State<'_> {
    pub(super) fn start_mailers(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing name for mailers section.");
            self.section = Section::Skip;
            return;
        };
        if let Some(prev) = self.global.mailers.iter().find(|m| &m.name == name) {
            let msg = format!(
                "Parsing [{loc}]: mailers section '{name}' has the same name as another mailers section declared at {}.",
                prev.loc
            );
            self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
            self.section = Section::Skip;
            return;
        }
        self.global.mailers.push(MailersSection {
            name: name.clone(),
            loc: loc.clone(),
            timeout: DEFAULT_MAIL_TIMEOUT,
            mailers: Vec::new(),
        });
        self.section = Section::Mailers(self.global.mailers.len() - 1);
    }

    pub(super) fn mailers_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let w = |n: usize| words.get(n).map_or("", String::as_str);
        match w(0) {
            "mailer" => {
                if w(1).is_empty() || w(2).is_empty() {
                    return self.alert(
                        loc,
                        "'mailer' expects <name> and <addr>[:<port>] as arguments.",
                    );
                }
                let text = match self.addr_word(w(2)) {
                    Ok(t) => t,
                    Err(e) => return self.alert(loc, format!("'mailer {}' : {e}", w(1))),
                };
                match mailer_addr(&text) {
                    Ok(a) => self.global.mailers[i].mailers.push((w(1).to_string(), a)),
                    Err(e) => self.alert(loc, format!("'mailer {}' : {e}", w(1))),
                }
            }
            "timeout" => {
                if w(1) != "mail" {
                    return self.alert(
                        loc,
                        format!(
                            "'timeout' expects 'mail' and <time> as arguments got '{}'.",
                            w(1)
                        ),
                    );
                }
                if w(2).is_empty() {
                    return self.alert(loc, "'timeout mail' expects <time> as argument.");
                }
                match parse_time(w(2)) {
                    Ok(t) => self.global.mailers[i].timeout = t,
                    Err(crate::config::units::TimeError::BadChar(c)) => self.tight(
                        Level::Alert,
                        loc,
                        format!("unexpected character '{c}' in argument to <timeout mail>."),
                    ),
                    Err(e) => self.alert(loc, time_error_message("timeout mail", w(2), &e)),
                }
            }
            other => self.alert(
                loc,
                format!("unknown keyword '{other}' in 'mailers' section"),
            ),
        }
    }

    /// `email-alert from|to|level|mailers|myhostname <value>`.
    pub(super) fn kw_email_alert(&mut self, loc: &Loc, words: &[String]) {
        let mut e = self.px().email_alert.clone();
        match e.parse(words) {
            Ok(()) => self.px().email_alert = e,
            Err(m) => self.alert(loc, m),
        }
    }
}
