//! One config line to words, following HAProxy 2.6's `parse_line()` rules
//! (reference §2.1): unprotected blanks separate words, `#` starts a
//! comment, `"weak"` and `'strong'` quotes, backslash escapes, `$VAR`
//! expansion inside double quotes only (an unquoted `$` is plain text, as in
//! `path_end \.de$` or a `$5$salt$hash` password; addresses expand their own
//! variables, see `addr::env_expand`), adjacent parts concatenate. There is
//! no line continuation. Small nom parsers recognise each token; a loop glues
//! them into words because quote state spans tokens.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_while, take_while1};
use nom::character::complete::{char, satisfy};
use nom::combinator::{map, opt, recognize, rest};
use nom::sequence::{delimited, pair, preceded};
use nom::{IResult, Parser};

/// HAProxy's MAX_LINE_ARGS.
pub(crate) const MAX_WORDS: usize = 64;

/// Context for pseudo variables and the environment.
pub(crate) struct LexCtx<'a> {
    pub(crate) file: &'a str,
    pub(crate) line: u32,
    /// Current section keyword (for `$.SECTION`).
    pub(crate) section: &'a str,
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LexErrorKind {
    Quote,
    Brace,
    VarName,
    Hex,
    WrongExpand,
    /// More than [`MAX_WORDS`] words: `pos` is the 1-based offset of the
    /// 64th word in the output, `word` that word.
    TooMany {
        pos: usize,
        word: String,
    },
}

/// A lexing error; `pos` is the byte offset in the raw line (indentation
/// included) of the offending character or opening quote/brace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub(crate) kind: LexErrorKind,
    pub(crate) pos: usize,
}

impl LexError {
    /// HAProxy's message (without the `parsing [f:l]: ` prefix): a first line
    /// with the 1-based position, then the line and a caret under the error.
    pub(crate) fn message(&self, raw: &str) -> String {
        let what = match &self.kind {
            LexErrorKind::Quote => "unmatched quote",
            LexErrorKind::Brace => "unmatched brace in environment variable name",
            LexErrorKind::VarName => "forbidden first char in environment variable name",
            LexErrorKind::Hex => "truncated or invalid hexadecimal sequence",
            LexErrorKind::WrongExpand => "truncated or invalid word expansion sequence",
            LexErrorKind::TooMany { pos, word } => {
                return format!(
                    "too many words, truncating after word {MAX_WORDS}, position {pos}: <{word}>."
                );
            }
        };
        let raw = line_content(raw);
        let indent = raw.len() - raw.trim_start_matches(is_space).len();
        let shown = &raw[indent..];
        let (text, caret) = sanitize_for_printing(shown, self.pos.saturating_sub(indent), 80);
        format!(
            "{what} at position {}:\n  {text}\n  {:>width$}",
            self.pos + 1,
            "^",
            width = caret + 1
        )
    }
}

/// HAProxy stops reading a line at CR or NUL.
fn line_content(raw: &str) -> &str {
    match raw.find(['\r', '\0']) {
        Some(i) => &raw[..i],
        None => raw,
    }
}

/// Make `line` printable (non-printable bytes become `?`) and at most about
/// `width` characters around byte `pos`; returns the text and the new caret
/// column.
fn sanitize_for_printing(line: &str, pos: usize, width: usize) -> (String, usize) {
    let bytes = line.as_bytes();
    let shift = if pos >= width { pos - width / 2 } else { 0 };
    let end = bytes.len().min(shift + width);
    let text: String = bytes
        .get(shift..end)
        .unwrap_or_default()
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect();
    (text, pos - shift)
}

/// `line` made printable and cut around byte `pos`, with the caret column:
/// for messages that show a line with a `^` under the error.
pub(crate) fn caret_line(line: &str, pos: usize) -> (String, usize) {
    sanitize_for_printing(line, pos.min(line.len()), 80)
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0b' | '\x0c')
}

/// Output of one token recognised by nom.
enum Tok<'a> {
    Sep,
    Comment,
    /// Literal text to append to the current word.
    Text(&'a str),
    Bytes(Vec<u8>),
    DQuote,
    Var(VarRef<'a>),
}

struct VarRef<'a> {
    name: &'a str,
    default: Option<&'a str>,
    /// `${NAME[*]}`: split the value into words.
    expand: bool,
}

/// Where a token failed, as an error kind and the remaining input at the
/// offending character.
type TokErr<'a> = (LexErrorKind, &'a str);

fn sep(i: &str) -> IResult<&str, Tok<'_>> {
    map(take_while1(is_space), |_| Tok::Sep).parse(i)
}

fn plain(i: &str) -> IResult<&str, Tok<'_>> {
    map(
        take_while1(|c: char| !is_space(c) && !matches!(c, '#' | '\'' | '"' | '\\')),
        Tok::Text,
    )
    .parse(i)
}

fn dq_plain(i: &str) -> IResult<&str, Tok<'_>> {
    map(
        take_while1(|c: char| !matches!(c, '"' | '\\' | '$')),
        Tok::Text,
    )
    .parse(i)
}

fn squoted(i: &str) -> IResult<&str, Tok<'_>> {
    map(
        delimited(char('\''), take_till(|c| c == '\''), char('\'')),
        Tok::Text,
    )
    .parse(i)
}

fn is_hex(c: char) -> bool {
    c.is_ascii_hexdigit()
}

/// A backslash sequence starting at `i` (which begins with `\`).
fn escape(i: &str, in_dquote: bool) -> Result<(&str, Tok<'_>), TokErr<'_>> {
    let after = &i[1..];
    let mut chars = after.chars();
    let simple = |c: char, len: usize| Ok((&after[len..], Tok::Bytes(vec![c as u8])));
    match chars.next() {
        Some(' ') => simple(' ', 1),
        Some('\\') => simple('\\', 1),
        Some('t') => simple('\t', 1),
        Some('n') => simple('\n', 1),
        Some('r') => simple('\r', 1),
        Some('#') => simple('#', 1),
        Some('\'') => simple('\'', 1),
        Some('"') => simple('"', 1),
        // `\$` is an escape only where `$` is special: inside double quotes.
        Some('$') if in_dquote => simple('$', 1),
        Some('x') => {
            let hex: IResult<&str, &str> =
                recognize(pair(satisfy(is_hex), satisfy(is_hex))).parse(&after[1..]);
            match hex {
                Ok((rest, digits)) => match u8::from_str_radix(digits, 16) {
                    Ok(b) => Ok((rest, Tok::Bytes(vec![b]))),
                    Err(_) => Err((LexErrorKind::Hex, i)),
                },
                Err(_) => Err((LexErrorKind::Hex, i)),
            }
        }
        // Not an escape sequence: the backslash is kept and the next
        // character is processed normally.
        _ => Ok((after, Tok::Text("\\"))),
    }
}

fn var_name(i: &str) -> IResult<&str, &str> {
    let tail = |c: char| c.is_ascii_alphanumeric() || c == '_';
    alt((
        // Pseudo variables: `.FILE`, `.LINE`, `.SECTION`.
        recognize(pair(char('.'), take_while(tail))),
        recognize(pair(
            satisfy(|c: char| c.is_ascii_alphabetic() || c == '_'),
            take_while(tail),
        )),
    ))
    .parse(i)
}

/// `$NAME`, `${NAME}`, `${NAME-default}`, `${NAME[*]}` starting at `i`.
fn variable(i: &str) -> Result<(&str, Tok<'_>), TokErr<'_>> {
    let after_dollar = &i[1..];
    let brace: IResult<&str, Option<char>> = opt(char('{')).parse(after_dollar);
    let (after_brace, brace) = brace.unwrap_or((after_dollar, None));
    let brace_at = after_dollar;
    let Ok((mut cur, name)) = var_name(after_brace) else {
        return Err((LexErrorKind::VarName, after_brace));
    };
    if name.starts_with('.') && !matches!(name, ".FILE" | ".LINE" | ".SECTION") {
        return Err((LexErrorKind::VarName, after_brace));
    }
    let mut expand = false;
    if brace.is_some() && cur.starts_with('[') {
        let star: IResult<&str, &str> = tag("[*]").parse(cur);
        match star {
            Ok((r, _)) => {
                cur = r;
                expand = true;
            }
            Err(_) => return Err((LexErrorKind::WrongExpand, cur)),
        }
    }
    let mut default = None;
    if brace.is_some() {
        let dflt: IResult<&str, &str> = preceded(char('-'), take_till(|c| c == '}')).parse(cur);
        if let Ok((r, d)) = dflt {
            default = Some(d);
            cur = r;
        }
        let close: IResult<&str, char> = char('}').parse(cur);
        match close {
            Ok((r, _)) => cur = r,
            Err(_) => return Err((LexErrorKind::Brace, brace_at)),
        }
    }
    Ok((
        cur,
        Tok::Var(VarRef {
            name,
            default,
            expand,
        }),
    ))
}

/// Words being built; a word exists as soon as a separator was seen before
/// it, so `a "" b` keeps its empty middle word like HAProxy.
struct Words {
    done: Vec<(Vec<u8>, (usize, usize))>,
    cur: Vec<u8>,
    /// Byte span in the raw line of the source text of `cur`.
    span: Option<(usize, usize)>,
}

impl Words {
    fn split(&mut self) {
        let span = self.span.take().unwrap_or_default();
        self.done.push((std::mem::take(&mut self.cur), span));
    }
    fn touch(&mut self, start: usize, end: usize) {
        let s = self.span.map_or(start, |(s, _)| s);
        self.span = Some((s, end));
    }
    fn finish(mut self, raw: &str) -> Vec<Word> {
        // A trailing empty word (after trailing blanks) does not count.
        if !self.cur.is_empty() {
            self.split();
        }
        self.done
            .into_iter()
            .map(|(w, (s, e))| Word {
                text: String::from_utf8_lossy(&w).into_owned(),
                raw: raw.get(s..e).unwrap_or_default().to_string(),
            })
            .collect()
    }
}

/// A word and the source text it came from (before unquoting and variable
/// expansion), which some HAProxy messages quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) text: String,
    pub(crate) raw: String,
}

/// Split one raw line (without its newline) into words. An empty result
/// means a blank or comment-only line.
pub(crate) fn split_line(raw: &str, ctx: &LexCtx<'_>) -> Result<Vec<String>, LexError> {
    split_line_raw(raw, ctx).map(|ws| ws.into_iter().map(|w| w.text).collect())
}

/// [`split_line`], keeping each word's source text.
pub(crate) fn split_line_raw(raw: &str, ctx: &LexCtx<'_>) -> Result<Vec<Word>, LexError> {
    let raw = line_content(raw);
    let start = raw.trim_start_matches(is_space);
    let pos_of = |rest: &str| raw.len() - rest.len();
    let mut words = Words {
        done: Vec::new(),
        cur: Vec::new(),
        span: None,
    };
    let mut input = start;
    // Offset of the opening double quote while inside one.
    let mut dquote: Option<&str> = None;
    loop {
        if input.is_empty() {
            break;
        }
        let step: Result<(&str, Tok<'_>), TokErr<'_>> = if dquote.is_some() {
            if let Some(r) = input.strip_prefix('"') {
                Ok((r, Tok::DQuote))
            } else if input.starts_with('\\') {
                escape(input, true)
            } else if input.starts_with('$') {
                variable(input)
            } else {
                dq_plain(input).map_err(|_| (LexErrorKind::Quote, input))
            }
        } else if input.starts_with('\\') {
            escape(input, false)
        } else if let Some(r) = input.strip_prefix('"') {
            Ok((r, Tok::DQuote))
        } else if input.starts_with('#') {
            Ok(("", Tok::Comment))
        } else if input.starts_with('\'') {
            squoted(input).map_err(|_| (LexErrorKind::Quote, input))
        } else {
            alt((sep, plain))
                .parse(input)
                .map_err(|_| (LexErrorKind::Quote, input))
        };
        let (next, tok) = step.map_err(|(kind, at)| LexError {
            kind,
            pos: pos_of(at),
        })?;
        if !matches!(tok, Tok::Sep | Tok::Comment) {
            words.touch(pos_of(input), pos_of(next));
        }
        match tok {
            Tok::Sep => words.split(),
            Tok::Comment => break,
            Tok::Text(t) => words.cur.extend_from_slice(t.as_bytes()),
            Tok::Bytes(b) => words.cur.extend_from_slice(&b),
            Tok::DQuote => {
                dquote = match dquote {
                    Some(_) => None,
                    None => Some(input),
                }
            }
            Tok::Var(v) => {
                let value = lookup(&v, ctx);
                if v.expand {
                    emit_expanded(&mut words, &value);
                } else {
                    words.cur.extend_from_slice(value.as_bytes());
                }
            }
        }
        input = next;
    }
    if let Some(q) = dquote {
        return Err(LexError {
            kind: LexErrorKind::Quote,
            pos: pos_of(q),
        });
    }
    let words = words.finish(raw);
    if words.len() > MAX_WORDS {
        let pos = words[..MAX_WORDS - 1]
            .iter()
            .map(|w| w.text.len() + 1)
            .sum::<usize>()
            + 1;
        return Err(LexError {
            kind: LexErrorKind::TooMany {
                pos,
                word: words[MAX_WORDS - 1].text.clone(),
            },
            pos: 0,
        });
    }
    Ok(words)
}

fn lookup(v: &VarRef<'_>, ctx: &LexCtx<'_>) -> String {
    let value = match v.name {
        ".FILE" => Some(ctx.file.to_string()),
        ".LINE" => Some(ctx.line.to_string()),
        ".SECTION" => Some(ctx.section.to_string()),
        name => (ctx.env)(name),
    };
    // Unset → default if given, else the empty string.
    value
        .or_else(|| v.default.map(str::to_string))
        .unwrap_or_default()
}

/// `${LIST[*]}`: every run of blanks in the value separates words.
fn emit_expanded(words: &mut Words, value: &str) {
    let mut rest = value;
    while !rest.is_empty() {
        let r: IResult<&str, &str> = alt((
            take_while1(|c: char| c.is_ascii_whitespace()),
            rest_nonspace,
        ))
        .parse(rest);
        let Ok((next, part)) = r else { break };
        if part.starts_with(|c: char| c.is_ascii_whitespace()) {
            words.split();
        } else {
            words.cur.extend_from_slice(part.as_bytes());
        }
        rest = next;
    }
}

fn rest_nonspace(i: &str) -> IResult<&str, &str> {
    alt((take_while1(|c: char| !c.is_ascii_whitespace()), rest)).parse(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "MYADDR" => Some("127.0.0.1".into()),
            "LIST" => Some("a  b c".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn lex(line: &str) -> Result<Vec<String>, LexError> {
        let ctx = LexCtx {
            file: "t.cfg",
            line: 7,
            section: "global",
            env: &env,
        };
        split_line(line, &ctx)
    }

    fn ok(line: &str) -> Vec<String> {
        lex(line).unwrap_or_else(|e| panic!("{line:?}: {e:?}"))
    }

    #[test]
    fn words_and_comments() {
        assert_eq!(ok("  maxconn   100  "), ["maxconn", "100"]);
        assert_eq!(ok("global#comment"), ["global"]);
        assert_eq!(ok("# only a comment"), Vec::<String>::new());
        assert_eq!(ok(""), Vec::<String>::new());
        assert_eq!(ok("\ta\tb"), ["a", "b"]);
        assert_eq!(ok("a b\r"), ["a", "b"]);
        assert_eq!(ok("a \"\" b"), ["a", "", "b"]);
    }

    #[test]
    fn quotes() {
        assert_eq!(ok("x \"a b # c\""), ["x", "a b # c"]);
        assert_eq!(ok("x 'a $MYADDR \\n'"), ["x", "a $MYADDR \\n"]);
        assert_eq!(ok("x \"it's\""), ["x", "it's"]);
        assert_eq!(
            ok("log-format \"%{+Q}o %t\"' %s'\\ %{-Q}r"),
            ["log-format", "%{+Q}o %t %s %{-Q}r"]
        );
        assert_eq!(ok("x \"a\\\"b\""), ["x", "a\"b"]);
    }

    #[test]
    fn escapes() {
        assert_eq!(ok(r"a\ b c"), ["a b", "c"]);
        assert_eq!(ok(r"a\#b"), ["a#b"]);
        assert_eq!(ok(r"a\\b"), [r"a\b"]);
        assert_eq!(ok(r#"a\'\"b"#), [r#"a'"b"#]);
        assert_eq!(ok(r"a\tb\nc\r"), ["a\tb\nc\r"]);
        assert_eq!(ok(r"\x41\x62"), ["Ab"]);
        assert_eq!(ok(r"a\1"), [r"a\1"]);
        assert_eq!(ok(r"trailing \"), [r"trailing", r"\"]);
    }

    #[test]
    fn env_vars() {
        assert_eq!(ok("bind \"${MYADDR}:80\""), ["bind", "127.0.0.1:80"]);
        assert_eq!(ok("bind \"$MYADDR\":80"), ["bind", "127.0.0.1:80"]);
        assert_eq!(ok("bind \"${UNSET}:80\""), ["bind", ":80"]);
        assert_eq!(ok("x \"${UNSET-dflt val}\""), ["x", "dflt val"]);
        assert_eq!(ok("x \"${MYADDR-dflt}\""), ["x", "127.0.0.1"]);
        assert_eq!(ok("x \"${EMPTY-dflt}\""), ["x"]);
        assert_eq!(ok("x \"${LIST[*]}\" y"), ["x", "a", "b", "c", "y"]);
        assert_eq!(ok("x \"${LIST}\""), ["x", "a  b c"]);
        assert_eq!(
            ok("x \"$.LINE\" \"$.FILE\" \"$.SECTION\""),
            ["x", "7", "t.cfg", "global"]
        );
        assert_eq!(ok(r#"x "\$HOME""#), ["x", "$HOME"]);
        let ctx = LexCtx {
            file: "t.cfg",
            line: 1,
            section: "",
            env: &env,
        };
        let w = split_line_raw("  bind \"${MYADDR}:17180\" 'a b'", &ctx).unwrap();
        assert_eq!(w[1].text, "127.0.0.1:17180");
        assert_eq!(w[1].raw, "\"${MYADDR}:17180\"");
        assert_eq!(w[2].raw, "'a b'");
    }

    /// Outside double quotes `$` is ordinary text, as HAProxy 2.6 reads it
    /// (checked with `haproxy -c` and with the bytes of an
    /// `http-request return string` reply): regex anchors, crypt(3)
    /// hashes and even `$NAME` stay as written, and `\$` keeps its
    /// backslash.
    #[test]
    fn unquoted_dollar_is_text() {
        assert_eq!(
            ok(r"acl de path_end \.de$"),
            ["acl", "de", "path_end", r"\.de$"]
        );
        assert_eq!(ok("password $5$abc$def"), ["password", "$5$abc$def"]);
        assert_eq!(ok("reqrep ^(.*)$ x"), ["reqrep", "^(.*)$", "x"]);
        assert_eq!(ok("x a$ a$-b $$X"), ["x", "a$", "a$-b", "$$X"]);
        assert_eq!(
            ok("x a$MYADDR.b ${MYADDR}"),
            ["x", "a$MYADDR.b", "${MYADDR}"]
        );
        assert_eq!(ok(r"x a\$HOME"), ["x", r"a\$HOME"]);
        assert_eq!(ok(r"x $\ y"), ["x", "$ y"]);
        assert_eq!(ok("x $\"MYADDR\""), ["x", "$MYADDR"]);
    }

    #[test]
    fn errors() {
        let raw = "    maxconn 100 \"unterminated";
        let e = lex(raw).unwrap_err();
        assert_eq!(e.kind, LexErrorKind::Quote);
        assert_eq!(
            e.message(raw),
            "unmatched quote at position 17:\n  maxconn 100 \"unterminated\n              ^"
        );
        let raw = "a 'b";
        assert_eq!(lex(raw).unwrap_err().pos, 2);
        let raw = "    option \"a b \\";
        assert_eq!(lex(raw).unwrap_err().kind, LexErrorKind::Quote);
        assert_eq!(lex("x \"${FOO\"").unwrap_err().kind, LexErrorKind::Brace);
        assert_eq!(lex("x \"${FOO\"").unwrap_err().pos, 4);
        assert_eq!(lex("x \"$1\"").unwrap_err().kind, LexErrorKind::VarName);
        assert_eq!(lex("x \"$\"").unwrap_err().kind, LexErrorKind::VarName);
        assert_eq!(lex("x \"$.FOO\"").unwrap_err().kind, LexErrorKind::VarName);
        // HAProxy: `forbidden first char ... at position 36` for this line.
        let raw = "    http-request set-header X-C \"a$\"";
        let e = lex(raw).unwrap_err();
        assert_eq!((e.kind.clone(), e.pos + 1), (LexErrorKind::VarName, 36));
        assert_eq!(lex(r"x \xZZ").unwrap_err().kind, LexErrorKind::Hex);
        assert_eq!(lex(r"x \x4").unwrap_err().kind, LexErrorKind::Hex);
        assert_eq!(
            lex("x \"${A[x]}\"").unwrap_err().kind,
            LexErrorKind::WrongExpand
        );
        let many = vec!["w"; 65].join(" ");
        let e = lex(&many).unwrap_err();
        assert_eq!(
            e.message(&many),
            "too many words, truncating after word 64, position 127: <w>."
        );
        assert!(lex(&vec!["w"; 64].join(" ")).is_ok());
    }

    #[test]
    fn never_panics_on_odd_bytes() {
        for s in [
            "\u{0}", "é\"", "\\", "$", "${", "${A-", "'", "\"", "\\x", "ü\\xé",
        ] {
            let _ = lex(s);
            if let Err(e) = lex(s) {
                let _ = e.message(s);
            }
        }
    }
}
