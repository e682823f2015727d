//! Conditional blocks: the expression language of `.if` / `.elif`
//! (HAProxy 2.6's `cfgcond.c`): `defined()`, `feature()`, `streq()`,
//! `strneq()`, `version_atleast()`, `version_before()`, integers, `!`,
//! `&&`, `||` and parentheses. The words after `.if` are joined with single
//! spaces into one text, as HAProxy does, and positions in errors refer to
//! that text.

/// The HAProxy version sluice's dialect follows, for `version_atleast()`
/// and `version_before()`.
pub(crate) const DIALECT_VERSION: &str = "2.6.12";

/// Build features, in HAProxy's `+NAME` / `-NAME` form, for `feature()`.
pub(crate) const FEATURES: &str = "+EPOLL +THREAD +GETADDRINFO +BACKTRACE +OPENSSL +LUA -PCRE -PCRE2 -ZLIB -SLZ +PROMEX -QUIC +SYSTEMD";

/// HAProxy's MAX_CFG_RECURSION.
const MAX_DEPTH: i32 = 1024;

/// A condition error: HAProxy's message and the 0-based byte offset in the
/// joined text of the first bad character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CondError {
    pub(crate) message: String,
    pub(crate) pos: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pred {
    Defined,
    Feature,
    Streq,
    Strneq,
    VersionAtLeast,
    VersionBefore,
}

const PREDICATES: &[(&str, Pred, usize)] = &[
    ("defined", Pred::Defined, 1),
    ("feature", Pred::Feature, 1),
    ("streq", Pred::Streq, 2),
    ("strneq", Pred::Strneq, 2),
    ("version_atleast", Pred::VersionAtLeast, 1),
    ("version_before", Pred::VersionBefore, 1),
];

enum Term {
    Const(bool),
    Paren(Box<Expr>),
    Pred(Pred, Vec<String>),
}

struct Neg(bool, Term);

/// OR of ANDs of terms.
struct Expr(Vec<Vec<Neg>>);

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }
    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(is_blank) {
            self.pos += 1;
        }
    }
    fn err<T>(&self, message: String, pos: usize) -> Result<T, CondError> {
        Err(CondError { message, pos })
    }

    /// `Ok(None)`: nothing parsable here (HAProxy's "desynchronized").
    fn term(&mut self, depth: i32) -> Result<Option<Neg>, CondError> {
        self.skip_blanks();
        if self.peek().is_none() {
            return Ok(None);
        }
        let start = self.pos;
        if depth <= 0 {
            return self.err(
                format!("unparsable conditional expression '{}'", self.rest()),
                start,
            );
        }
        let mut neg = false;
        while self.peek() == Some(b'!') {
            neg = !neg;
            self.pos += 1;
            self.skip_blanks();
        }
        if let Some(v) = self.integer() {
            return Ok(Some(Neg(neg, Term::Const(v))));
        }
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.skip_blanks();
            let Some(e) = self.expr(depth - 1)? else {
                return self.err(
                    format!(
                        "unparsable conditional expression '{}'",
                        &self.text[start..]
                    ),
                    start,
                );
            };
            self.skip_blanks();
            if self.peek() != Some(b')') {
                return self.err(
                    format!(
                        "expected ')' after conditional expression '{}'",
                        &self.text[start..]
                    ),
                    start,
                );
            }
            self.pos += 1;
            self.skip_blanks();
            return Ok(Some(Neg(neg, Term::Paren(Box::new(e)))));
        }
        let rest = self.rest();
        let len = rest.find([' ', '(']).unwrap_or(rest.len());
        let Some(&(word, pred, nargs)) = PREDICATES.iter().find(|(w, _, _)| *w == &rest[..len])
        else {
            return self.err(
                format!(
                    "unparsable conditional expression '{}'",
                    &self.text[start..]
                ),
                start,
            );
        };
        self.pos += word.len();
        let args = self.args(nargs).map_err(|(msg, arg, pos)| CondError {
            message: format!(
                "{msg} in argument {arg} of predicate '{word}' used in conditional expression"
            ),
            pos,
        })?;
        Ok(Some(Neg(neg, Term::Pred(pred, args))))
    }

    /// C's `strtol(in, &end, 0)`: `Some(value != 0)` if digits were read.
    fn integer(&mut self) -> Option<bool> {
        let b = self.text.as_bytes();
        let mut i = self.pos;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (radix, mut j) = if b.get(i) == Some(&b'0')
            && matches!(b.get(i + 1), Some(b'x' | b'X'))
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            (16, i + 2)
        } else if b.get(i) == Some(&b'0') {
            (8, i)
        } else {
            (10, i)
        };
        let digits_start = j;
        let mut nonzero = false;
        while let Some(&c) = b.get(j) {
            let ok = match radix {
                16 => c.is_ascii_hexdigit(),
                8 => (b'0'..=b'7').contains(&c),
                _ => c.is_ascii_digit(),
            };
            if !ok {
                break;
            }
            nonzero |= c != b'0';
            j += 1;
        }
        if j == digits_start {
            return None;
        }
        self.pos = j;
        Some(nonzero)
    }

    /// HAProxy's `make_arg_list()` for string arguments; errors carry the
    /// message, the argument number reported and the position.
    fn args(&mut self, n: usize) -> Result<Vec<String>, (String, usize, usize)> {
        let b = self.text.as_bytes();
        let mut out: Vec<String> = Vec::new();
        let empty = self.peek() != Some(b'(');
        if !empty {
            self.pos += 1;
            while out.len() < n {
                let mut arg = Vec::new();
                let (mut sq, mut dq) = (false, false);
                while let Some(&c) = b.get(self.pos) {
                    if c == b'"' && !sq {
                        dq = !dq;
                        self.pos += 1;
                    } else if c == b'\'' && !dq {
                        sq = !sq;
                        self.pos += 1;
                    } else if c == b'\\' && !sq && self.pos + 1 < b.len() {
                        let next = b[self.pos + 1];
                        match next {
                            b'\\' | b' ' | b'"' | b'\'' => {
                                arg.push(next);
                                self.pos += 2;
                            }
                            b'r' | b'n' | b't' => {
                                arg.push(match next {
                                    b'r' => b'\r',
                                    b'n' => b'\n',
                                    _ => b'\t',
                                });
                                self.pos += 2;
                            }
                            _ => {
                                arg.push(c);
                                self.pos += 1;
                            }
                        }
                    } else if !sq && !dq && (c == b',' || c == b')') {
                        break;
                    } else {
                        arg.push(c);
                        self.pos += 1;
                    }
                }
                out.push(String::from_utf8_lossy(&arg).into_owned());
                match self.peek() {
                    None | Some(b')') => break,
                    _ if out.len() >= n => break,
                    _ => self.pos += 1,
                }
            }
        }
        let mut count = out.len();
        if count < n {
            return Err((
                format!("missing arguments (got {count}/{n}), type 'string' expected"),
                count,
                self.pos,
            ));
        }
        if !empty {
            if self.peek() == Some(b')') {
                self.pos += 1;
            } else {
                let rest = self.rest();
                let msg = if rest.is_empty() {
                    "expected ')'".to_string()
                } else {
                    format!("expected ')' before '{rest}'")
                };
                if count > 1 {
                    count -= 1;
                }
                return Err((msg, count, self.pos));
            }
        }
        Ok(out)
    }

    fn and(&mut self, depth: i32) -> Result<Option<Vec<Neg>>, CondError> {
        if self.peek().is_none() {
            return Ok(None);
        }
        let mut terms = Vec::new();
        let mut depth = depth;
        loop {
            if depth <= 0 {
                return self.err(
                    format!("unparsable conditional sub-expression '{}'", self.rest()),
                    self.pos,
                );
            }
            let at = self.pos;
            let Some(t) = self.term(depth - 1)? else {
                return self.err(
                    format!(
                        "unparsable conditional sub-expression '{}'",
                        &self.text[at..]
                    ),
                    at,
                );
            };
            terms.push(t);
            self.skip_blanks();
            if !self.rest().starts_with("&&") {
                return Ok(Some(terms));
            }
            let amp = self.pos;
            self.pos += 2;
            self.skip_blanks();
            if self.peek().is_none() {
                // HAProxy: an empty right-hand side does not parse.
                return self.err(
                    format!("unparsable conditional expression '{}'", &self.text[amp..]),
                    amp,
                );
            }
            depth -= 1;
        }
    }

    fn expr(&mut self, depth: i32) -> Result<Option<Expr>, CondError> {
        if self.peek().is_none() {
            return Ok(None);
        }
        let mut groups = Vec::new();
        let mut depth = depth;
        loop {
            if depth <= 0 {
                return self.err(
                    format!("unparsable conditional expression '{}'", self.rest()),
                    self.pos,
                );
            }
            let at = self.pos;
            let Some(g) = self.and(depth - 1)? else {
                return self.err(
                    format!("unparsable conditional expression '{}'", &self.text[at..]),
                    at,
                );
            };
            groups.push(g);
            self.skip_blanks();
            if !self.rest().starts_with("||") {
                return Ok(Some(Expr(groups)));
            }
            let bars = self.pos;
            self.pos += 2;
            self.skip_blanks();
            if self.peek().is_none() {
                return self.err(
                    format!("unparsable conditional expression '{}'", self.text),
                    bars,
                );
            }
            depth -= 1;
        }
    }
}

fn eval_expr(e: &Expr, env: &dyn Fn(&str) -> Option<String>) -> bool {
    e.0.iter()
        .any(|g| g.iter().all(|Neg(neg, t)| eval_term(t, env) != *neg))
}

fn eval_term(t: &Term, env: &dyn Fn(&str) -> Option<String>) -> bool {
    match t {
        Term::Const(v) => *v,
        Term::Paren(e) => eval_expr(e, env),
        Term::Pred(p, args) => {
            let a = |i: usize| args.get(i).map_or("", String::as_str);
            match p {
                Pred::Defined => env(a(0)).is_some(),
                Pred::Feature => has_feature(a(0)),
                Pred::Streq => a(0) == a(1),
                Pred::Strneq => a(0) != a(1),
                Pred::VersionAtLeast => compare_version(DIALECT_VERSION, a(0)).is_ge(),
                Pred::VersionBefore => compare_version(DIALECT_VERSION, a(0)).is_lt(),
            }
        }
    }
}

/// `feature(NAME)`: `+NAME` listed in [`FEATURES`].
pub(crate) fn has_feature(name: &str) -> bool {
    !name.is_empty()
        && FEATURES
            .split(' ')
            .any(|f| f.strip_prefix('+') == Some(name))
}

/// Numeric components of a version (`2.6.12-1+deb12u4` → 2, 6, 12), missing
/// ones being 0.
fn version_parts(v: &str) -> [u64; 4] {
    let mut out = [0u64; 4];
    let head = v.split(['-', '+', ' ']).next().unwrap_or("");
    for (slot, part) in out.iter_mut().zip(head.split('.')) {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        *slot = digits.parse().unwrap_or(0);
    }
    out
}

fn compare_version(current: &str, other: &str) -> std::cmp::Ordering {
    version_parts(current).cmp(&version_parts(other))
}

/// Evaluate the text of a `.if` / `.elif` line (the words after the
/// directive, joined by single spaces). An empty text is false.
pub(crate) fn eval(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<bool, CondError> {
    if text.is_empty() {
        return Ok(false);
    }
    let mut p = Parser { text, pos: 0 };
    let Some(e) = p.expr(MAX_DEPTH)? else {
        return p.err(format!("unparsable conditional expression '{text}'"), 0);
    };
    p.skip_blanks();
    if let Some(c) = p.rest().chars().next() {
        return p.err(
            format!("unexpected character '{c}' at the end of conditional expression '{text}'"),
            p.pos,
        );
    }
    Ok(eval_expr(&e, env))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(n: &str) -> Option<String> {
        (n == "HOME").then(|| "/root".to_string())
    }

    fn ok(t: &str) -> bool {
        eval(t, &env).unwrap_or_else(|e| panic!("{t}: {e:?}"))
    }

    fn err(t: &str) -> (String, usize) {
        let e = eval(t, &env).unwrap_err();
        (e.message, e.pos + 1)
    }

    #[test]
    fn evaluates_like_haproxy() {
        assert!(ok("defined(HOME) && streq(a,a)"));
        assert!(!ok("defined(NOPE)"));
        assert!(ok("defined(HOME)&&streq(a,a)"));
        assert!(ok(
            "(defined(NOPE) || version_atleast(2.5)) && feature(OPENSSL)"
        ));
        assert!(ok("feature(LUA)"));
        assert!(ok(
            "version_before(2.6.13) && version_atleast(2.6.12) && !version_atleast(2.7)"
        ));
        assert!(ok("strneq(/root,/x)"));
        assert!(ok("1"));
        assert!(!ok("0"));
        assert!(ok("!!1"));
        assert!(!ok(""));
        assert!(!ok("defined()"));
        assert!(!ok("defined( HOME )"));
        assert!(ok("feature(THREAD)"));
        assert!(!ok("feature(HREAD)"));
        assert!(ok("0 || 1 && 1"));
        assert!(!ok("0 && 1 || 0"));
        assert!(ok("! ( 0 || 0 )"));
    }

    #[test]
    fn errors_like_haproxy() {
        assert_eq!(
            err("foo(X)"),
            ("unparsable conditional expression 'foo(X)'".into(), 1)
        );
        assert_eq!(
            err("defined(X"),
            (
                "expected ')' in argument 1 of predicate 'defined' used in conditional expression"
                    .into(),
                10
            )
        );
        assert_eq!(
            err("streq(a)"),
            ("missing arguments (got 1/2), type 'string' expected in argument 1 of predicate 'streq' used in conditional expression".into(), 8)
        );
        assert_eq!(
            err("defined(X) &&"),
            ("unparsable conditional expression '&&'".into(), 12)
        );
        assert_eq!(
            err("(defined(X)"),
            (
                "expected ')' after conditional expression '(defined(X)'".into(),
                1
            )
        );
        assert_eq!(
            err("defined(X) junk"),
            (
                "unexpected character 'j' at the end of conditional expression 'defined(X) junk'"
                    .into(),
                12
            )
        );
        assert_eq!(
            err("streq(a,b,c)"),
            ("expected ')' before ',c)' in argument 1 of predicate 'streq' used in conditional expression".into(), 10)
        );
        assert_eq!(
            err("defined(HOME,)"),
            ("expected ')' before ',)' in argument 1 of predicate 'defined' used in conditional expression".into(), 13)
        );
        assert_eq!(err("x").1, 1);
        // Deep nesting is an error, not a stack overflow.
        let deep = "(".repeat(5000);
        assert!(eval(&deep, &env).is_err());
        let long = vec!["1"; 3000].join(" && ");
        let _ = eval(&long, &env);
    }
}
