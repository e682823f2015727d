//! The header-rewriting keywords HAProxy 2.1 removed (`reqadd`, `reqrep`,
//! `rspdel`, `block`...), parsed with HAProxy 1.8's syntax and warned
//! about with HAProxy 2.0's deprecation messages (`cfgparse-listen.c`).

use super::*;
use crate::config::model::{LegacyAction, LegacyAdd, LegacyFilter};

/// Whether `k` is one of the legacy rewriting keywords.
pub(super) fn is_legacy(k: &str) -> bool {
    kw::PROXY_LEGACY.contains(&k)
}

/// What a legacy keyword is: direction, action, whether it ignores case.
struct Shape {
    response: bool,
    action: Act,
    icase: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Act {
    Add,
    Allow,
    Deny,
    Tarpit,
    Pass,
    Remove,
    Replace,
    Block,
}

fn shape(k: &str) -> Option<Shape> {
    if k == "block" {
        return Some(Shape {
            response: false,
            action: Act::Block,
            icase: false,
        });
    }
    let (response, rest) = if let Some(r) = k.strip_prefix("req") {
        (false, r)
    } else {
        (true, k.strip_prefix("rsp")?)
    };
    let (icase, verb) = match rest {
        "add" => (false, "add"),
        _ => match rest.strip_prefix('i') {
            Some(v) => (true, v),
            None => (false, rest),
        },
    };
    let action = match verb {
        "add" => Act::Add,
        "allow" => Act::Allow,
        "deny" => Act::Deny,
        "tarpit" => Act::Tarpit,
        "pass" => Act::Pass,
        "del" => Act::Remove,
        "rep" => Act::Replace,
        _ => return None,
    };
    Some(Shape {
        response,
        action,
        icase,
    })
}

/// HAProxy 2.0's warning family of a keyword (it warns once per family
/// and per process) and the modern replacement it names.
fn deprecation(k: &str, s: &Shape) -> (&'static str, String) {
    let side = if s.response {
        "http-response"
    } else {
        "http-request"
    };
    let modern = |what: &str| -> String {
        format!(
            "The '{k}' directive is deprecated in favor of '{side} {what}' and will be removed in next version."
        )
    };
    match s.action {
        Act::Block => (
            "block",
            format!(
                "The '{k}' directive is now deprecated in favor of 'http-request deny' which uses the exact same syntax. The rules are translated but support might disappear in a future version."
            ),
        ),
        // `reqrep` names both replacements, `reqirep` only one (2.0).
        Act::Replace if k == "reqrep" => (
            "reqrep",
            format!(
                "The '{k}' directive is deprecated in favor of 'http-request replace-uri' and 'http-request replace-header' and will be removed in next version."
            ),
        ),
        Act::Replace => (
            if s.response { "rsprep" } else { "reqrep" },
            modern("replace-header"),
        ),
        Act::Remove => (
            if s.response { "rspdel" } else { "reqdel" },
            modern("del-header"),
        ),
        Act::Deny => (
            if s.response { "rspdeny" } else { "reqdeny" },
            modern("deny"),
        ),
        Act::Add => (
            if s.response { "rspadd" } else { "reqadd" },
            modern("add-header"),
        ),
        Act::Allow => ("reqallow", modern("allow")),
        Act::Tarpit => ("reqtarpit", modern("tarpit")),
        Act::Pass => (
            "reqpass",
            format!("The '{k}' directive is deprecated and will be removed in next version."),
        ),
    }
}

/// The request rule kinds in the order HAProxy runs them, whatever order
/// they are written in.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ReqStage {
    Block,
    HttpRequest,
    ReqXxx,
    ReqAdd,
    Redirect,
    UseBackend,
}

impl State<'_> {
    /// HAProxy 2.0's `warnif_misplaced_*`: a rule written after one that
    /// runs after it gets a warning naming the first such kind.
    pub(super) fn warn_misplaced(&mut self, loc: &Loc, keyword: &str, stage: ReqStage) {
        if !matches!(self.section, Section::Proxy(_)) {
            return;
        }
        let p = self.px();
        let later = [
            (
                ReqStage::HttpRequest,
                !p.http_request.is_empty(),
                "an 'http-request'",
            ),
            (
                ReqStage::ReqXxx,
                !p.legacy_req.filters.is_empty(),
                "a 'reqxxx'",
            ),
            (
                ReqStage::ReqAdd,
                !p.legacy_req.adds.is_empty(),
                "a 'reqadd'",
            ),
            (ReqStage::Redirect, !p.redirects.is_empty(), "a 'redirect'"),
            (
                ReqStage::UseBackend,
                !p.use_backends.is_empty(),
                "a 'use_backend'",
            ),
        ];
        if let Some((_, _, what)) = later.iter().find(|(s, present, _)| *s > stage && *present) {
            self.warn(
                loc,
                format!(
                    "a '{keyword}' rule placed after {what} rule will still be processed before."
                ),
            );
        }
    }

    /// `reqxxx` / `rspxxx` / `block`, with HAProxy 1.8's arguments.
    pub(super) fn kw_legacy_rewrite(&mut self, loc: &Loc, words: &[String]) {
        let k = words[0].as_str();
        let Some(s) = shape(k) else {
            return self.unsupported(loc, k);
        };
        let (family, msg) = deprecation(k, &s);
        if !self.legacy_warned.contains(&family) {
            self.legacy_warned.push(family);
            self.warn(loc, msg);
        }
        if !self.cap(loc, k, false, true, true) {
            return;
        }
        if s.action == Act::Block {
            return self.legacy_block(loc, words);
        }
        let arg = |i: usize| words.get(i).map_or("", String::as_str);
        // Position of the optional condition.
        let cond_at = match s.action {
            Act::Add => {
                if arg(1).is_empty() {
                    return self.alert(loc, format!("'{k}' expects <header> as an argument."));
                }
                2
            }
            Act::Replace => {
                if arg(2).is_empty() {
                    return self.alert(
                        loc,
                        format!("'{k}' expects <search> and <replace> as arguments."),
                    );
                }
                3
            }
            _ => {
                if arg(1).is_empty() {
                    return self.alert(loc, format!("'{k}' expects <regex> as an argument."));
                }
                2
            }
        };
        let cond = match arg(cond_at) {
            "" => None,
            "if" | "unless" => match self.condition(loc, &words[cond_at..]) {
                Ok(c) => Some(c),
                Err(e) => {
                    return self.alert(
                        loc,
                        format!(
                            "error detected while parsing a '{k}' condition : {e}{}",
                            stop(&e)
                        ),
                    );
                }
            },
            other => {
                return self.alert(
                    loc,
                    format!("'{k}' : Expecting nothing, 'if', or 'unless', got '{other}'."),
                );
            }
        };
        if !s.response {
            let stage = if s.action == Act::Add {
                ReqStage::ReqAdd
            } else {
                ReqStage::ReqXxx
            };
            self.warn_misplaced(loc, k, stage);
        }
        if s.action == Act::Add {
            let add = LegacyAdd {
                line: arg(1).as_bytes().to_vec(),
                cond,
            };
            let p = self.px();
            let rules = if s.response {
                &mut p.legacy_rsp
            } else {
                &mut p.legacy_req
            };
            rules.adds.push(add);
            return;
        }
        let re = match crate::config::model::ByteRegex::new(arg(1), s.icase) {
            Ok(re) => re,
            Err(e) => {
                let reg = arg(1);
                return self.alert(
                    loc,
                    format!("'{k}' : regular expression '{reg}' : {}", one_line(&e)),
                );
            }
        };
        let action = match s.action {
            Act::Allow => LegacyAction::Allow,
            Act::Deny => LegacyAction::Deny,
            Act::Tarpit => LegacyAction::Tarpit,
            Act::Pass => LegacyAction::Pass,
            Act::Remove => LegacyAction::Remove,
            _ => LegacyAction::Replace(arg(2).as_bytes().to_vec()),
        };
        if !s.response && !self.px().redirects.is_empty() {
            self.warn(
                loc,
                format!(
                    "a '{k}' rule placed after a 'redirect' rule will still be processed before."
                ),
            );
        }
        let filter = LegacyFilter { re, action, cond };
        let p = self.px();
        if s.response {
            p.legacy_rsp.filters.push(filter);
        } else {
            p.legacy_req.filters.push(filter);
        }
    }

    /// `block [{if|unless} <cond>]`: an `http-request deny` (403) run
    /// before every `http-request` rule (HAProxy 1.6–2.2 put it there).
    fn legacy_block(&mut self, loc: &Loc, words: &[String]) {
        let cond = match words.get(1).map(String::as_str) {
            None | Some("") => None,
            Some("if" | "unless") => match self.condition(loc, &words[1..]) {
                Ok(c) => Some(c),
                Err(e) => {
                    return self.alert(
                        loc,
                        format!(
                            "error detected while parsing an 'http-request deny' condition : {e}{}",
                            stop(&e)
                        ),
                    );
                }
            },
            Some(other) => {
                return self.alert(
                    loc,
                    format!("'block' : Expecting nothing, 'if', or 'unless', got '{other}'."),
                );
            }
        };
        self.warn_misplaced(loc, "block", ReqStage::Block);
        self.px().blocks.push(HttpRequestRule {
            action: HttpRequestAction::Deny(HttpReply::error_page(403)),
            cond,
        });
    }
}

/// A regex compile error on one line (the crate's is multi-line).
fn one_line(e: &regex::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let s = shape("reqirep").expect("reqirep");
        assert!(!s.response && s.icase && s.action == Act::Replace);
        let s = shape("rspadd").expect("rspadd");
        assert!(s.response && !s.icase && s.action == Act::Add);
        let s = shape("reqidel").expect("reqidel");
        assert!(s.icase && s.action == Act::Remove);
        let s = shape("reqitarpit").expect("reqitarpit");
        assert!(s.icase && s.action == Act::Tarpit);
        for k in kw::PROXY_LEGACY {
            assert!(shape(k).is_some(), "{k}");
        }
    }
}
