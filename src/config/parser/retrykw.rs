//! Retry keywords: `retry-on` and `option redispatch [<interval>]`
//! (`retries` is a plain integer handled with the other proxy keywords).

use super::*;
use crate::config::model::RetryOn;

impl State<'_> {
    /// `retry-on <keyword>...`: replaces the previous setting (HAProxy's
    /// `proxy_parse_retry_on`, with its messages).
    pub(super) fn kw_retry_on(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "retry-on", true, false, true) {
            return;
        }
        let args: Vec<&str> = words[1..]
            .iter()
            .map(String::as_str)
            .filter(|w| !w.is_empty())
            .collect();
        if args.is_empty() {
            return self.alert(
                loc,
                "'retry-on' needs at least one keyword to specify when to retry",
            );
        }
        let mut bits = 0;
        for (i, w) in args.iter().enumerate() {
            if *w == "none" && (i != 0 || args.len() > 1) {
                return self.alert(loc, "'retry-on' 'none' keyworld only usable alone");
            }
            match RetryOn::keyword(w) {
                Some(b) => bits |= b,
                None => return self.alert(loc, format!("'retry-on': unknown keyword '{w}'")),
            }
        }
        self.px().retry_on = RetryOn(bits);
    }

    /// `option redispatch [<interval>]` / `no option redispatch`.
    pub(super) fn redispatch_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if !self.cap(loc, "option redispatch", true, false, true) {
            return;
        }
        if neg {
            self.px().redispatch = None;
            return;
        }
        let interval = match words.get(2).map(String::as_str) {
            None | Some("") => -1,
            Some(arg) => match arg.parse::<i32>() {
                Ok(n) => n,
                Err(_) => {
                    return self.alert(
                        loc,
                        format!("'option redispatch' expects an integer interval (got '{arg}')."),
                    );
                }
            },
        };
        if words.len() > 3 {
            return self.alert(
                loc,
                "'option redispatch' expects at most one argument, the interval.",
            );
        }
        self.px().redispatch = Some(interval);
    }
}
