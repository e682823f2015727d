//! `option external-check` and `external-check command|path` with
//! HAProxy 2.6's messages; the global `external-check` and
//! `insecure-fork-wanted` are `globalkw.rs`'s, the checks once the
//! configuration is whole `config/external_check.rs`'s.

use super::*;

impl State<'_> {
    /// `external-check command|path <value>`.
    pub(super) fn kw_external_check(&mut self, loc: &Loc, words: &[String]) {
        let mut e = self.px().external_check.clone();
        match e.parse(words) {
            Ok(()) => self.px().external_check = e,
            Err(m) => self.alert(loc, m),
        }
    }

    /// `option external-check`.
    pub(super) fn opt_external_check(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if neg {
            return self.tight(
                Level::Alert,
                loc,
                "negation/default is not supported for option 'external-check'.",
            );
        }
        if let Some(extra) = words.get(2) {
            return self.alert(
                loc,
                format!("'option external-check' cannot handle unexpected argument '{extra}'."),
            );
        }
        self.px().check_type = CheckType::External;
    }
}
