//! A small regular-expression matcher for `rstatus` / `rstring` expects:
//! literals, `.`, classes `[a-z0-9]` and `[^...]`, `\d` `\w` `\s` and
//! escaped characters, the quantifiers `*` `+` `?`, and the anchors `^`
//! and `$` (unanchored patterns match anywhere, as PCRE's search does).

#[derive(Debug, Clone)]
enum Atom {
    Any,
    Byte(u8),
    Class(Vec<(u8, u8)>, bool),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rep {
    One,
    Star,
    Plus,
    Opt,
}

fn parse(re: &[u8]) -> (bool, Vec<(Atom, Rep)>, bool) {
    let mut i = 0;
    let start = re.first() == Some(&b'^');
    if start {
        i = 1;
    }
    let mut end = false;
    let mut out = Vec::new();
    while i < re.len() {
        let c = re[i];
        if c == b'$' && i + 1 == re.len() {
            end = true;
            break;
        }
        let atom = match c {
            b'.' => {
                i += 1;
                Atom::Any
            }
            b'\\' if i + 1 < re.len() => {
                i += 2;
                match re[i - 1] {
                    b'd' => Atom::Class(vec![(b'0', b'9')], false),
                    b'w' => Atom::Class(
                        vec![(b'a', b'z'), (b'A', b'Z'), (b'0', b'9'), (b'_', b'_')],
                        false,
                    ),
                    b's' => Atom::Class(vec![(b' ', b' '), (b'\t', b'\r')], false),
                    o => Atom::Byte(o),
                }
            }
            b'[' => {
                let mut j = i + 1;
                let neg = re.get(j) == Some(&b'^');
                if neg {
                    j += 1;
                }
                let mut ranges = Vec::new();
                while j < re.len()
                    && (re[j] != b']' || ranges.is_empty() && j == i + 1 + usize::from(neg))
                {
                    let a = re[j];
                    if re.get(j + 1) == Some(&b'-') && re.get(j + 2).is_some_and(|&b| b != b']') {
                        ranges.push((a, re[j + 2]));
                        j += 3;
                    } else {
                        ranges.push((a, a));
                        j += 1;
                    }
                }
                i = j + 1;
                Atom::Class(ranges, neg)
            }
            _ => {
                i += 1;
                Atom::Byte(c)
            }
        };
        let rep = match re.get(i) {
            Some(b'*') => Rep::Star,
            Some(b'+') => Rep::Plus,
            Some(b'?') => Rep::Opt,
            _ => Rep::One,
        };
        if rep != Rep::One {
            i += 1;
        }
        out.push((atom, rep));
    }
    (start, out, end)
}

fn one(a: &Atom, c: u8) -> bool {
    match a {
        Atom::Any => c != b'\n',
        Atom::Byte(b) => *b == c,
        Atom::Class(r, neg) => r.iter().any(|&(x, y)| (x..=y).contains(&c)) != *neg,
    }
}

fn here(p: &[(Atom, Rep)], s: &[u8], end: bool) -> bool {
    let Some(((a, rep), rest)) = p.split_first() else {
        return !end || s.is_empty();
    };
    match rep {
        Rep::One => !s.is_empty() && one(a, s[0]) && here(rest, &s[1..], end),
        Rep::Opt => {
            (!s.is_empty() && one(a, s[0]) && here(rest, &s[1..], end)) || here(rest, s, end)
        }
        Rep::Star | Rep::Plus => {
            let min = usize::from(*rep == Rep::Plus);
            let mut n = 0;
            while n < s.len() && one(a, s[n]) {
                n += 1;
            }
            (min..=n).rev().any(|k| here(rest, &s[k..], end))
        }
    }
}

/// Whether `re` matches somewhere in `s`.
pub(crate) fn matches(re: &str, s: &[u8]) -> bool {
    let (start, p, end) = parse(re.as_bytes());
    if start {
        return here(&p, s, end);
    }
    (0..=s.len()).any(|i| here(&p, &s[i..], end))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn subset() {
        assert!(matches("^2[0-9][0-9]$", b"204"));
        assert!(!matches("^2[0-9][0-9]$", b"500"));
        assert!(matches("ok", b"all ok here"));
        assert!(matches("^OK", b"OK\r\n"));
        assert!(!matches("^OK$", b"OK\r\n"));
        assert!(matches("st.*us: up", b"status: up"));
        assert!(matches("\\d+ items", b"there are 42 items"));
        assert!(matches("[^a-z]", b"abc1"));
        assert!(!matches("[^a-z]", b"abc"));
        assert!(matches("colou?r", b"color"));
    }
}
