//! `http-request normalize-uri <normalizer>`: HAProxy 2.6's URI
//! normalizers, each a pure rewrite of the request target. The path
//! normalizers work on the path up to the query (a fragment is part of
//! it, as in HAProxy), the percent and fragment ones on the path with its
//! query, `query-sort-by-name` on the query alone.

use crate::config::model::UriNormalizer;

/// A `strict` normalizer met an invalid percent sequence: the request is
/// answered 400, as HAProxy answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidUri;

/// `target` normalized by `how`; None when nothing changes.
pub(crate) fn normalize(how: UriNormalizer, target: &[u8]) -> Result<Option<Vec<u8>>, InvalidUri> {
    let start = crate::http::rules::path_span(target).0;
    // No path (an authority-form or absolute URI without one): nothing to do.
    if start >= target.len() && !target.starts_with(b"/") {
        return Ok(None);
    }
    let pathq = &target[start..];
    let path_end = pathq.iter().position(|&b| b == b'?').unwrap_or(pathq.len());
    let (path, query) = pathq.split_at(path_end);
    let (new, whole) = match how {
        UriNormalizer::PathStripDot => (strip_dot(path), false),
        UriNormalizer::PathStripDotdot { full } => (strip_dotdot(path, full), false),
        UriNormalizer::PathMergeSlashes => (merge_slashes(path), false),
        UriNormalizer::PercentDecodeUnreserved { strict } => {
            (percent_decode_unreserved(pathq, strict)?, true)
        }
        UriNormalizer::PercentToUppercase { strict } => (percent_upper(pathq, strict)?, true),
        UriNormalizer::FragmentStrip => {
            let end = pathq.iter().position(|&b| b == b'#').unwrap_or(pathq.len());
            (pathq[..end].to_vec(), true)
        }
        UriNormalizer::FragmentEncode => {
            let mut out = Vec::with_capacity(pathq.len() + 4);
            for &b in pathq {
                match b {
                    b'#' => out.extend_from_slice(b"%23"),
                    b => out.push(b),
                }
            }
            (out, true)
        }
        UriNormalizer::QuerySortByName => {
            if query.is_empty() {
                return Ok(None);
            }
            let mut out = path.to_vec();
            out.extend_from_slice(&sort_query(query));
            (out, true)
        }
    };
    let old = if whole { pathq } else { path };
    if new == old {
        return Ok(None);
    }
    let mut t = Vec::with_capacity(target.len());
    t.extend_from_slice(&target[..start]);
    t.extend_from_slice(&new);
    if !whole {
        t.extend_from_slice(query);
    }
    Ok(Some(t))
}

/// `path-strip-dot`: the `.` segments left out, with the slash after
/// each.
fn strip_dot(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut segs = path.split(|&b| b == b'/').peekable();
    while let Some(seg) = segs.next() {
        let last = segs.peek().is_none();
        if seg != b"." {
            out.extend_from_slice(seg);
            if !last {
                out.push(b'/');
            }
        }
    }
    out
}

/// `path-strip-dotdot [full]`: each `..` segment takes the segment before
/// it away (an empty one too); one with nothing before it stays, unless
/// `full`. A final `..` leaves a slash.
fn strip_dotdot(path: &[u8], full: bool) -> Vec<u8> {
    let mut segs: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    if segs.last() == Some(&&b".."[..]) {
        segs.push(b"");
    }
    // The first segment is what comes before the first slash: the root,
    // which no `..` removes.
    let mut kept: Vec<&[u8]> = Vec::with_capacity(segs.len());
    for (i, seg) in segs.iter().enumerate() {
        if i > 0 && *seg == b".." {
            match kept.last() {
                Some(prev) if kept.len() > 1 && *prev != b".." => {
                    kept.pop();
                    continue;
                }
                _ if full => continue,
                _ => {}
            }
        }
        kept.push(seg);
    }
    kept.join(&b'/')
}

/// `path-merge-slashes`: each run of slashes as one.
fn merge_slashes(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if !(b == b'/' && out.last() == Some(&b'/')) {
            out.push(b);
        }
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The byte a `%XY` at `s[i..]` encodes, if it is one.
fn percent_at(s: &[u8], i: usize) -> Option<u8> {
    let (h, l) = (hex(*s.get(i + 1)?)?, hex(*s.get(i + 2)?)?);
    Some(h << 4 | l)
}

/// `percent-decode-unreserved [strict]`: the letters, digits, `-`, `.`,
/// `_` and `~` a `%XY` encodes, decoded; other sequences kept as they are.
fn percent_decode_unreserved(s: &[u8], strict: bool) -> Result<Vec<u8>, InvalidUri> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match percent_at(s, i) {
            Some(c) if c.is_ascii_alphanumeric() || b"-._~".contains(&c) => {
                out.push(c);
                i += 3;
            }
            Some(_) => {
                out.extend_from_slice(&s[i..i + 3]);
                i += 3;
            }
            None if strict => return Err(InvalidUri),
            None => {
                out.push(b'%');
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `percent-to-uppercase [strict]`: the hex digits of each `%XY` in
/// upper case.
fn percent_upper(s: &[u8], strict: bool) -> Result<Vec<u8>, InvalidUri> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        match percent_at(s, i) {
            Some(_) => {
                out.push(b'%');
                out.push(s[i + 1].to_ascii_uppercase());
                out.push(s[i + 2].to_ascii_uppercase());
                i += 3;
            }
            None if strict => return Err(InvalidUri),
            None => {
                out.push(b'%');
                i += 1;
            }
        }
    }
    Ok(out)
}

/// `query-sort-by-name`: `query` (from its `?`) with its `&`-separated
/// parameters in the order of their names, equal names in their order.
fn sort_query(query: &[u8]) -> Vec<u8> {
    let mut params: Vec<&[u8]> = query[1..].split(|&b| b == b'&').collect();
    let name = |p: &[u8]| -> Vec<u8> {
        let end = p.iter().position(|&b| b == b'=').unwrap_or(p.len());
        p[..end].to_vec()
    };
    params.sort_by_key(|p| name(p));
    let mut out = Vec::with_capacity(query.len());
    out.push(b'?');
    out.extend_from_slice(&params.join(&b'&'));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(how: UriNormalizer, t: &str) -> String {
        match normalize(how, t.as_bytes()) {
            Ok(Some(v)) => String::from_utf8(v).unwrap(),
            Ok(None) => t.to_string(),
            Err(InvalidUri) => "400".to_string(),
        }
    }

    /// The examples of HAProxy 2.6's documentation.
    #[test]
    fn documented_examples() {
        use UriNormalizer as U;
        let dotdot = U::PathStripDotdot { full: false };
        let full = U::PathStripDotdot { full: true };
        for (how, from, to) in [
            (U::FragmentEncode, "/#foo", "/%23foo"),
            (U::FragmentStrip, "/#foo", "/"),
            (U::PathStripDot, "/.", "/"),
            (U::PathStripDot, "/./bar/", "/bar/"),
            (U::PathStripDot, "/a/./a", "/a/a"),
            (U::PathStripDot, "/.well-known/", "/.well-known/"),
            (dotdot, "/foo/../", "/"),
            (dotdot, "/foo/../bar/", "/bar/"),
            (dotdot, "/foo/bar/../", "/foo/"),
            (dotdot, "/../bar/", "/../bar/"),
            (dotdot, "/bar/../../", "/../"),
            (dotdot, "/foo//../", "/foo/"),
            (dotdot, "/foo/%2E%2E/", "/foo/%2E%2E/"),
            (full, "/../bar/", "/bar/"),
            (full, "/bar/../../", "/"),
            (U::PathMergeSlashes, "//", "/"),
            (U::PathMergeSlashes, "/foo//bar", "/foo/bar"),
            (
                U::PercentDecodeUnreserved { strict: false },
                "/%61dmin",
                "/admin",
            ),
            (
                U::PercentDecodeUnreserved { strict: false },
                "/foo%3Fbar=baz",
                "/foo%3Fbar=baz",
            ),
            (
                U::PercentDecodeUnreserved { strict: false },
                "/%%36%36",
                "/%66",
            ),
            (U::PercentDecodeUnreserved { strict: false }, "/%ZZ", "/%ZZ"),
            (
                U::PercentDecodeUnreserved { strict: true },
                "/%%36%36",
                "400",
            ),
            (U::PercentDecodeUnreserved { strict: true }, "/%ZZ", "400"),
            (U::PercentToUppercase { strict: false }, "/%6f", "/%6F"),
            (U::PercentToUppercase { strict: false }, "/%zz", "/%zz"),
            (U::PercentToUppercase { strict: true }, "/%zz", "400"),
            (U::QuerySortByName, "/?c=3&a=1&b=2", "/?a=1&b=2&c=3"),
            (U::QuerySortByName, "/?aaa=3&a=1&aa=2", "/?a=1&aa=2&aaa=3"),
            (
                U::QuerySortByName,
                "/?a=3&b=4&a=1&b=5&a=2",
                "/?a=3&a=1&a=2&b=4&b=5",
            ),
        ] {
            assert_eq!(n(how, from), to, "{how:?} {from}");
        }
    }
}
