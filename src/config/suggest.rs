//! "did you mean ... maybe ?" suggestions, using HAProxy's own similarity
//! measure so that sluice suggests what HAProxy would: each word is reduced
//! to a table of character-class bigrams (letters case-insensitive, all
//! digits alike, all other characters alike, plus begin/end markers) and
//! the distance is the sum of count differences.

const CLASSES: usize = 32;

fn class(c: char) -> usize {
    match c {
        'a'..='z' => c as usize - 'a' as usize,
        'A'..='Z' => c as usize - 'A' as usize,
        '0'..='9' => 26,
        _ => 27,
    }
}

const BEGIN: usize = 28;
const END: usize = 29;

/// The bigrams of `word` (as `from * CLASSES + to`), sorted: a sparse form
/// of HAProxy's 32x32 table of counts, cheap to build for every candidate.
fn fingerprint(word: &str) -> Vec<usize> {
    let mut fp = Vec::with_capacity(word.len() + 1);
    let mut from = BEGIN;
    for c in word.chars() {
        let to = class(c);
        fp.push(from * CLASSES + to);
        from = to;
    }
    fp.push(from * CLASSES + END);
    fp.sort_unstable();
    fp
}

/// Sum over all bigrams of the difference of their counts: the size of the
/// symmetric difference of the two sorted multisets.
fn distance(a: &[usize], b: &[usize]) -> usize {
    let (mut i, mut j, mut d) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => {
                d += 1;
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                d += 1;
                j += 1;
            }
        }
    }
    d + (a.len() - i) + (b.len() - j)
}

/// The candidate closest to `word`, if close enough (HAProxy's threshold:
/// distance at most twice the length of both words). The first best
/// candidate wins ties, as in HAProxy.
pub(crate) fn best_match<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let wfp = fingerprint(word);
    let mut best: Option<(&str, usize)> = None;
    for cand in candidates {
        let d = distance(&wfp, &fingerprint(cand));
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((cand, d));
        }
    }
    let (cand, d) = best?;
    if d > 2 * word.len() || d > 2 * cand.len() {
        return None;
    }
    Some(cand)
}

/// `; did you mean 'x' maybe ?` or the empty string.
pub(crate) fn suffix<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    match best_match(word, candidates) {
        Some(b) => format!("; did you mean '{b}' maybe ?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_like_haproxy() {
        let kws = ["weight", "maxconn", "check", "inter", "rise", "fall"];
        assert_eq!(best_match("wieght", kws), Some("weight"));
        assert_eq!(best_match("maxconm", kws), Some("maxconn"));
        assert_eq!(best_match("zzzzzzzzzzzzzzzzzzz", kws), None);
        assert_eq!(
            suffix("httplogg", ["httplog", "tcplog"]),
            "; did you mean 'httplog' maybe ?"
        );
        assert_eq!(suffix("x", std::iter::empty::<&str>()), "");
    }
}
