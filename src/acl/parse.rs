//! Config words to ACL definitions and conditions (pure).
//!
//! Error strings are HAProxy's inner texts; the config parser wraps them
//! (`error detected while parsing ACL 'x' : <msg>.`).

use std::net::IpAddr;

use crate::acl::{AclDef, AclTerm, Condition, Fetch, MatchMethod, Pattern};
use crate::loc::Loc;

/// ACL fetches HAProxy knows that sluice does not evaluate (yet); naming
/// them gives a clearer error than "unknown fetch method".
const UNSUPPORTED_FETCHES: &[&str] = &[
    "base",
    "base_beg",
    "base_dir",
    "base_dom",
    "base_end",
    "base_len",
    "base_reg",
    "base_sub",
    "cook",
    "cook_beg",
    "cook_cnt",
    "cook_end",
    "cook_sub",
    "dst",
    "dst_port",
    "hdr_cnt",
    "hdr_dir",
    "hdr_dom",
    "hdr_ip",
    "hdr_len",
    "hdr_reg",
    "hdr_val",
    "nbsrv",
    "path_dir",
    "path_dom",
    "path_len",
    "path_reg",
    "query",
    "req.hdr",
    "req.cook",
    "req_ssl_sni",
    "req.ssl_sni",
    "req.len",
    "req.payload",
    "src_port",
    "url_dir",
    "url_dom",
    "url_ip",
    "url_len",
    "url_param",
    "url_port",
    "url_reg",
    "urlp",
    "req.ver",
    "req_ver",
    "status",
    "always_true",
    "always_false",
    "be_id",
    "fe_id",
    "srv_id",
    "capture.req.uri",
    "http_first_req",
    "so_id",
    "wait_end",
    "req.body",
];

/// Known fetches (without their `(arg)` part) for the "unknown fetch" check.
/// `fetch_text` is the fetch part of `criterion` (which messages quote).
fn fetch_of(fetch_text: &str, criterion: &str) -> Result<(Fetch, MatchMethod), String> {
    let (kw, arg) = match fetch_text.split_once('(') {
        Some((kw, rest)) => match rest.strip_suffix(')') {
            Some(arg) => (kw, Some(arg)),
            None => {
                return Err(format!(
                    "missing closing ')' after arguments to fetch keyword '{kw}' in ACL expression '{criterion}'"
                ));
            }
        },
        None => (fetch_text, None),
    };
    let no_arg = |f: Fetch, m: MatchMethod| match arg {
        None | Some("") => Ok((f, m)),
        Some(_) => Err(format!(
            "fetch method '{kw}' does not support any args in ACL expression '{criterion}'"
        )),
    };
    let hdr = |m: MatchMethod| match arg {
        Some(name) if !name.is_empty() && !name.contains(',') => {
            Ok((Fetch::Hdr(name.to_ascii_lowercase()), m))
        }
        Some(_) => Err(format!(
            "sluice only supports 'hdr(<name>)' with one header name in ACL expression '{criterion}'"
        )),
        None => Err(format!(
            "'{kw}' without a header name is not supported by sluice yet in ACL expression '{criterion}'"
        )),
    };
    match kw {
        "method" => no_arg(Fetch::Method, MatchMethod::Method),
        "path" => no_arg(Fetch::Path, MatchMethod::Str),
        "path_beg" => no_arg(Fetch::Path, MatchMethod::Beg),
        "path_end" => no_arg(Fetch::Path, MatchMethod::End),
        "path_sub" => no_arg(Fetch::Path, MatchMethod::Sub),
        "url" => no_arg(Fetch::Url, MatchMethod::Str),
        "url_beg" => no_arg(Fetch::Url, MatchMethod::Beg),
        "url_end" => no_arg(Fetch::Url, MatchMethod::End),
        "url_sub" => no_arg(Fetch::Url, MatchMethod::Sub),
        "hdr" => hdr(MatchMethod::Str),
        "hdr_beg" => hdr(MatchMethod::Beg),
        "hdr_end" => hdr(MatchMethod::End),
        "hdr_sub" => hdr(MatchMethod::Sub),
        "src" => no_arg(Fetch::Src, MatchMethod::Ip),
        "req.ssl_sni" | "req_ssl_sni" => no_arg(Fetch::ReqSslSni, MatchMethod::Str),
        "req.ssl_hello_type" | "req_ssl_hello_type" => {
            no_arg(Fetch::ReqSslHelloType, MatchMethod::Str)
        }
        "ssl_fc" => no_arg(Fetch::SslFc, MatchMethod::Bool),
        "ssl_c_used" => no_arg(Fetch::SslCUsed, MatchMethod::Bool),
        "ssl_fc_sni" => no_arg(Fetch::SslFcSni, MatchMethod::Str),
        "ssl_fc_protocol" => no_arg(Fetch::SslFcProtocol, MatchMethod::Str),
        // Taken from the sample registry (userlists, issue 17).
        "http_auth" | "http_auth_group" | "var" => {
            let e = match crate::sample::Expr::parse(fetch_text) {
                Ok((e, used)) if used == fetch_text.len() => e,
                Ok(_) => {
                    return Err(format!(
                        "missing closing ')' after arguments to fetch keyword '{kw}' in ACL expression '{criterion}'"
                    ));
                }
                Err(e) => return Err(format!("{e} in ACL expression '{criterion}'")),
            };
            let m = match kw {
                "http_auth" => MatchMethod::Bool,
                "http_auth_group" => MatchMethod::AuthGroup,
                // `var()` is matched as a string unless `-m` says
                // otherwise.
                _ => MatchMethod::Str,
            };
            Ok((Fetch::Sample(e), m))
        }
        _ if UNSUPPORTED_FETCHES.contains(&kw)
            || crate::haproxy26::haproxy_has(crate::haproxy26::Kind::Fetch, kw) =>
        {
            Err(format!(
                "fetch method '{kw}' is not supported by sluice yet in ACL expression '{criterion}'"
            ))
        }
        _ => Err(format!(
            "unknown fetch method '{kw}' in ACL expression '{criterion}'"
        )),
    }
}

/// Splits `fetch(a,b),conv(c),conv2` at the commas outside parentheses:
/// the fetch, then each converter.
fn split_converters(criterion: &str) -> (&str, Vec<&str>) {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in criterion.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&criterion[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&criterion[start..]);
    let fetch = parts.remove(0);
    (fetch, parts)
}

/// `-m <method>` values.
fn match_method(name: &str) -> Result<MatchMethod, String> {
    match name {
        "str" => Ok(MatchMethod::Str),
        "beg" => Ok(MatchMethod::Beg),
        "end" => Ok(MatchMethod::End),
        "sub" => Ok(MatchMethod::Sub),
        "ip" => Ok(MatchMethod::Ip),
        "bool" => Ok(MatchMethod::Bool),
        "found" | "int" | "bin" | "len" | "reg" | "dir" | "dom" => Err(format!(
            "match method '{name}' is not supported by sluice yet"
        )),
        _ => Err(format!("unknown pattern matching method '{name}'")),
    }
}

/// An IP pattern: an address, or `address/prefix` (prefix length or a
/// dotted IPv4 mask).
pub(crate) fn parse_net(text: &str) -> Option<Pattern> {
    let (addr, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => max,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            let n: u8 = p.parse().ok()?;
            if n > max {
                return None;
            }
            n
        }
        Some(p) if addr.is_ipv4() => {
            // Dotted mask: must be contiguous ones.
            let mask: std::net::Ipv4Addr = p.parse().ok()?;
            let m = u32::from(mask);
            if m.leading_ones() + m.trailing_zeros() != 32 {
                return None;
            }
            m.leading_ones() as u8
        }
        Some(_) => return None,
    };
    Some(Pattern::Net { addr, prefix })
}

/// `acl <name> <criterion> [flags] [--] <values...>`: `words` are the words
/// after the name.
pub(crate) fn parse_acl(name: &str, words: &[String], loc: Loc) -> Result<AclDef, String> {
    let Some(criterion) = words.first() else {
        return Err("missing ACL expression".to_string());
    };
    // `fetch(args),conv1(args),conv2`: the fetch is checked first, so that
    // the message names what is missing (the fetch, else a converter).
    let (fetch_text, convs) = split_converters(criterion);
    let (fetch, mut matcher) = fetch_of(fetch_text, criterion)?;
    if let Some(conv) = convs.first() {
        let name = conv.split('(').next().unwrap_or(conv);
        use crate::haproxy26::{Kind, haproxy_has};
        return Err(if haproxy_has(Kind::Converter, name) {
            format!(
                "converter '{name}' is not supported by sluice yet in ACL expression '{criterion}'"
            )
        } else {
            format!("unknown converter '{name}' in ACL expression '{criterion}'")
        });
    }
    let mut ignore_case = false;
    let mut explicit_method = false;
    let mut i = 1;
    // Flags come first; `--` ends them, the first non-flag starts values.
    while let Some(w) = words.get(i) {
        if !w.starts_with('-') {
            break;
        }
        match w.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "-i" => ignore_case = true,
            "-m" => {
                let Some(m) = words.get(i + 1) else {
                    return Err("'-m' expects a match method".to_string());
                };
                matcher = match_method(m)?;
                explicit_method = true;
                i += 1;
            }
            "-f" | "-M" | "-n" | "-u" => {
                return Err(format!("ACL flag '{w}' is not supported by sluice yet"));
            }
            _ => {
                return Err(format!(
                    "'{w}' is not a valid ACL option. Please use '--' before any pattern beginning with a '-'"
                ));
            }
        }
        i += 1;
    }
    // A variable has no type until run time: HAProxy wants a method.
    if matches!(&fetch, Fetch::Sample(e) if e.fetch_name() == "var") && !explicit_method {
        return Err(
            "matching method must be specified first (using '-m') when using a sample fetch of this type ('var')"
                .to_string(),
        );
    }
    // Matchers that cannot read the fetched sample type.
    let is_ip_fetch = fetch == Fetch::Src;
    let is_bool_fetch = matches!(fetch, Fetch::SslFc | Fetch::SslCUsed)
        || matches!(&fetch, Fetch::Sample(e) if e.fetch_name() == "http_auth");
    if is_ip_fetch != (matcher == MatchMethod::Ip)
        || is_bool_fetch != (matcher == MatchMethod::Bool)
    {
        return Err(format!(
            "matching method '{}' cannot be used with fetch '{criterion}'",
            match matcher {
                MatchMethod::Ip => "ip",
                MatchMethod::Bool => "bool",
                MatchMethod::Str | MatchMethod::Method | MatchMethod::AuthGroup => "str",
                MatchMethod::Beg => "beg",
                MatchMethod::End => "end",
                MatchMethod::Sub => "sub",
            }
        ));
    }
    let mut patterns = Vec::new();
    for v in &words[i.min(words.len())..] {
        if matcher == MatchMethod::Ip {
            match parse_net(v) {
                Some(p) => patterns.push(p),
                None => {
                    return Err(format!("'{v}' is not a valid IPv4 or IPv6 address"));
                }
            }
        } else {
            patterns.push(Pattern::Str(v.clone()));
        }
    }
    Ok(AclDef {
        name: name.to_string(),
        fetch,
        matcher,
        ignore_case,
        patterns,
        loc,
    })
}

/// Is `name` a valid ACL name (`[A-Za-z0-9_.:-]+`)? Returns the first bad
/// character otherwise.
pub(crate) fn check_acl_name(name: &str) -> Result<(), char> {
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')))
    {
        Some(c) => Err(c),
        None => Ok(()),
    }
}

/// HAProxy's predefined ACLs sluice can express with its fetches.
pub(crate) const PREDEFINED: &[&str] = &[
    "TRUE",
    "FALSE",
    "LOCALHOST",
    "METH_CONNECT",
    "METH_DELETE",
    "METH_GET",
    "METH_HEAD",
    "METH_OPTIONS",
    "METH_POST",
    "METH_PUT",
    "METH_TRACE",
    "HTTP_URL_SLASH",
    "HTTP_URL_STAR",
];

/// Predefined ACLs HAProxy has and sluice cannot express yet.
pub(crate) const PREDEFINED_UNSUPPORTED: &[&str] = &[
    "HTTP",
    "HTTP_1.0",
    "HTTP_1.1",
    "HTTP_2.0",
    "HTTP_CONTENT",
    "HTTP_URL_ABS",
    "RDP_COOKIE",
    "REQ_CONTENT",
    "WAIT_END",
];

/// The definition of a predefined ACL, built from ordinary fetches.
pub(crate) fn predefined(name: &str, loc: Loc) -> Option<AclDef> {
    let strs = |v: &[&str]| v.iter().map(|s| Pattern::Str(s.to_string())).collect();
    let (fetch, matcher, patterns) = match name {
        // Every request has a target, and every target begins with "".
        "TRUE" => (Fetch::Url, MatchMethod::Beg, strs(&[""])),
        // No pattern: never matches.
        "FALSE" => (Fetch::Url, MatchMethod::Beg, Vec::new()),
        "LOCALHOST" => (
            Fetch::Src,
            MatchMethod::Ip,
            vec![parse_net("127.0.0.1/8")?, parse_net("::1")?],
        ),
        "METH_GET" => (Fetch::Method, MatchMethod::Method, strs(&["GET", "HEAD"])),
        "METH_CONNECT" | "METH_DELETE" | "METH_HEAD" | "METH_OPTIONS" | "METH_POST"
        | "METH_PUT" | "METH_TRACE" => (
            Fetch::Method,
            MatchMethod::Method,
            strs(&[name.strip_prefix("METH_").unwrap_or(name)]),
        ),
        "HTTP_URL_SLASH" => (Fetch::Url, MatchMethod::Beg, strs(&["/"])),
        "HTTP_URL_STAR" => (Fetch::Url, MatchMethod::Str, strs(&["*"])),
        _ => return None,
    };
    Some(AclDef {
        name: name.to_string(),
        fetch,
        matcher,
        ignore_case: false,
        patterns,
        loc,
    })
}

#[cfg(test)]
/// `if|unless <cond>` without anonymous ACLs (see [`parse_condition_at`]).
pub(crate) fn parse_condition(words: &[String]) -> Result<Condition, String> {
    if words.iter().any(|w| w == "{") {
        return Err("anonymous ACLs need a location: use parse_condition_at".to_string());
    }
    let loc = Loc {
        file: std::sync::Arc::from(""),
        line: 0,
    };
    parse_condition_at(words, &loc).map(|(c, _)| c)
}

/// `if|unless <cond>`: terms are `[!]acl` (juxtaposition = AND, `or`/`||`
/// between groups) or anonymous ACLs `{ <criterion> [flags] <values> }`,
/// returned as extra definitions with names no config can spell.
pub(crate) fn parse_condition_at(
    words: &[String],
    loc: &Loc,
) -> Result<(Condition, Vec<AclDef>), String> {
    let unless = match words.first().map(String::as_str) {
        Some("if") => false,
        Some("unless") => true,
        Some(other) => {
            return Err(format!(
                "expects 'if' or 'unless' followed by a condition but found '{other}'"
            ));
        }
        None => return Err("missing condition".to_string()),
    };
    let mut groups: Vec<Vec<AclTerm>> = vec![Vec::new()];
    let mut anon = Vec::new();
    let mut negated = false;
    let mut i = 1;
    while let Some(w) = words.get(i) {
        i += 1;
        // HAProxy compares `or` without regard to case (`OR` works).
        if w.eq_ignore_ascii_case("or") || w == "||" {
            if groups.last().is_some_and(Vec::is_empty) {
                return Err("missing ACL before 'or'".to_string());
            }
            groups.push(Vec::new());
            negated = false;
            continue;
        }
        // As in HAProxy, each leading '!' toggles negation, even alone.
        let stripped = w.trim_start_matches('!');
        if (w.len() - stripped.len()) % 2 == 1 {
            negated = !negated;
        }
        if stripped.is_empty() {
            continue;
        }
        let name = if stripped == "{" {
            let Some(close) = words[i..].iter().position(|x| x == "}") else {
                return Err("missing closing '}' in condition".to_string());
            };
            let body = &words[i..i + close];
            i += close + 1;
            let name = format!(
                "{{anonymous {}:{} #{}}}",
                loc.file,
                loc.line,
                anon.len() + 1
            );
            let def = parse_acl(&name, body, loc.clone())?;
            anon.push(def);
            name
        } else {
            stripped.to_string()
        };
        if let Some(g) = groups.last_mut() {
            g.push(AclTerm { name, negated });
        }
        negated = false;
    }
    if groups.iter().all(Vec::is_empty) {
        return Err(format!("missing condition after '{}'", words[0]));
    }
    if groups.last().is_some_and(Vec::is_empty) {
        return Err("missing ACL after 'or'".to_string());
    }
    Ok((Condition { unless, groups }, anon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn loc() -> Loc {
        Loc {
            file: std::sync::Arc::from("t.cfg"),
            line: 3,
        }
    }

    #[test]
    fn acls() {
        let d = parse_acl("m", &w("method POST DELETE PUT"), loc()).unwrap();
        assert_eq!(d.fetch, Fetch::Method);
        assert_eq!(d.matcher, MatchMethod::Method);
        assert_eq!(d.patterns.len(), 3);
        let d = parse_acl("h", &w("hdr(Host) -i example.com"), loc()).unwrap();
        assert_eq!(d.fetch, Fetch::Hdr("host".into()));
        assert!(d.ignore_case);
        let d = parse_acl("p", &w("path_beg -- -x /a"), loc()).unwrap();
        assert_eq!(
            d.patterns,
            vec![Pattern::Str("-x".into()), Pattern::Str("/a".into())]
        );
        let d = parse_acl("s", &w("src 10.0.0.0/8 ::1 192.168.0.0/255.255.0.0"), loc()).unwrap();
        assert_eq!(d.matcher, MatchMethod::Ip);
        assert_eq!(
            d.patterns[2],
            Pattern::Net {
                addr: "192.168.0.0".parse().unwrap(),
                prefix: 16
            }
        );
        let d = parse_acl("p", &w("path -m beg /x"), loc()).unwrap();
        assert_eq!(d.matcher, MatchMethod::Beg);
        assert_eq!(
            parse_acl("d", &w("foo_bar x"), loc()).unwrap_err(),
            "unknown fetch method 'foo_bar' in ACL expression 'foo_bar'"
        );
        assert!(parse_acl("d", &w("src nothost"), loc()).is_err());
        assert!(parse_acl("d", &w("path -z x"), loc()).is_err());
        assert!(
            parse_acl("d", &w("path_reg x"), loc())
                .unwrap_err()
                .contains("not supported")
        );
        assert!(parse_acl("d", &w("hdr(host"), loc()).is_err());
        assert!(parse_acl("d", &w("path -m ip 1.2.3.4"), loc()).is_err());
        assert!(parse_acl("d", &[], loc()).is_err());
    }

    #[test]
    fn conditions() {
        let c = parse_condition(&w("if a !b or c || ! d")).unwrap();
        assert!(!c.unless);
        assert_eq!(c.groups.len(), 3);
        assert_eq!(
            c.groups[0][1],
            AclTerm {
                name: "b".into(),
                negated: true
            }
        );
        assert_eq!(
            c.groups[2][0],
            AclTerm {
                name: "d".into(),
                negated: true
            }
        );
        let c = parse_condition(&w("unless a")).unwrap();
        assert!(c.unless);
        assert!(parse_condition(&w("if")).is_err());
        assert!(parse_condition(&w("if a or")).is_err());
        assert!(parse_condition(&w("when a")).is_err());
        let (c, anon) =
            parse_condition_at(&w("if { path_beg /admin } !LOCALHOST"), &loc()).unwrap();
        assert_eq!(anon.len(), 1);
        assert_eq!(c.groups[0][0].name, anon[0].name);
        assert_eq!(
            parse_condition_at(&w("if { path_beg /admin"), &loc()).unwrap_err(),
            "missing closing '}' in condition"
        );
    }

    #[test]
    fn predefined_acls() {
        for n in PREDEFINED {
            assert!(predefined(n, loc()).is_some(), "{n}");
        }
        assert!(predefined("HTTP_1.1", loc()).is_none());
    }
}
