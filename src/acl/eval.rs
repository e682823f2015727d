//! Conditions compiled for the data plane: ACL names resolved to indices,
//! each ACL a list of (sample expression, patterns) tests evaluated on the
//! [`Ctx`] the engine builds for the request.

use crate::acl::{AclDef, AclPatterns, Condition};
use crate::sample::pattern::MatchKind;
use crate::sample::{Ctx, Expr};

/// What a condition may look at: whatever the engine knows of the
/// request at that point, as the sample engine's context.
pub(crate) trait RequestView {
    fn sample_ctx(&self) -> Ctx<'_>;
}

impl RequestView for Ctx<'_> {
    fn sample_ctx(&self) -> Ctx<'_> {
        *self
    }
}

/// One named ACL with all its `acl` lines merged (they OR together).
#[derive(Debug, Clone)]
pub(crate) struct CompiledAcl {
    pub(crate) name: String,
    tests: Vec<AclTest>,
}

#[derive(Debug, Clone)]
struct AclTest {
    expr: Expr,
    patterns: AclPatterns,
    /// `http_auth_group(<userlist>)`: the sample is a user name and the
    /// patterns are group names of that userlist; any group of the user
    /// matches (HAProxy's own matcher for this keyword).
    auth_group: bool,
}

/// The ACLs of one proxy, by index.
#[derive(Debug, Clone, Default)]
pub(crate) struct AclSet {
    acls: Vec<CompiledAcl>,
}

/// A condition whose ACL references are indices into an [`AclSet`].
#[derive(Debug, Clone)]
pub(crate) struct CompiledCond {
    unless: bool,
    groups: Vec<Vec<(usize, bool)>>,
}

impl AclSet {
    pub(crate) fn new(defs: &[AclDef]) -> Self {
        let mut acls: Vec<CompiledAcl> = Vec::new();
        for d in defs {
            let test = AclTest {
                expr: d.expr.clone(),
                patterns: d.patterns.clone(),
                auth_group: d.expr.fetch_name() == "http_auth_group",
            };
            match acls.iter_mut().find(|a| a.name == d.name) {
                Some(a) => a.tests.push(test),
                None => acls.push(CompiledAcl {
                    name: d.name.clone(),
                    tests: vec![test],
                }),
            }
        }
        AclSet { acls }
    }

    /// Whether some ACL reads the buffered request bytes (`req.ssl_sni`,
    /// `req.len`...): content inspection then waits for them.
    pub(crate) fn reads_payload(&self) -> bool {
        self.acls
            .iter()
            .flat_map(|a| &a.tests)
            .any(|t| crate::sample::fetch::reads_payload(t.expr.fetch_name()))
    }

    /// Whether some ACL reads the address the client connected to (`dst`,
    /// `dst_port`): the engine then looks it up for each request.
    pub(crate) fn reads_local(&self) -> bool {
        self.acls
            .iter()
            .flat_map(|a| &a.tests)
            .any(|t| matches!(t.expr.fetch_name(), "dst" | "dst_port"))
    }

    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.acls.iter().position(|a| a.name == name)
    }

    /// Resolves names; the config validator has already reported unknown
    /// ones, so an unknown name here is simply false.
    pub(crate) fn compile(&self, cond: &Condition) -> CompiledCond {
        CompiledCond {
            unless: cond.unless,
            groups: cond
                .groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|t| (self.index(&t.name).unwrap_or(usize::MAX), t.negated))
                        .collect()
                })
                .collect(),
        }
    }

    pub(crate) fn eval(&self, cond: &CompiledCond, req: &dyn RequestView) -> bool {
        let cx = req.sample_ctx();
        let any = cond.groups.iter().any(|group| {
            group.iter().all(|&(idx, negated)| {
                let hit = self.acls.get(idx).is_some_and(|a| a.matches(&cx));
                hit != negated
            })
        });
        any != cond.unless
    }

    /// `cond` while the server's bytes are still coming, with HAProxy's
    /// three answers: None (its `ACL_TEST_MISS`) when the answer may
    /// change with more bytes: an ACL on them that does not hold yet
    /// (`res.len`, or a `res.payload` beyond what is there), in a group
    /// no other term makes false. Once the rules must decide, [`eval`]
    /// takes such an ACL as false.
    ///
    /// [`eval`]: AclSet::eval
    pub(crate) fn eval_partial(&self, cond: &CompiledCond, req: &dyn RequestView) -> Option<bool> {
        let cx = req.sample_ctx();
        let mut open = false;
        for group in &cond.groups {
            let mut group_open = false;
            let mut failed = false;
            for &(idx, negated) in group {
                let hit = self
                    .acls
                    .get(idx)
                    .map_or(Some(false), |a| a.matches_partial(&cx));
                match hit.map(|h| h != negated) {
                    Some(true) => {}
                    Some(false) => {
                        failed = true;
                        break;
                    }
                    None => group_open = true,
                }
            }
            if failed {
                continue;
            }
            if !group_open {
                return Some(!cond.unless);
            }
            open = true;
        }
        (!open).then_some(cond.unless)
    }
}

impl CompiledAcl {
    fn matches(&self, cx: &Ctx<'_>) -> bool {
        self.tests.iter().any(|t| t.matches(cx))
    }

    /// [`AclSet::eval_partial`]'s answer for one ACL: a test that holds
    /// decides, else one that may still change leaves it open.
    fn matches_partial(&self, cx: &Ctx<'_>) -> Option<bool> {
        let mut open = false;
        for t in &self.tests {
            if t.matches(cx) {
                return Some(true);
            }
            open |= match crate::sample::fetch::reads_res_payload(t.expr.fetch_name()) {
                Some(always) => always || t.expr.eval(cx).is_none(),
                None => false,
            };
        }
        (!open).then_some(false)
    }
}

impl AclTest {
    fn matches(&self, cx: &Ctx<'_>) -> bool {
        let p = &self.patterns;
        if self.auth_group {
            let Some(user) = self.expr.eval(cx) else {
                return false;
            };
            let user = user.bytes().unwrap_or_default();
            return crate::sample::auth::with_list(self.expr.first_arg(), |l| {
                p.any_list(|groups| l.in_any_group(user, groups))
            })
            .unwrap_or(false);
        }
        // Without patterns only the matchers that use none can match
        // (HAProxy warns about the others when it reads the line).
        if p.is_empty() && !matches!(p.kind(), MatchKind::Found | MatchKind::Bool) {
            return false;
        }
        // Every value of a multi-valued fetch is tried in turn.
        self.expr.eval_each(cx, &mut |s| p.matches(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::AclTerm;
    use crate::acl::parse::parse_acl;
    use crate::loc::Loc;
    use crate::wire::h1::Head;

    fn def(name: &str, text: &str) -> AclDef {
        let words: Vec<String> = text.split_whitespace().map(String::from).collect();
        let loc = Loc {
            file: "t".into(),
            line: 1,
        };
        parse_acl(name, &words, loc).unwrap()
    }

    fn cond(unless: bool, groups: &[&[(&str, bool)]]) -> Condition {
        Condition {
            unless,
            groups: groups
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|(n, neg)| AclTerm {
                            name: n.to_string(),
                            negated: *neg,
                        })
                        .collect()
                })
                .collect(),
        }
    }

    fn head(method: &str, target: &str) -> Head {
        let raw = format!(
            "{method} {target} HTTP/1.1\r\nHost: db.example.com\r\nX-A: a, b\r\nX-A: c\r\n\r\n"
        );
        Head::parse_request(bytes::Bytes::from(raw)).unwrap()
    }

    fn cx(h: &Head) -> Ctx<'_> {
        Ctx {
            req: Some(h),
            src: Some("10.1.2.3".parse().unwrap()),
            ..Default::default()
        }
    }

    fn hit(set: &AclSet, name: &str, h: &Head) -> bool {
        set.eval(&set.compile(&cond(false, &[&[(name, false)]])), &cx(h))
    }

    #[test]
    fn method_acl_is_case_sensitive_for_known_methods() {
        let set = AclSet::new(&[
            def("w", "method POST PUT DELETE"),
            def("lc", "method -i post patch"),
        ]);
        assert!(hit(&set, "w", &head("POST", "/")));
        assert!(hit(&set, "w", &head("DELETE", "/")));
        assert!(!hit(&set, "w", &head("GET", "/")));
        assert!(!hit(&set, "lc", &head("POST", "/")));
        assert!(hit(&set, "lc", &head("PATCH", "/")));
    }

    #[test]
    fn partial_answers_wait_only_where_more_bytes_can_change_them() {
        let set = AclSet::new(&[
            def("long", "res.len ge 6"),
            def("hel", "res.payload(0,3) -m str HEL"),
            def("far", "src 10.9.9.9"),
        ]);
        let at = |res: &'static [u8]| Ctx {
            res_payload: Some(res),
            src: Some("10.1.2.3".parse().unwrap()),
            ..Default::default()
        };
        let c = |unless: bool, groups: &[&[(&str, bool)]]| set.compile(&cond(unless, groups));
        // `res.len` below its bound may grow: open until it holds.
        assert_eq!(
            set.eval_partial(&c(false, &[&[("long", false)]]), &at(b"HEL")),
            None
        );
        let long = c(false, &[&[("long", false)]]);
        assert_eq!(set.eval_partial(&long, &at(b"HELLOW")), Some(true));
        // A payload that is there is final; one still missing is open.
        let hel = c(false, &[&[("hel", false)]]);
        assert_eq!(set.eval_partial(&hel, &at(b"XYZW")), Some(false));
        assert_eq!(set.eval_partial(&hel, &at(b"HE")), None);
        // A false term of the group decides it; another group that holds
        // decides the condition.
        let and = c(false, &[&[("long", false), ("far", false)]]);
        assert_eq!(set.eval_partial(&and, &at(b"HE")), Some(false));
        let or = c(false, &[&[("long", false)], &[("far", true)]]);
        assert_eq!(set.eval_partial(&or, &at(b"HE")), Some(true));
        // Negations and `unless` leave an open answer open.
        let not = c(false, &[&[("long", true)]]);
        assert_eq!(set.eval_partial(&not, &at(b"HE")), None);
        let unless = c(true, &[&[("long", false)]]);
        assert_eq!(set.eval_partial(&unless, &at(b"HE")), None);
        // Once the rules must decide, open is false.
        assert!(set.eval(&unless, &at(b"HE")));
    }

    #[test]
    fn and_or_not_unless() {
        let set = AclSet::new(&[
            def("api", "path_beg /api/"),
            def("json", "path_end .json"),
            def("host", "hdr(host) -i DB.example.com"),
            def("xb", "hdr(x-a) b"),
            def("xc", "hdr(x-a),upper C"),
            def("dom", "hdr_dom(host) example.com"),
        ]);
        let c = set.compile(&cond(
            false,
            &[&[("api", false), ("json", true)], &[("host", false)]],
        ));
        assert!(set.eval(&c, &cx(&head("GET", "/api/x?y=1"))));
        let c2 = set.compile(&cond(false, &[&[("api", false), ("json", true)]]));
        assert!(!set.eval(&c2, &cx(&head("GET", "/api/x.json"))));
        assert!(set.eval(&c, &cx(&head("GET", "/other"))), "host matches -i");
        let u = set.compile(&cond(true, &[&[("api", false)]]));
        assert!(!set.eval(&u, &cx(&head("GET", "/api/"))));
        assert!(hit(&set, "xb", &head("GET", "/")), "comma-separated values");
        assert!(
            hit(&set, "xc", &head("GET", "/")),
            "every occurrence, converted"
        );
        assert!(hit(&set, "dom", &head("GET", "/")));
    }

    #[test]
    fn src_networks_and_found() {
        let set = AclSet::new(&[
            def("lan", "src 10.0.0.0/8"),
            def("wan", "src 11.0.0.0/8"),
            def("has", "req.hdr(x-a) -m found"),
            def("none", "req.hdr(x-b) -m found"),
        ]);
        let h = head("GET", "/");
        assert!(hit(&set, "lan", &h) && !hit(&set, "wan", &h));
        assert!(hit(&set, "has", &h) && !hit(&set, "none", &h));
    }
}
