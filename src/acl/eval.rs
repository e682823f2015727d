//! Conditions compiled for the data plane: ACL names resolved to indices,
//! patterns pre-lowered for `-i`, evaluated against a [`RequestView`].

use std::net::IpAddr;

use crate::acl::{AclDef, Condition, Fetch, MatchMethod, Pattern};

/// What a condition may look at in a request.
pub(crate) trait RequestView {
    fn method(&self) -> &[u8];
    /// The request target as sent.
    fn target(&self) -> &[u8];
    /// Values of header `name` (lower-case), each occurrence once.
    fn header_values<'a>(&'a self, name: &str, out: &mut Vec<&'a [u8]>);
    fn src(&self) -> Option<IpAddr>;
    /// The request bytes buffered before any protocol parsing (`mode
    /// tcp` content inspection); empty elsewhere.
    fn payload(&self) -> &[u8] {
        b""
    }
    /// The client connection's TLS (None: plain TCP).
    fn tls(&self) -> Option<&crate::tls::TlsFacts> {
        None
    }
    /// What the sample registry's fetches read (None: they find nothing).
    fn sample_ctx(&self) -> Option<crate::sample::Ctx<'_>> {
        None
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
    fetch: Fetch,
    matcher: MatchMethod,
    ignore_case: bool,
    patterns: Vec<Pattern>,
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
            let patterns = d
                .patterns
                .iter()
                .map(|p| match p {
                    Pattern::Str(s) if d.ignore_case => Pattern::Str(s.to_ascii_lowercase()),
                    other => other.clone(),
                })
                .collect();
            let test = AclTest {
                fetch: d.fetch.clone(),
                matcher: d.matcher,
                ignore_case: d.ignore_case,
                patterns,
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
    /// `req.ssl_hello_type`): content inspection then waits for them.
    pub(crate) fn reads_payload(&self) -> bool {
        self.acls
            .iter()
            .flat_map(|a| &a.tests)
            .any(|t| matches!(t.fetch, Fetch::ReqSslSni | Fetch::ReqSslHelloType))
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
        let any = cond.groups.iter().any(|group| {
            group.iter().all(|&(idx, negated)| {
                let hit = self.acls.get(idx).is_some_and(|a| a.matches(req));
                hit != negated
            })
        });
        any != cond.unless
    }
}

impl CompiledAcl {
    fn matches(&self, req: &dyn RequestView) -> bool {
        self.tests.iter().any(|t| t.matches(req))
    }
}

/// The standard methods HAProxy parses to an enum and compares exactly.
const KNOWN_METHODS: [&str; 8] = [
    "OPTIONS", "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "CONNECT",
];

impl AclTest {
    fn matches(&self, req: &dyn RequestView) -> bool {
        match &self.fetch {
            Fetch::Src => match req.src() {
                Some(ip) => self.patterns.iter().any(|p| ip_matches(ip, p)),
                None => false,
            },
            Fetch::ReqSslSni => crate::wire::client_hello::ssl_sni(req.payload())
                .is_some_and(|sni| self.match_bytes(sni)),
            Fetch::ReqSslHelloType => crate::wire::client_hello::ssl_hello_type(req.payload())
                .is_some_and(|t| self.match_bytes(t.to_string().as_bytes())),
            Fetch::SslFc => req.tls().is_some(),
            Fetch::SslCUsed => req.tls().is_some_and(|t| t.client_cert),
            Fetch::SslFcSni => match req.tls().and_then(|t| t.sni.as_deref()) {
                Some(sni) => self.match_bytes(sni.as_bytes()),
                None => false,
            },
            Fetch::SslFcProtocol => match req.tls() {
                Some(t) => self.match_bytes(t.protocol.as_bytes()),
                None => false,
            },
            Fetch::Sample(e) => {
                let Some(cx) = req.sample_ctx() else {
                    return false;
                };
                let Some(s) = e.eval(&cx) else { return false };
                match self.matcher {
                    MatchMethod::Bool => matches!(
                        s.cast(crate::sample::value::SmpType::Bool),
                        Some(crate::sample::value::Sample::Bool(true))
                    ),
                    MatchMethod::AuthGroup => {
                        let user = s.bytes().unwrap_or_default();
                        crate::sample::auth::with_list(e.first_arg(), |l| {
                            l.in_any_group(
                                user,
                                self.patterns.iter().filter_map(|p| match p {
                                    Pattern::Str(g) => Some(g.as_str()),
                                    Pattern::Net { .. } => None,
                                }),
                            )
                        })
                        .unwrap_or(false)
                    }
                    _ => s
                        .cast(crate::sample::value::SmpType::Str)
                        .and_then(|s| s.bytes().map(|b| self.match_bytes(b)))
                        .unwrap_or(false),
                }
            }
            Fetch::Method => self.match_bytes(req.method()),
            Fetch::Url => self.match_bytes(req.target()),
            Fetch::Path => self.match_bytes(path_of(req.target())),
            Fetch::Hdr(name) => {
                let mut vals = Vec::new();
                req.header_values(name, &mut vals);
                vals.iter().any(|v| {
                    v.split(|&b| b == b',')
                        .any(|part| self.match_bytes(part.trim_ascii()))
                })
            }
        }
    }

    fn match_bytes(&self, sample: &[u8]) -> bool {
        self.patterns.iter().any(|p| {
            let Pattern::Str(pat) = p else { return false };
            let pat = pat.as_bytes();
            // A standard method is an enum in HAProxy: it only equals the
            // same standard method, whatever `-i` says.
            if self.matcher == MatchMethod::Method
                && (KNOWN_METHODS.iter().any(|m| m.as_bytes() == pat)
                    || KNOWN_METHODS.iter().any(|m| m.as_bytes() == sample))
            {
                return sample == pat;
            }
            let eq = |a: &[u8], b: &[u8]| {
                if self.ignore_case {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            match self.matcher {
                MatchMethod::Str | MatchMethod::Method => eq(sample, pat),
                MatchMethod::Beg => sample.len() >= pat.len() && eq(&sample[..pat.len()], pat),
                MatchMethod::End => {
                    sample.len() >= pat.len() && eq(&sample[sample.len() - pat.len()..], pat)
                }
                MatchMethod::Sub => pat.is_empty() || sample.windows(pat.len()).any(|w| eq(w, pat)),
                MatchMethod::Ip | MatchMethod::Bool | MatchMethod::AuthGroup => false,
            }
        })
    }
}

/// The path of a request target: origin form up to `?`; for the absolute
/// form, the part after the authority.
pub(crate) fn path_of(target: &[u8]) -> &[u8] {
    let mut t = target;
    if let Some(pos) = t.windows(3).position(|w| w == b"://") {
        let rest = &t[pos + 3..];
        t = match rest.iter().position(|&b| b == b'/') {
            Some(slash) => &rest[slash..],
            None => b"/",
        };
    }
    match t.iter().position(|&b| b == b'?') {
        Some(q) => &t[..q],
        None => t,
    }
}

pub(crate) fn ip_matches(ip: IpAddr, p: &Pattern) -> bool {
    let Pattern::Net { addr, prefix } = p else {
        return false;
    };
    // An IPv4-mapped IPv6 client matches IPv4 patterns.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match (ip, addr) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let bits = (*prefix).min(32) as u32;
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (u32::from(a) & mask) == (u32::from(*b) & mask)
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let bits = (*prefix).min(128) as u32;
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            (u128::from(a) & mask) == (u128::from(*b) & mask)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::AclTerm;
    use crate::loc::Loc;

    struct Req {
        method: &'static str,
        target: &'static str,
        headers: Vec<(&'static str, &'static str)>,
        src: IpAddr,
    }

    impl RequestView for Req {
        fn method(&self) -> &[u8] {
            self.method.as_bytes()
        }
        fn target(&self) -> &[u8] {
            self.target.as_bytes()
        }
        fn header_values<'a>(&'a self, name: &str, out: &mut Vec<&'a [u8]>) {
            for (n, v) in &self.headers {
                if n.eq_ignore_ascii_case(name) {
                    out.push(v.as_bytes());
                }
            }
        }
        fn src(&self) -> Option<IpAddr> {
            Some(self.src)
        }
    }

    fn def(name: &str, fetch: Fetch, m: MatchMethod, i: bool, pats: &[&str]) -> AclDef {
        AclDef {
            name: name.into(),
            fetch,
            matcher: m,
            ignore_case: i,
            patterns: pats.iter().map(|p| Pattern::Str(p.to_string())).collect(),
            loc: Loc {
                file: "t".into(),
                line: 1,
            },
        }
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

    fn req(method: &'static str, target: &'static str) -> Req {
        Req {
            method,
            target,
            headers: vec![("Host", "db.example.com"), ("X-A", "a, b")],
            src: "10.1.2.3".parse().unwrap(),
        }
    }

    #[test]
    fn method_acl_is_case_sensitive_for_known_methods() {
        let set = AclSet::new(&[
            def(
                "w",
                Fetch::Method,
                MatchMethod::Method,
                false,
                &["POST", "PUT", "DELETE"],
            ),
            def(
                "lc",
                Fetch::Method,
                MatchMethod::Method,
                true,
                &["post", "patch"],
            ),
        ]);
        let w = set.compile(&cond(false, &[&[("w", false)]]));
        let lc = set.compile(&cond(false, &[&[("lc", false)]]));
        assert!(set.eval(&w, &req("POST", "/")));
        assert!(set.eval(&w, &req("DELETE", "/")));
        assert!(!set.eval(&w, &req("GET", "/")));
        assert!(!set.eval(&lc, &req("POST", "/")));
        assert!(set.eval(&lc, &req("PATCH", "/")));
    }

    #[test]
    fn and_or_not_unless() {
        let set = AclSet::new(&[
            def("api", Fetch::Path, MatchMethod::Beg, false, &["/api/"]),
            def("json", Fetch::Path, MatchMethod::End, false, &[".json"]),
            def(
                "host",
                Fetch::Hdr("host".into()),
                MatchMethod::Str,
                true,
                &["DB.example.com"],
            ),
            def(
                "xb",
                Fetch::Hdr("x-a".into()),
                MatchMethod::Str,
                false,
                &["b"],
            ),
        ]);
        let c = set.compile(&cond(
            false,
            &[&[("api", false), ("json", true)], &[("host", false)]],
        ));
        assert!(set.eval(&c, &req("GET", "/api/x?y=1")));
        let c2 = set.compile(&cond(false, &[&[("api", false), ("json", true)]]));
        assert!(!set.eval(&c2, &req("GET", "/api/x.json")));
        assert!(set.eval(&c, &req("GET", "/other")), "host matches -i");
        let u = set.compile(&cond(true, &[&[("api", false)]]));
        assert!(!set.eval(&u, &req("GET", "/api/")));
        let xb = set.compile(&cond(false, &[&[("xb", false)]]));
        assert!(set.eval(&xb, &req("GET", "/")), "comma-separated values");
    }

    #[test]
    fn src_networks() {
        let mut d = def("lan", Fetch::Src, MatchMethod::Ip, false, &[]);
        d.patterns = vec![Pattern::Net {
            addr: "10.0.0.0".parse().unwrap(),
            prefix: 8,
        }];
        let set = AclSet::new(&[d]);
        let c = set.compile(&cond(false, &[&[("lan", false)]]));
        assert!(set.eval(&c, &req("GET", "/")));
    }

    #[test]
    fn paths() {
        assert_eq!(path_of(b"/a/b?c=d"), b"/a/b");
        assert_eq!(path_of(b"http://h:1/x?y"), b"/x");
        assert_eq!(path_of(b"http://h"), b"/");
    }
}
