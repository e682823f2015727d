//! The proxy keywords whose settings `config/extras.rs` holds:
//! `description`, `source`, `dispatch`, `http-send-name-header`,
//! `rate-limit sessions`, `clitcpka-*`/`srvtcpka-*`, and the options
//! `originalto` and `transparent`.

use super::*;

impl State<'_> {
    /// `description <text>...`: the words joined with one space. Not in
    /// `defaults`, as in HAProxy.
    pub(super) fn kw_description(&mut self, loc: &Loc, words: &[String]) {
        if self.proxy_kind().is_none() {
            return self.tight(
                Level::Alert,
                loc,
                "'description' not allowed in 'defaults' section.",
            );
        }
        let text = words[1..].join(" ");
        if text.is_empty() {
            return self.tight(
                Level::Alert,
                loc,
                "'description' expects a string argument.",
            );
        }
        self.px().extras.description = Some(text);
    }
}
