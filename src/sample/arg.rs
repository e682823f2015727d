//! The arguments of a fetch or converter: `name(arg1,arg2)`, split and
//! typed as HAProxy 2.6 does, with its messages.
//!
//! Arguments are separated by commas and end at the first `)`; quotes
//! (`'...'`, `"..."`) keep commas and parentheses (`concat(",")`). A
//! backslash is an ordinary character there, but for `\\` which is one
//! backslash, as in HAProxy 2.6.

use std::net::{Ipv4Addr, Ipv6Addr};

/// What an argument must parse as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgType {
    Str,
    Sint,
    /// An IPv4 netmask: a prefix length or a dotted mask.
    Msk4,
    /// An IPv6 prefix length.
    Msk6,
    Ipv4,
    Ipv6,
    /// A stick table's name: a string resolved once the configuration is
    /// read (empty: the proxy's own table), see `stick::resolve_args`.
    Tab,
}

impl ArgType {
    fn name(self) -> &'static str {
        match self {
            ArgType::Str => "string",
            ArgType::Sint => "integer",
            ArgType::Msk4 => "IPv4 mask",
            ArgType::Msk6 => "IPv6 mask",
            ArgType::Ipv4 => "IPv4 address",
            ArgType::Ipv6 => "IPv6 address",
            ArgType::Tab => "table",
        }
    }

    /// Kept as text when parsed, so an empty one is an argument (HAProxy
    /// stores its strings and the names it resolves later alike).
    fn textual(self) -> bool {
        matches!(self, ArgType::Str | ArgType::Tab)
    }
}

/// The arguments a keyword takes: their types in order, the first `min`
/// of them mandatory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgSpec {
    pub(crate) types: &'static [ArgType],
    pub(crate) min: usize,
}

impl ArgSpec {
    pub(crate) const NONE: ArgSpec = ArgSpec { types: &[], min: 0 };

    pub(crate) const fn of(types: &'static [ArgType], min: usize) -> ArgSpec {
        ArgSpec { types, min }
    }
}

/// A parsed argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Str(String),
    Sint(i64),
    /// A prefix length (0..=32 or 0..=128).
    Mask(u8),
    Ipv4(Ipv4Addr),
    Ipv6(Ipv6Addr),
    /// Bytes a keyword's check made of its text (`bin(<hex>)`).
    Bin(Vec<u8>),
    /// A regular expression a keyword's check compiled.
    Regex(Regex),
    /// A map file a `map_*` converter's check loaded.
    Map(std::sync::Arc<super::pattern::Map>),
    /// A variable name a keyword's check parsed (`var(txn.x)`, `add(txn.x)`).
    Var(super::vars::VarName),
    /// A stick table named by a table argument.
    Table(super::stick::TableRef),
}

/// A compiled regular expression, equal to another with the same source.
#[derive(Debug, Clone)]
pub(crate) struct Regex(pub(crate) regex::bytes::Regex);

impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Arg {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Arg::Str(s) => s.as_bytes(),
            Arg::Bin(b) => b,
            _ => b"",
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Arg::Str(s) => s,
            _ => "",
        }
    }

    pub(crate) fn as_int(&self) -> i64 {
        match self {
            Arg::Sint(n) => *n,
            _ => 0,
        }
    }
}

/// Why the arguments were refused; `pos` is the 1-based argument HAProxy
/// names in its message (0 when it names none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgError {
    pub(crate) pos: usize,
    pub(crate) msg: String,
}

/// Parses the arguments of `spec` from `text`, which starts just after the
/// opening parenthesis and runs to the end of the expression's text (the
/// messages quote what follows). Returns the arguments and the length of
/// `text` consumed, closing parenthesis included.
pub(crate) fn parse(spec: ArgSpec, text: &str) -> Result<(Vec<Arg>, usize), ArgError> {
    let (raw, commas, used) = split(text, spec.types)?;
    let mut args = Vec::with_capacity(raw.len());
    // `name()` is one empty string argument where a string comes first
    // (`str()`), else no argument at all.
    let first_is_str = spec.types.first().is_some_and(|t| t.textual());
    let raw = if raw.len() == 1 && raw[0].is_empty() && !first_is_str {
        if let Some(first) = spec.types.first().filter(|_| spec.min > 0) {
            return Err(ArgError {
                pos: 1,
                msg: format!(
                    "expected type '{}' at position 1, but got nothing",
                    first.name()
                ),
            });
        }
        Vec::new()
    } else {
        raw
    };
    for (i, word) in raw.iter().enumerate() {
        // An empty argument that is no string: a mandatory one is missing;
        // an optional one is left out, with those after it.
        if word.is_empty() && !spec.types[i].textual() {
            if i < spec.min {
                return Err(ArgError {
                    pos: i + 1,
                    msg: format!(
                        "expected type '{}' at position {}, but got nothing",
                        spec.types[i].name(),
                        i + 1
                    ),
                });
            }
            // HAProxy's list ends there: nothing may follow it.
            if let Some(&at) = commas.get(i) {
                return Err(ArgError {
                    pos: i + 1,
                    msg: format!("expected ')' before '{}'", &text[at..]),
                });
            }
            break;
        }
        args.push(typed(spec.types[i], word).map_err(|msg| ArgError {
            pos: i + 1,
            msg: format!("{msg} at position {}", i + 1),
        })?);
    }
    if args.len() < spec.min {
        return Err(ArgError {
            pos: args.len() + 1,
            msg: format!(
                "missing arguments (got {}/{}), type '{}' expected",
                args.len(),
                spec.min,
                spec.types[args.len()].name()
            ),
        });
    }
    Ok((args, used))
}

/// Splits at most `max` arguments up to the closing parenthesis; also
/// gives where the comma after each argument stands.
fn split(text: &str, types: &[ArgType]) -> Result<(Vec<String>, Vec<usize>, usize), ArgError> {
    let max = types.len();
    if max == 0 && !text.starts_with(')') {
        return Err(ArgError {
            pos: 1,
            msg: format!("expected ')' before '{text}'"),
        });
    }
    let mut args = Vec::new();
    let mut commas = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            // `\\` is one backslash; any other backslash is itself.
            (_, '\\') => {
                chars.next_if(|&(_, n)| n == '\\');
                cur.push('\\');
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, ')') => {
                args.push(cur);
                return Ok((args, commas, i + 1));
            }
            (None, ',') => {
                args.push(std::mem::take(&mut cur));
                commas.push(i);
                if args.len() >= max {
                    let last = args.len() - 1;
                    // An empty argument that is no string ends HAProxy's
                    // list there (`crc32(,)`: argument 1); else HAProxy
                    // 2.6 names argument 2 when a keyword that takes one
                    // is given more (`ltrim(a,b)`).
                    let ended =
                        args[last].is_empty() && !types.get(last).is_some_and(|t| t.textual());
                    return Err(ArgError {
                        pos: if ended { last + 1 } else { args.len().max(2) },
                        msg: format!("expected ')' before '{}'", &text[i..]),
                    });
                }
            }
            (None, c) => cur.push(c),
        }
    }
    Err(ArgError {
        pos: args.len() + 1,
        msg: "expected ')'".to_string(),
    })
}

fn typed(t: ArgType, word: &str) -> Result<Arg, String> {
    let bad = || format!("failed to parse '{word}' as type '{}'", t.name());
    match t {
        ArgType::Str | ArgType::Tab => Ok(Arg::Str(word.to_string())),
        ArgType::Sint => parse_int(word).map(Arg::Sint).ok_or_else(bad),
        ArgType::Msk4 => {
            if let Ok(n) = word.parse::<u8>() {
                return (n <= 32).then_some(Arg::Mask(n)).ok_or_else(bad);
            }
            let m: Ipv4Addr = word.parse().map_err(|_| bad())?;
            let bits = u32::from(m);
            // A dotted mask must be contiguous ones.
            if bits.leading_ones() + bits.trailing_zeros() != 32 {
                return Err(bad());
            }
            Ok(Arg::Mask(bits.leading_ones() as u8))
        }
        ArgType::Msk6 => match word.parse::<u8>() {
            Ok(n) if n <= 128 => Ok(Arg::Mask(n)),
            _ => Err(bad()),
        },
        ArgType::Ipv4 => word.parse().map(Arg::Ipv4).map_err(|_| bad()),
        ArgType::Ipv6 => word.parse().map(Arg::Ipv6).map_err(|_| bad()),
    }
}

/// An integer argument: an optional sign and digits only; out of range
/// saturates as HAProxy's reader does.
fn parse_int(word: &str) -> Option<i64> {
    let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(super::value::str_to_int(word.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELD: ArgSpec = ArgSpec::of(&[ArgType::Sint, ArgType::Str, ArgType::Sint], 2);

    fn err(spec: ArgSpec, text: &str) -> (usize, String) {
        let e = parse(spec, text).unwrap_err();
        (e.pos, e.msg)
    }

    #[test]
    fn splits_with_quotes_not_backslashes() {
        let (args, used) = parse(FIELD, "2,\\x)]").unwrap();
        assert_eq!(args, vec![Arg::Sint(2), Arg::Str("\\x".into())]);
        assert_eq!(used, 5);
        let (args, _) = parse(FIELD, "1,\",)\",3)").unwrap();
        assert_eq!(args[1], Arg::Str(",)".into()));
    }

    #[test]
    fn messages_as_haproxy() {
        // Captured from haproxy 2.6.12 (`str(a),field(...)`).
        assert_eq!(
            err(FIELD, "1)]"),
            (
                2,
                "missing arguments (got 1/2), type 'string' expected".into()
            )
        );
        assert_eq!(
            err(FIELD, "1,.,2,3)]"),
            (3, "expected ')' before ',3)]'".into())
        );
        assert_eq!(
            err(FIELD, "x,.)]"),
            (
                1,
                "failed to parse 'x' as type 'integer' at position 1".into()
            )
        );
        let mask = ArgSpec::of(&[ArgType::Msk4, ArgType::Msk6], 1);
        assert_eq!(
            err(mask, "8,129)"),
            (
                2,
                "failed to parse '129' as type 'IPv6 mask' at position 2".into()
            )
        );
        assert_eq!(parse(mask, "255.255.0.0)").unwrap().0, vec![Arg::Mask(16)]);
    }
}
