//! JSON for two converters: `json` (escape a sample into a JSON string's
//! body) and `json_query` (one value out of a JSON document by a path).
//!
//! `json_query` is a small scanner rather than a full parser on purpose:
//! HAProxy 2.6 stops at the first value the path reaches (trailing bytes,
//! later duplicates and even a truncated tail do not matter), unescapes only
//! `\u00XX` (one byte) and prints numbers as C's `%g`; a general JSON crate
//! would differ on each of these.

/// How `json` reads its input (`json(<input-code>)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputCode {
    /// Every byte is a character: never fails.
    Ascii,
    /// UTF-8; `permissive` fixes overlong forms, `skip` drops characters in
    /// error instead of failing.
    Utf8 { permissive: bool, skip: bool },
}

impl InputCode {
    pub(crate) fn parse(text: &str) -> Option<InputCode> {
        Some(match text {
            "" | "ascii" => InputCode::Ascii,
            "utf8" => InputCode::Utf8 {
                permissive: false,
                skip: false,
            },
            "utf8s" => InputCode::Utf8 {
                permissive: false,
                skip: true,
            },
            "utf8p" => InputCode::Utf8 {
                permissive: true,
                skip: false,
            },
            "utf8ps" => InputCode::Utf8 {
                permissive: true,
                skip: true,
            },
            _ => return None,
        })
    }

    /// A number for an `Arg::Sint`, and back.
    pub(crate) fn code(self) -> i64 {
        match self {
            InputCode::Ascii => 0,
            InputCode::Utf8 { permissive, skip } => 1 + permissive as i64 + 2 * skip as i64,
        }
    }

    pub(crate) fn from_code(n: i64) -> InputCode {
        match n {
            1..=4 => InputCode::Utf8 {
                permissive: (n - 1) & 1 != 0,
                skip: (n - 1) & 2 != 0,
            },
            _ => InputCode::Ascii,
        }
    }
}

/// What is wrong with one UTF-8 character.
enum Utf8Error {
    /// Encoded with more bytes than needed (the value is right).
    Overlong(u32),
    /// Anything else: bad sequence, forbidden range, above U+FFFF (a JSON
    /// escape has four hex digits).
    Other,
}

/// One character at the start of `b` (never empty) and its length.
fn decode(b: &[u8]) -> (Result<u32, Utf8Error>, usize) {
    let lead = b[0];
    let (need, init, min) = match lead {
        0x00..=0x7f => return (Ok(u32::from(lead)), 1),
        0xc0..=0xdf => (1, u32::from(lead & 0x1f), 0x80),
        0xe0..=0xef => (2, u32::from(lead & 0x0f), 0x800),
        0xf0..=0xf7 => (3, u32::from(lead & 0x07), 0x10000),
        _ => return (Err(Utf8Error::Other), 1),
    };
    let mut c = init;
    for i in 1..=need {
        match b.get(i) {
            Some(&x) if x & 0xc0 == 0x80 => c = (c << 6) | u32::from(x & 0x3f),
            _ => return (Err(Utf8Error::Other), i),
        }
    }
    let len = need + 1;
    if (0xd800..=0xdfff).contains(&c) || c > 0xffff {
        return (Err(Utf8Error::Other), len);
    }
    if c < min {
        return (Err(Utf8Error::Overlong(c)), len);
    }
    (Ok(c), len)
}

fn push_char(out: &mut Vec<u8>, c: u32) {
    match c {
        0x22 => out.extend_from_slice(b"\\\""),
        0x5c => out.extend_from_slice(b"\\\\"),
        0x2f => out.extend_from_slice(b"\\/"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        0x0a => out.extend_from_slice(b"\\n"),
        0x0d => out.extend_from_slice(b"\\r"),
        0x09 => out.extend_from_slice(b"\\t"),
        0x20..=0x7e => out.push(c as u8),
        _ => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
    }
}

/// The body of a JSON string holding `input`; None when the input code
/// fails on it.
pub(crate) fn escape(input: &[u8], code: InputCode) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len() + 8);
    let InputCode::Utf8 { permissive, skip } = code else {
        for &b in input {
            push_char(&mut out, u32::from(b));
        }
        return Some(out);
    };
    let mut rest = input;
    while !rest.is_empty() {
        let (c, len) = decode(rest);
        rest = &rest[len.min(rest.len())..];
        match c {
            Ok(c) => push_char(&mut out, c),
            Err(Utf8Error::Overlong(c)) if permissive => push_char(&mut out, c),
            Err(_) if skip => {}
            Err(_) => return None,
        }
    }
    Some(out)
}

/// One step of a `json_query` path.
#[derive(Debug, PartialEq, Eq)]
enum Step<'p> {
    Key(&'p [u8]),
    Index(usize),
}

/// `$`, then `.key` and `[n]` steps; None when it is not such a path.
fn path(p: &[u8]) -> Option<Vec<Step<'_>>> {
    let mut rest = p.strip_prefix(b"$")?;
    let mut steps = Vec::new();
    while let Some(&c) = rest.first() {
        if c == b'.' {
            let end = rest[1..]
                .iter()
                .position(|&b| b == b'.' || b == b'[')
                .map_or(rest.len(), |i| i + 1);
            steps.push(Step::Key(&rest[1..end]));
            rest = &rest[end..];
        } else if c == b'[' {
            let close = rest.iter().position(|&b| b == b']')?;
            let n = std::str::from_utf8(&rest[1..close]).ok()?.parse().ok()?;
            steps.push(Step::Index(n));
            rest = &rest[close + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// A value `json_query` reached.
#[derive(Debug, PartialEq)]
pub(crate) enum Found {
    Str(Vec<u8>),
    /// A number's text as written.
    Num(Vec<u8>),
    Bool(bool),
}

/// `json_query(<path>[,int])` on `doc`, as a sample: a string, a
/// boolean, a number as `%g` writes it or, with `int`, its leading
/// integer.
pub(crate) fn query_sample(
    doc: &[u8],
    args: &[super::arg::Arg],
) -> Option<super::value::Sample<'static>> {
    use super::value::Sample;
    let as_int = args.get(1).is_some_and(|t| t.as_str() == "int");
    Some(match query(doc, args.first()?.as_bytes())? {
        Found::Str(b) => Sample::Str(std::borrow::Cow::Owned(b)),
        Found::Bool(b) => Sample::Bool(b),
        Found::Num(n) if as_int => Sample::Sint(leading_int(&n)?),
        Found::Num(n) => {
            let x: f64 = std::str::from_utf8(&n).ok()?.parse().ok()?;
            Sample::owned_str(format_g(x))
        }
    })
}

/// The value at `path` in `doc`: None when the path or the document is
/// not understood, the value is absent, `null`, an object or an array.
pub(crate) fn query(doc: &[u8], path_text: &[u8]) -> Option<Found> {
    let steps = path(path_text)?;
    let mut s = Scanner { b: doc, at: 0 };
    s.find(&steps)
}

struct Scanner<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.at)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    /// The value here, descending along `steps`.
    fn find(&mut self, steps: &[Step<'_>]) -> Option<Found> {
        let Some((step, rest)) = steps.split_first() else {
            return self.leaf();
        };
        match (self.peek()?, step) {
            (b'{', Step::Key(want)) => {
                self.at += 1;
                if self.peek()? == b'}' {
                    return None;
                }
                loop {
                    let key = self.raw_string()?;
                    self.eat(b':')?;
                    if key == *want {
                        return self.find(rest);
                    }
                    self.skip()?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        _ => return None,
                    }
                }
            }
            (b'[', Step::Index(want)) => {
                self.at += 1;
                if self.peek()? == b']' {
                    return None;
                }
                let mut i = 0;
                loop {
                    if i == *want {
                        return self.find(rest);
                    }
                    self.skip()?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        _ => return None,
                    }
                    i += 1;
                }
            }
            _ => None,
        }
    }

    /// The value the path ends on.
    fn leaf(&mut self) -> Option<Found> {
        match self.peek()? {
            b'"' => unescape(self.raw_string()?).map(Found::Str),
            b't' => self.word(b"true").map(|_| Found::Bool(true)),
            b'f' => self.word(b"false").map(|_| Found::Bool(false)),
            b'-' | b'0'..=b'9' => self.number().map(|n| Found::Num(n.to_vec())),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.b[self.at..].starts_with(w).then(|| self.at += w.len())
    }

    /// A string's bytes between its quotes, escapes left as they are.
    fn raw_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match *self.b.get(self.at)? {
                b'"' => break,
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        let s = self.b.get(start..self.at)?;
        self.at += 1;
        Some(s)
    }

    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        while self
            .b
            .get(self.at)
            .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.at += 1;
        }
        (self.at > start).then(|| &self.b[start..self.at])
    }

    /// Past one value of any kind.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(|_| ()),
            open @ (b'{' | b'[') => {
                self.at += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                if self.peek()? == close {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.raw_string()?;
                        self.eat(b':')?;
                    }
                    self.skip()?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        c if c == close => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

/// A JSON string's escapes undone as HAProxy 2.6 does: `\u00XX` becomes
/// that one byte and any other `\u` fails, as does `\/`.
fn unescape(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let c = *s.get(i + 1)?;
        if c == b'u' {
            let hex = s.get(i + 2..i + 6)?;
            if &hex[..2] != b"00" {
                return None;
            }
            let text = std::str::from_utf8(&hex[2..]).ok()?;
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 6;
            continue;
        }
        out.push(match c {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            // Not `\/`: HAProxy 2.6 refuses it.
            b'\\' | b'"' => c,
            _ => return None,
        });
        i += 2;
    }
    Some(out)
}

/// A number as C's `printf("%g")` writes it (six significant digits).
pub(crate) fn format_g(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".to_string()
        } else if x > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{x:.5e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    let fixed = format!("{x:.*}", (5 - exp) as usize);
    trim_zeros(&fixed).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A number's text read as C's `strtoll` reads it (the leading integer);
/// None when there is none or it overflows.
pub(crate) fn leading_int(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in &digits[..len] {
        let d = i64::from(d - b'0');
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(d)?
        } else {
            n.checked_add(d)?
        };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format_is_cs() {
        assert_eq!(format_g(1.5), "1.5");
        assert_eq!(format_g(1000.0), "1000");
        assert_eq!(format_g(1e20), "1e+20");
        assert_eq!(format_g(0.1), "0.1");
        assert_eq!(format_g(1234567.5), "1.23457e+06");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(-7.0), "-7");
    }

    #[test]
    fn paths_are_keys_and_indexes() {
        assert_eq!(
            path(b"$.a[1].b"),
            Some(vec![Step::Key(b"a"), Step::Index(1), Step::Key(b"b")])
        );
        assert_eq!(path(b"a"), None);
        assert_eq!(path(b"$['a']"), None);
    }

    #[test]
    fn queries_stop_at_the_first_match() {
        let doc = br#"{"a":1,"b":{"c":"x"},"arr":[10,"y",true]}"#;
        assert_eq!(query(doc, b"$.b.c"), Some(Found::Str(b"x".to_vec())));
        assert_eq!(query(doc, b"$.arr[2]"), Some(Found::Bool(true)));
        assert_eq!(query(doc, b"$.b"), None);
        assert_eq!(query(br#"{"a":1"#, b"$.a"), Some(Found::Num(b"1".to_vec())));
        assert_eq!(query(br#"{"a":"\u0100"}"#, b"$.a"), None);
    }
}
