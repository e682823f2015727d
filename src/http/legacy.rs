//! The `req*` / `rsp*` header filters of HAProxy ≤ 2.0 (`reqrep`,
//! `reqdel`, `reqdeny`, `rspadd`...), with HAProxy 1.8's semantics: each
//! filter's regex is tried on the start line, then on every header line
//! (`name: value` as received), in configuration order.
//!
//! They work on lines, not on named headers, and may rewrite the request
//! line, so they run on a copy of the head as it stands (the received one
//! with the edits of the rules run before folded in) and, when they change
//! it, the result is parsed again: a rewrite that leaves an invalid head is
//! refused (400 for a request, 502 for a response), as HAProxy 1.8 does.
//! A proxy without such filters has none compiled: nothing here runs.

use crate::acl::eval::{AclSet, RequestView};
use crate::config::model::LegacyAction;
use crate::http::rules::{self, Edits};
use crate::snapshot::legacy_rt::LegacyRt;
use crate::wire::h1::Head;

/// What the filters decided.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The message goes on: as it was (None), or as rewritten.
    Pass(Option<Head>),
    /// `reqdeny` (403) / `rspdeny` (502).
    Deny,
    /// `reqtarpit`.
    Tarpit,
    /// A rewrite left a head that does not parse.
    Invalid,
}

/// Runs `l` over `head` (with `edits`, the changes of the rules run
/// before, folded in). `allowed` is HAProxy's per-transaction "allowed"
/// flag: set by `reqallow`, it makes later allow/deny/tarpit/pass filters
/// (this proxy's and the backend's) be skipped. Conditions see the
/// request as `view` shows it.
pub(crate) fn apply(
    l: &LegacyRt,
    head: &Head,
    edits: Option<&Edits>,
    acls: &AclSet,
    view: &dyn RequestView,
    allowed: &mut bool,
) -> Verdict {
    let mut lines = rules::head_lines(head, edits);
    // Unchanged by the filters, the head goes on as it was, the rules'
    // edits still to be applied when it is forwarded.
    let mut changed = false;
    'filters: for (re, action, cond) in &l.filters {
        let verdict_kind = matches!(
            action,
            LegacyAction::Allow | LegacyAction::Deny | LegacyAction::Tarpit | LegacyAction::Pass
        );
        if *allowed && verdict_kind {
            continue;
        }
        if let Some(c) = cond
            && !acls.eval(c, view)
        {
            continue;
        }
        // `del` never applies to the start line.
        let mut i = usize::from(*action == LegacyAction::Remove);
        while i < lines.len() {
            if !re.is_match(&lines[i]) {
                i += 1;
                continue;
            }
            match action {
                LegacyAction::Allow => {
                    *allowed = true;
                    break;
                }
                LegacyAction::Deny => return Verdict::Deny,
                LegacyAction::Tarpit => return Verdict::Tarpit,
                LegacyAction::Pass => break 'filters,
                LegacyAction::Remove => {
                    lines.remove(i);
                    changed = true;
                }
                LegacyAction::Replace(fmt) => {
                    if let Some(new) = rules::substitute(re, &lines[i], fmt) {
                        lines[i] = new;
                        changed = true;
                    }
                    // A rewritten start line ends this filter (HAProxy).
                    if i == 0 {
                        break;
                    }
                    i += 1;
                }
            }
        }
    }
    for (line, cond) in &l.adds {
        if cond.as_ref().is_none_or(|c| acls.eval(c, view)) {
            lines.push(line.clone());
            changed = true;
        }
    }
    if !changed {
        return Verdict::Pass(None);
    }
    match rules::rebuild(&lines, head.status != 0) {
        Some(h) => Verdict::Pass(Some(h)),
        None => Verdict::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{LegacyAdd, LegacyFilter, LegacyRules};
    use bytes::Bytes;

    struct NoView;
    impl RequestView for NoView {
        fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
            crate::sample::Ctx::default()
        }
    }

    fn rules(filters: &[(&str, bool, LegacyAction)], adds: &[&str]) -> LegacyRules {
        LegacyRules {
            filters: filters
                .iter()
                .map(|(re, icase, action)| LegacyFilter {
                    re: crate::config::model::ByteRegex::new(re, *icase).expect("regex"),
                    action: action.clone(),
                    cond: None,
                })
                .collect(),
            adds: adds
                .iter()
                .map(|a| LegacyAdd {
                    line: a.as_bytes().to_vec(),
                    cond: None,
                })
                .collect(),
        }
    }

    fn run(r: &LegacyRules, raw: &str, allowed: &mut bool) -> Verdict {
        let acls = AclSet::new(&[]);
        let l = LegacyRt::compile(r, &acls).expect("rules");
        let head = Head::parse_request(Bytes::from(raw.to_string())).expect("head");
        apply(&l, &head, None, &acls, &NoView, allowed)
    }

    fn raw_of(v: Verdict) -> String {
        match v {
            Verdict::Pass(Some(h)) => String::from_utf8_lossy(&h.raw).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rewrites_request_line_and_headers() {
        let r = rules(
            &[
                (
                    r"^([^ :]*) /static/(.*)",
                    false,
                    LegacyAction::Replace(br"\1 /\2".to_vec()),
                ),
                ("^x-drop:", true, LegacyAction::Remove),
            ],
            &["X-Added: yes"],
        );
        let out = run(
            &r,
            "GET /static/a.css HTTP/1.1\r\nHost: h\r\nX-Drop: 1\r\nx-drop: 2\r\n\r\n",
            &mut false,
        );
        assert_eq!(
            raw_of(out),
            "GET /a.css HTTP/1.1\r\nHost: h\r\nX-Added: yes\r\n\r\n"
        );
    }

    #[test]
    fn verdicts_follow_haproxy_1_8() {
        let deny = |icase| rules(&[("^user-agent: bot", icase, LegacyAction::Deny)], &[]);
        let req = "GET / HTTP/1.1\r\nUser-Agent: Bot\r\n\r\n";
        assert!(matches!(run(&deny(true), req, &mut false), Verdict::Deny));
        assert!(matches!(
            run(&deny(false), req, &mut false),
            Verdict::Pass(None)
        ));
        // An earlier allow skips a later deny.
        let r = rules(
            &[
                ("^Host: www", false, LegacyAction::Allow),
                ("^Host:", false, LegacyAction::Deny),
            ],
            &[],
        );
        let mut allowed = false;
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: www.a\r\n\r\n", &mut allowed),
            Verdict::Pass(None)
        ));
        assert!(allowed);
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", &mut false),
            Verdict::Deny
        ));
        // A pass stops the later filters.
        let r = rules(
            &[
                ("^Host: ok", false, LegacyAction::Pass),
                ("^Host:", false, LegacyAction::Tarpit),
            ],
            &[],
        );
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: ok\r\n\r\n", &mut false),
            Verdict::Pass(None)
        ));
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: ko\r\n\r\n", &mut false),
            Verdict::Tarpit
        ));
    }

    #[test]
    fn response_without_reason() {
        let r = rules(&[("^Server:", false, LegacyAction::Remove)], &[]);
        let acls = AclSet::new(&[]);
        let l = LegacyRt::compile(&r, &acls).expect("rules");
        let head = Head::parse_response(Bytes::from_static(
            b"HTTP/1.1 204\r\nServer: x\r\nA: b\r\n\r\n",
        ))
        .expect("head");
        match apply(&l, &head, None, &acls, &NoView, &mut false) {
            Verdict::Pass(Some(h)) => {
                assert_eq!(h.status, 204);
                assert_eq!(&h.raw[..], b"HTTP/1.1 204 \r\nA: b\r\n\r\n");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_broken_request_line_is_invalid() {
        let r = rules(
            &[(
                "^GET (.*)",
                false,
                LegacyAction::Replace(br"GET\1".to_vec()),
            )],
            &[],
        );
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", &mut false),
            Verdict::Invalid
        ));
        let r = rules(
            &[(
                "^Host:",
                false,
                LegacyAction::Replace(b"Host: a\r\n\r\nX".to_vec()),
            )],
            &[],
        );
        assert!(matches!(
            run(&r, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", &mut false),
            Verdict::Invalid
        ));
    }
}
