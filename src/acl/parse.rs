//! Config words to ACL definitions and conditions (pure).
//!
//! Error strings are HAProxy's inner texts; the config parser wraps them
//! (`error detected while parsing ACL 'x' : <msg>.`).

use std::sync::Arc;

use crate::acl::{AclDef, AclPatterns, AclTerm, Condition};
use crate::loc::Loc;
use crate::sample::patref;
use crate::sample::pattern::{IntOp, Map, MatchKind, PatternSet};
use crate::sample::value::SmpType;
use crate::sample::{Expr, ExprError};

/// HAProxy's ACL keywords that are a fetch with a matcher of their own:
/// `<base>` (with the fetch's usual matcher) and `<base>_<matcher>`.
/// (name prefix, the fetch it reads.)
const DERIVED: &[(&str, &str)] = &[
    ("base", "base"),
    ("cook", "req.cook"),
    ("hdr", "req.hdr"),
    ("path", "path"),
    ("scook", "res.cook"),
    ("shdr", "res.hdr"),
    ("url", "url"),
    ("urlp", "urlp"),
];

/// The suffixes of [`DERIVED`] names.
const SUFFIXES: &[(&str, MatchKind)] = &[
    ("beg", MatchKind::Beg),
    ("dir", MatchKind::Dir),
    ("dom", MatchKind::Dom),
    ("end", MatchKind::End),
    ("len", MatchKind::Len),
    ("reg", MatchKind::Reg),
    ("sub", MatchKind::Sub),
];

/// Other ACL keywords that read another fetch (HAProxy's older names).
const ALIASES: &[(&str, &str, MatchKind)] = &[
    ("method", "method", MatchKind::Meth),
    ("req_ver", "req.ver", MatchKind::Str),
    ("resp_ver", "res.ver", MatchKind::Str),
    ("url_param", "urlp", MatchKind::Str),
];

/// The fetch an ACL keyword reads and the matcher it implies, when it is
/// one of HAProxy's ACL-only names.
fn acl_keyword(kw: &str) -> Option<(&'static str, MatchKind)> {
    if let Some(&(_, fetch, m)) = ALIASES.iter().find(|(n, _, _)| *n == kw) {
        return Some((fetch, m));
    }
    for &(base, fetch) in DERIVED {
        if kw == base {
            return Some((fetch, MatchKind::Str));
        }
        if let Some(suffix) = kw.strip_prefix(base).and_then(|r| r.strip_prefix('_'))
            && let Some(&(_, m)) = SUFFIXES.iter().find(|(s, _)| *s == suffix)
        {
            return Some((fetch, m));
        }
    }
    None
}

/// Characters of fetch names (as the sample parser reads them).
fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'+')
}

/// The criterion's expression and the matcher its keyword implies (None:
/// the one of the expression's type).
fn criterion_expr(criterion: &str) -> Result<(Expr, Option<MatchKind>), String> {
    let kw_len = criterion.bytes().take_while(|&c| is_name(c)).count();
    let kw = &criterion[..kw_len];
    let (text, implied) = match acl_keyword(kw) {
        Some((fetch, m)) => (format!("{fetch}{}", &criterion[kw_len..]), Some(m)),
        None => (criterion.to_string(), None),
    };
    let (expr, used) = Expr::parse(&text).map_err(|e| match e {
        ExprError::Invalid(m) if m.starts_with("unknown fetch method") => {
            format!("{m} in ACL expression '{criterion}'")
        }
        ExprError::Invalid(m) if m.starts_with("invalid args in fetch method") => {
            format!("{m} in ACL expression '{criterion}'")
        }
        // HAProxy's own ACL keywords name themselves; other fetches are
        // quoted with the whole expression.
        ExprError::Invalid(m) if implied.is_none() => {
            format!("{m} in ACL expression '{criterion}'")
        }
        ExprError::Invalid(m) => {
            let m = m
                .strip_prefix(&format!("fetch method '{kw}' : "))
                .map(str::to_string)
                .unwrap_or(m);
            // HAProxy ends this inner message with its own period.
            format!("ACL keyword '{kw}' : {m}.")
        }
        ExprError::Unsupported(m) => {
            format!("{m} is not supported by sluice yet in ACL expression '{criterion}'")
        }
        // Not given by `Expr::parse`, which takes every place.
        ExprError::Misplaced(m) => format!("{m} in ACL expression '{criterion}'"),
    })?;
    if used != text.len() {
        return Err(format!(
            "ACL keyword '{kw}' : unexpected '{}' after the expression",
            &text[used..]
        ));
    }
    // Converters that change the type drop the keyword's matcher: the
    // one of the new type applies, as in HAProxy.
    let implied = implied.filter(|_| expr.out() == expr.fetch_out());
    Ok((expr, implied))
}

/// `acl <name> <criterion> [flags] [--] <values...>`: `words` are the words
/// after the name.
pub(crate) fn parse_acl(name: &str, words: &[String], loc: Loc) -> Result<AclDef, String> {
    let Some(criterion) = words.first() else {
        return Err("missing ACL expression".to_string());
    };
    let (expr, implied) = criterion_expr(criterion)?;
    let kw_len = criterion.bytes().take_while(|&c| is_name(c)).count();
    let kw = &criterion[..kw_len];
    let mut ignore_case = false;
    let mut forced: Option<MatchKind> = None;
    let mut files: Vec<&str> = Vec::new();
    let mut dashes = false;
    let mut unique_id = None;
    let mut two_columns = false;
    let mut i = 1;
    // Flags come first; `--` ends them, the first non-flag starts values.
    while let Some(w) = words.get(i) {
        if !w.starts_with('-') {
            break;
        }
        match w.as_str() {
            "--" => {
                dashes = true;
                i += 1;
                break;
            }
            "-i" => ignore_case = true,
            // No name resolution happens for IP patterns anyway.
            "-n" => {}
            // `-f` files read as maps: the keys match, the values are kept
            // (a converter may share the file).
            "-M" => two_columns = true,
            "-u" => {
                // The id of the line's own patterns on the CLI (`#<id>`).
                unique_id = words.get(i + 1).and_then(|w| w.parse::<i32>().ok());
                i += 1;
            }
            "-f" => {
                files.push(words.get(i + 1).map_or("", String::as_str));
                i += 1;
            }
            "-m" => {
                let m = words.get(i + 1).map_or("", String::as_str);
                let Some(kind) = MatchKind::from_name(m) else {
                    return Err(format!(
                        "unknown matching method '{m}' when parsing ACL expression"
                    ));
                };
                forced = Some(kind);
                i += 1;
            }
            _ => {
                return Err(format!(
                    "'{w}' is not a valid ACL option. Please use '--' before any pattern beginning with a '-'"
                ));
            }
        }
        i += 1;
    }
    let Some(kind) = forced
        .or(implied)
        .or_else(|| MatchKind::default_for(expr.out()))
    else {
        return Err(format!(
            "matching method must be specified first (using '-m') when using a sample fetch of this type ('{}')",
            kw
        ));
    };
    if kind != MatchKind::Found && !expr.out().casts_to(kind.input()) {
        return Err(format!(
            "matching method '{}' cannot be used with fetch keyword '{kw}'",
            kind.name()
        ));
    }
    // Files first: HAProxy creates their references before the line's.
    let mut sets = Vec::with_capacity(files.len() + 1);
    for f in &files {
        let load = || match two_columns {
            true => Map::load_icase(f, kind, ignore_case, SmpType::Str, None),
            false => Map::load_patterns(f, kind, ignore_case),
        };
        sets.push(patref::file_user(f, patref::ACL, two_columns, load, |m| {
            m.kind() == kind && m.icase() == ignore_case && m.has_values() == two_columns
        })?);
    }
    let mut patterns = PatternSet::new(kind, ignore_case);
    let mut op = IntOp::Eq;
    for v in &words[i.min(words.len())..] {
        // `eq`, `ge`, `gt`, `le`, `lt` hold for the integers after them.
        if kind.takes_ints()
            && let Some(o) = IntOp::from_word(v)
        {
            op = o;
            continue;
        }
        patterns.add(v, op)?;
    }
    let own = Arc::new(Map::patterns("", patterns));
    patref::acl_line(&own, kw, &loc.file, loc.line, unique_id.map(i64::from));
    let never_matches = own.len() == 0
        && files.is_empty()
        && !dashes
        && !matches!(kind, MatchKind::Found | MatchKind::Bool);
    Ok(AclDef {
        name: name.to_string(),
        expr,
        patterns: AclPatterns::new(kind, std::iter::once(own).chain(sets).collect()),
        never_matches,
        loc,
    })
}

/// HAProxy's warning for an ACL line that can never match.
pub(crate) fn never_matches_warning(criterion: &str) -> String {
    format!(
        "parsing acl keyword '{criterion}' :\n  no pattern to match against were provided, so this ACL will never match.\n  If this is what you intended, please add '--' to get rid of this warning.\n  If you intended to match only for existence, please use '-m found'.\n  If you wanted to force an int to match as a bool, please use '-m bool'.\n"
    )
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

/// HAProxy's predefined ACLs, each as the `acl` line it stands for.
const PREDEFINED_LINES: &[(&str, &str)] = &[
    ("FALSE", "always_false"),
    ("HTTP", "req.proto_http"),
    ("HTTP_1.0", "req.ver 1.0"),
    ("HTTP_1.1", "req.ver 1.1"),
    ("HTTP_2.0", "req.ver 2.0"),
    ("HTTP_CONTENT", "hdr_val(content-length) gt 0"),
    ("HTTP_URL_ABS", "url_reg ^[^/:]*://"),
    ("HTTP_URL_SLASH", "url_beg /"),
    ("HTTP_URL_STAR", "url *"),
    ("LOCALHOST", "src 127.0.0.1/8 ::1"),
    ("METH_CONNECT", "method CONNECT"),
    ("METH_DELETE", "method DELETE"),
    ("METH_GET", "method GET HEAD"),
    ("METH_HEAD", "method HEAD"),
    ("METH_OPTIONS", "method OPTIONS"),
    ("METH_POST", "method POST"),
    ("METH_PUT", "method PUT"),
    ("METH_TRACE", "method TRACE"),
    ("RDP_COOKIE", "req.rdp_cookie_cnt gt 0"),
    ("REQ_CONTENT", "req.len gt 0"),
    ("TRUE", "always_true"),
    ("WAIT_END", "wait_end"),
];

/// The names of HAProxy's predefined ACLs.
pub(crate) const PREDEFINED: &[&str] = &[
    "FALSE",
    "HTTP",
    "HTTP_1.0",
    "HTTP_1.1",
    "HTTP_2.0",
    "HTTP_CONTENT",
    "HTTP_URL_ABS",
    "HTTP_URL_SLASH",
    "HTTP_URL_STAR",
    "LOCALHOST",
    "METH_CONNECT",
    "METH_DELETE",
    "METH_GET",
    "METH_HEAD",
    "METH_OPTIONS",
    "METH_POST",
    "METH_PUT",
    "METH_TRACE",
    "RDP_COOKIE",
    "REQ_CONTENT",
    "TRUE",
    "WAIT_END",
];

/// The definition of a predefined ACL, built from ordinary fetches.
pub(crate) fn predefined(name: &str, loc: Loc) -> Option<AclDef> {
    let (_, line) = PREDEFINED_LINES.iter().find(|(n, _)| *n == name)?;
    let words: Vec<String> = line.split(' ').map(String::from).collect();
    parse_acl(name, &words, loc).ok()
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
    parse_condition_at(words, &loc, &|_| false).map(|(c, _)| c)
}

/// `if|unless <cond>`: terms are `[!]acl` (juxtaposition = AND, `or`/`||`
/// between groups) or anonymous ACLs `{ <criterion> [flags] <values> }`,
/// returned as extra definitions with names no config can spell, and,
/// in the same order, the predefined ACLs `wanted` says the proxy lacks
/// (HAProxy creates each where the condition names it).
pub(crate) fn parse_condition_at(
    words: &[String],
    loc: &Loc,
    wanted: &dyn Fn(&str) -> bool,
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
            if PREDEFINED.contains(&stripped)
                && wanted(stripped)
                && !anon.iter().any(|a| a.name == stripped)
                && let Some(def) = predefined(stripped, loc.clone())
            {
                anon.push(def);
            }
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

    fn kind(text: &str) -> MatchKind {
        parse_acl("a", &w(text), loc()).unwrap().patterns.kind()
    }

    #[test]
    fn acls() {
        assert_eq!(kind("method POST DELETE PUT"), MatchKind::Meth);
        assert_eq!(kind("hdr(Host) -i example.com"), MatchKind::Str);
        assert_eq!(kind("path_beg -- -x /a"), MatchKind::Beg);
        assert_eq!(kind("hdr_dom(host),lower example.com"), MatchKind::Dom);
        assert_eq!(
            kind("src 10.0.0.0/8 ::1 192.168.0.0/255.255.0.0"),
            MatchKind::Ip
        );
        assert_eq!(kind("req.hdr_cnt(x) gt 1"), MatchKind::Int);
        assert_eq!(kind("path -m beg /x"), MatchKind::Beg);
        assert_eq!(kind("ssl_fc"), MatchKind::Bool);
        let e = |t: &str| parse_acl("d", &w(t), loc()).unwrap_err();
        assert_eq!(
            e("foo_bar x"),
            "unknown fetch method 'foo_bar' in ACL expression 'foo_bar'"
        );
        assert_eq!(
            e("src nothost"),
            "'nothost' is not a valid IPv4 or IPv6 address"
        );
        assert!(e("path -z x").contains("not a valid ACL option"));
        assert_eq!(
            e("method -m int 1"),
            "matching method 'int' cannot be used with fetch keyword 'method'"
        );
        assert_eq!(
            e("path -m foo x"),
            "unknown matching method 'foo' when parsing ACL expression"
        );
        assert_eq!(
            e("path -f /nonexistent/x"),
            "failed to open pattern file </nonexistent/x>"
        );
        assert_eq!(
            e("path,foo x"),
            "ACL keyword 'path' : unknown converter 'foo'."
        );
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
            parse_condition_at(&w("if { path_beg /admin } !LOCALHOST"), &loc(), &|_| false)
                .unwrap();
        assert_eq!(anon.len(), 1);
        assert_eq!(c.groups[0][0].name, anon[0].name);
        assert_eq!(
            parse_condition_at(&w("if { path_beg /admin"), &loc(), &|_| false).unwrap_err(),
            "missing closing '}' in condition"
        );
    }

    #[test]
    fn predefined_acls() {
        for n in PREDEFINED {
            assert!(predefined(n, loc()).is_some(), "{n}");
        }
        for (n, _) in PREDEFINED_LINES {
            assert!(PREDEFINED.contains(n), "{n}");
        }
    }
}
