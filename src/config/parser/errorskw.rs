//! Error pages beyond a proxy's own `errorfile`: `http-errors` sections
//! (named sets of `errorfile` pages), the proxies' `errorfiles <name>
//! [<code>...]` that import them, and `errorloc`, `errorloc302`,
//! `errorloc303` (a redirect in place of an error page). Every page ends
//! up in the proxy's `errorfiles`, which the data plane already serves.

use bytes::Bytes;

use super::*;
use crate::config::extras::ErrorsRef;

/// One `http-errors <name>` section and its pages.
#[derive(Debug)]
pub(crate) struct HttpErrors {
    name: String,
    loc: Loc,
    pages: Vec<(u16, Bytes)>,
}

/// Why an error page file could not be had, in HAProxy's words.
fn read_page(path: &str, code: u16) -> Result<Bytes, String> {
    let bytes = std::fs::read(crate::sys::cfgdir::resolve(path))
        .map_err(|_| format!("error opening file '{path}'."))?;
    // An empty file (`/dev/null`) is an empty answer: the connection is
    // closed without a byte.
    if bytes.is_empty() {
        return Ok(Bytes::new());
    }
    crate::wire::error_pages::load_errorfile(&bytes).ok_or_else(|| {
        format!("unable to parse the custom error message file '{path}' for code {code} : not a valid HTTP response.")
    })
}

/// A status code HAProxy has a page for, from a configuration word.
fn page_code(word: &str) -> Option<u16> {
    parse_u32(word)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| ERROR_PAGE_CODES.contains(c))
}

/// HAProxy's redirect of `errorloc*`: its status line and fields, which
/// go out lower-cased as every page does.
fn redirect_page(status: u16, url: &str) -> Option<Bytes> {
    let reason = if status == 303 { "See Other" } else { "Found" };
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nCache-Control: no-cache\r\nContent-length: 0\r\nLocation: {url}\r\n\r\n"
    );
    crate::wire::error_pages::load_errorfile(text.as_bytes())
}

impl State<'_> {
    /// `http-errors <name>`: a new section (a second one of the same name
    /// is refused, as in HAProxy; words after the name are ignored).
    pub(super) fn start_http_errors(&mut self, loc: &Loc, words: &[String]) {
        self.section = Section::Skip;
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "missing name for http-errors section.");
        };
        if let Some(other) = self.http_errors.iter().find(|e| e.name == *name) {
            let msg = format!(
                "http-errors section '{name}' already exists (declared at {}).",
                other.loc
            );
            return self.tight(Level::Alert, loc, msg);
        }
        self.http_errors.push(HttpErrors {
            name: name.clone(),
            loc: loc.clone(),
            pages: Vec::new(),
        });
        self.section = Section::HttpErrors(self.http_errors.len() - 1);
    }

    /// A line of an `http-errors` section: `errorfile <code> <file>`.
    pub(super) fn http_errors_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        if words[0] != "errorfile" {
            return self.alert(
                loc,
                format!("unknown keyword '{}' in 'http-errors' section", words[0]),
            );
        }
        let (Some(code), Some(path)) = (words.get(1), words.get(2)) else {
            return self.alert(
                loc,
                "errorfile: expects <status_code> and <file> as arguments.",
            );
        };
        let Some(code) = page_code(code) else {
            return self.alert(
                loc,
                format!("errorfile : status code '{code}' not handled."),
            );
        };
        match read_page(path, code) {
            Ok(page) => {
                let pages = &mut self.http_errors[i].pages;
                pages.retain(|(c, _)| *c != code);
                pages.push((code, page));
            }
            Err(e) => self.alert(loc, format!("errorfile : {e}")),
        }
    }

    /// `errorfiles <name> [<code>...]`: the pages of an `http-errors`
    /// section, all of them or those of the codes listed; the section may
    /// come later in the file.
    pub(super) fn kw_errorfiles(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "errorfiles", true, true, true) {
            return;
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "errorfiles : expects <name> as argument.");
        };
        let mut codes = Vec::new();
        for w in &words[2..] {
            match page_code(w) {
                Some(c) => codes.push(c),
                None => {
                    return self.alert(loc, format!("errorfiles : status code '{w}' not handled."));
                }
            }
        }
        let before = self.px().errorfiles.clone();
        self.px().extras.error_refs.push(ErrorsRef {
            name: name.clone(),
            codes,
            loc: loc.clone(),
            before,
        });
    }

    /// `errorloc|errorloc302|errorloc303 <code> <url>`: the error of
    /// `<code>` answered with a redirect to `<url>` (302, or 303 for
    /// `errorloc303`).
    pub(super) fn kw_errorloc(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        if !self.cap(loc, k, true, true, true) {
            return;
        }
        let (Some(code), Some(url)) = (words.get(1), words.get(2)) else {
            return self.alert(
                loc,
                format!("{k} : expects <status_code> and <url> as arguments."),
            );
        };
        let Some(code) = page_code(code) else {
            return self.alert(loc, format!("{k} : status code '{code}' not handled."));
        };
        let status = if k == "errorloc303" { 303 } else { 302 };
        let Some(page) = redirect_page(status, url) else {
            return self.alert(loc, format!("{k} : invalid <url> '{url}'."));
        };
        let p = self.px();
        p.errorfiles.retain(|(c, _)| *c != code);
        p.errorfiles.push((code, page));
    }

    /// Once every section is read: the replies of `http-request` and
    /// `http-response` rules that name an `http-errors` section
    /// (`errorfiles <name>`) take its page for their status, or an empty
    /// answer when it has none, with HAProxy's messages.
    pub(super) fn finish_reply_sections(&mut self) {
        use crate::config::model::{HttpReply, HttpRequestAction as Q, HttpResponseAction as R};
        let mut diags = Vec::new();
        for p in &mut self.proxies {
            let mut resolve = |reply: &mut HttpReply| {
                let crate::config::model::ReplyBody::Section(name) = &reply.body else {
                    return;
                };
                let Some(section) = self.http_errors.iter().find(|e| e.name == *name) else {
                    diags.push(Diagnostic::alert(
                        None,
                        format!(
                            "Proxy '{}': unknown http-errors section '{name}' referenced by an http reply .",
                            p.name
                        ),
                    ));
                    return;
                };
                reply.body = match section.pages.iter().find(|(c, _)| *c == reply.status) {
                    Some((_, page)) => crate::config::model::ReplyBody::Message(page.to_vec()),
                    None => {
                        diags.push(Diagnostic::warning(
                            None,
                            format!(
                                "Proxy '{}': status '{}' referenced by an http reply not declared in http-errors section '{name}'.",
                                p.name, reply.status
                            ),
                        ));
                        // An empty answer, as HAProxy sends it then.
                        crate::config::model::ReplyBody::Static(Vec::new())
                    }
                };
            };
            for r in &mut p.http_request {
                if let Q::Return(reply) | Q::Deny(reply) | Q::Tarpit(reply) = &mut r.action {
                    resolve(reply);
                }
            }
            for r in &mut p.http_response {
                if let R::Return(reply) | R::Deny(reply) = &mut r.action {
                    resolve(reply);
                }
            }
        }
        self.diags.extend(diags);
    }

    /// Once every section is read: each proxy's `errorfiles` lines, in
    /// order, put their sections' pages in the proxy's, except where a
    /// later `errorfile` or `errorloc` line set the code again.
    pub(super) fn finish_errorfiles(&mut self) {
        let mut diags = Vec::new();
        for p in &mut self.proxies {
            let refs = std::mem::take(&mut p.extras.error_refs);
            let own = p.errorfiles.clone();
            let page_of = |pages: &[(u16, Bytes)], c: u16| {
                pages.iter().find(|(k, _)| *k == c).map(|(_, b)| b.clone())
            };
            for r in &refs {
                let Some(section) = self.http_errors.iter().find(|e| e.name == r.name) else {
                    diags.push(Diagnostic::alert(
                        Some(r.loc.clone()),
                        format!(
                            "proxy '{}': unknown http-errors section '{}' (at {}).",
                            p.name, r.name, r.loc
                        ),
                    ));
                    continue;
                };
                let codes: Vec<u16> = if r.codes.is_empty() {
                    ERROR_PAGE_CODES.to_vec()
                } else {
                    r.codes.clone()
                };
                for c in codes {
                    let Some(page) = page_of(&section.pages, c) else {
                        if !r.codes.is_empty() {
                            diags.push(Diagnostic::warning(
                                Some(r.loc.clone()),
                                format!(
                                    "config: proxy '{}' : status '{c}' not declared in http-errors section '{}' (at {}).",
                                    p.name, r.name, r.loc
                                ),
                            ));
                        }
                        continue;
                    };
                    // A page of the proxy's own set after this line wins.
                    if page_of(&own, c) != page_of(&r.before, c) {
                        continue;
                    }
                    p.errorfiles.retain(|(k, _)| *k != c);
                    p.errorfiles.push((c, page));
                }
            }
            p.extras.error_refs = refs;
        }
        self.diags.extend(diags);
    }
}
