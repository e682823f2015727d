//! A sample expression: one fetch and a chain of converters,
//! `fetch(args),conv1(args),conv2`. Parsed once from the configuration
//! (with HAProxy 2.6's messages) and evaluated per request.

use super::arg::{self, Arg, ArgError};
use super::conv::{self, CheckError, ConvDef};
use super::fetch::{self, Ctx, FetchDef};
use super::stage::Stage;
use super::value::Sample;
use crate::haproxy26::{Kind, haproxy_has};

/// A compiled expression.
#[derive(Debug, Clone)]
pub(crate) struct Expr {
    fetch: &'static FetchDef,
    args: Vec<Arg>,
    convs: Vec<(&'static ConvDef, Vec<Arg>)>,
}

/// Two expressions are equal when they name the same keywords with the
/// same arguments (a reload compares configurations with this).
impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.fetch.name == other.fetch.name
            && self.args == other.args
            && self.convs.len() == other.convs.len()
            && self
                .convs
                .iter()
                .zip(&other.convs)
                .all(|((a, x), (b, y))| a.name == b.name && x == y)
    }
}

/// Equality above is an equivalence (no floating point in arguments).
impl Eq for Expr {}

impl Expr {
    /// The fetch's name (`http_auth` in `http_auth(L)`).
    pub(crate) fn fetch_name(&self) -> &'static str {
        self.fetch.name
    }

    /// The fetch's first argument as text (a userlist's name, ...).
    pub(crate) fn first_arg(&self) -> &str {
        self.args.first().map_or("", super::arg::Arg::as_str)
    }
}

/// Why an expression was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExprError {
    /// HAProxy refuses it too: its message, to follow "failed to parse
    /// sample expression <...> : ".
    #[error("{0}")]
    Invalid(String),
    /// HAProxy 2.6 has the keyword; sluice does not yet.
    #[error("{0} is not supported by sluice yet")]
    Unsupported(String),
    /// The fetch cannot work where the expression is used: HAProxy's whole
    /// message ("sample fetch <...> may not be reliably used here ...").
    #[error("{0}")]
    Misplaced(String),
}

/// Characters of fetch and converter names.
fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'+')
}

impl Expr {
    /// Parses the expression at the start of `text`, which may run on (the
    /// rest of a log-format string, of an ACL line): parsing stops at the
    /// first character that cannot continue the expression, and its offset
    /// is returned with the expression.
    /// Where it is used is not checked: the ACL parser's until it passes
    /// its place to [`Expr::parse_in`].
    #[allow(dead_code)]
    pub(crate) fn parse(text: &str) -> Result<(Expr, usize), ExprError> {
        Expr::parse_in(text, Stage::ANY)
    }

    /// [`Expr::parse`] for an expression evaluated at `stage`: a fetch that
    /// needs what the stage does not have is refused as HAProxy refuses it
    /// (after the whole expression parsed, as HAProxy checks).
    pub(crate) fn parse_in(text: &str, stage: Stage) -> Result<(Expr, usize), ExprError> {
        let (expr, used) = Expr::parse_any(text)?;
        if !expr.fetch.uses.usable_in(stage) {
            return Err(ExprError::Misplaced(format!(
                "sample fetch <{text}> may not be reliably used here because it needs '{}' which is not available here",
                expr.fetch.uses.names()
            )));
        }
        Ok((expr, used))
    }

    /// The fetch of the expression (what the ACL parser checks).
    #[allow(dead_code)]
    pub(crate) fn fetch(&self) -> &'static FetchDef {
        self.fetch
    }

    fn parse_any(text: &str) -> Result<(Expr, usize), ExprError> {
        let b = text.as_bytes();
        let mut i = b.iter().take_while(|&&c| is_name(c)).count();
        let name = &text[..i];
        let Some(fetch) = fetch::find(name) else {
            return Err(if haproxy_has(Kind::Fetch, name) {
                ExprError::Unsupported(format!("sample fetch '{name}'"))
            } else {
                ExprError::Invalid(format!("unknown fetch method '{name}'"))
            });
        };
        fetch::note_parsed(fetch.name);
        let mut args = Vec::new();
        let fetch_err =
            |e: ArgError| ExprError::Invalid(format!("fetch method '{name}' : {}", e.msg));
        if b.get(i) == Some(&b'(') {
            let (a, used) = arg::parse(fetch.args, &text[i + 1..]).map_err(fetch_err)?;
            args = a;
            i += 1 + used;
        } else if fetch.args.min > 0 {
            // HAProxy reads a missing mandatory argument list as `()`: a
            // string or table argument is then empty (a table's the
            // proxy's own), a number missing.
            args = arg::parse(fetch.args, ")").map_err(fetch_err)?.0;
        }
        super::stick::resolve_args(fetch.args, &mut args, fetch.name, None);
        if super::script::is_script(fetch.name) {
            args.insert(0, super::script::hidden_name(fetch.name));
        }
        if args.len() >= fetch.args.min
            && let Some(check) = fetch.check
        {
            check(&mut args).map_err(|m| {
                ExprError::Invalid(format!("invalid args in fetch method '{name}' : {m}"))
            })?;
        }
        let mut out = fetch.out;
        let mut convs = Vec::new();
        while b.get(i) == Some(&b',') {
            while b.get(i) == Some(&b',') {
                i += 1;
            }
            let start = i;
            i += b[i..].iter().take_while(|&&c| is_name(c)).count();
            let cname = &text[start..i];
            let Some(conv) = conv::find(cname) else {
                return Err(if haproxy_has(Kind::Converter, cname) {
                    ExprError::Unsupported(format!("converter '{cname}'"))
                } else {
                    ExprError::Invalid(format!("unknown converter '{cname}'"))
                });
            };
            // Without parentheses the arguments are those of `name()`, as
            // HAProxy reads them: one empty string where a string comes
            // first, and the mandatory ones missing.
            let cargs = if b.get(i) == Some(&b'(') {
                let (a, used) =
                    arg::parse(conv.args, &text[i + 1..]).map_err(|e| conv_arg_error(cname, e))?;
                i += 1 + used;
                a
            } else {
                arg::parse(conv.args, ")")
                    .map_err(|e| conv_arg_error(cname, e))?
                    .0
            };
            let mut cargs = cargs;
            super::stick::resolve_args(conv.args, &mut cargs, fetch.name, Some(conv.name));
            if !out.casts_to(conv.input) {
                return Err(ExprError::Invalid(format!(
                    "converter '{cname}' cannot be applied"
                )));
            }
            if let Some(check) = conv.check {
                check(&mut cargs).map_err(|e| match e {
                    CheckError::Invalid(m) => {
                        ExprError::Invalid(format!("invalid args in converter '{cname}' : {m}"))
                    }
                    CheckError::Unsupported(m) => ExprError::Unsupported(m),
                })?;
            }
            if super::script::is_script(conv.name) {
                cargs.insert(0, super::script::hidden_name(conv.name));
            }
            out = conv.out;
            convs.push((conv, cargs));
        }
        Ok((Expr { fetch, args, convs }, i))
    }

    /// The type the fetch gives, before any converter.
    pub(crate) fn fetch_out(&self) -> super::value::SmpType {
        self.fetch.out
    }

    /// The type the expression gives (its last step's output).
    pub(crate) fn out(&self) -> super::value::SmpType {
        self.convs.last().map_or(self.fetch.out, |(c, _)| c.out)
    }

    /// Calls `f` on every value of the expression (each value a fetch with
    /// several gives, through the converters) until it returns true; says
    /// whether one did. A single-valued fetch gives at most one.
    pub(crate) fn eval_each<'a>(
        &'a self,
        cx: &Ctx<'a>,
        f: &mut dyn FnMut(Sample<'a>) -> bool,
    ) -> bool {
        let Some(each) = self.fetch.each else {
            return self.eval(cx).is_some_and(f);
        };
        if self.args.len() < self.fetch.args.min || cx.req_gone && self.fetch.uses.request_only() {
            return false;
        }
        each(&self.args, cx, &mut |s| {
            self.convert(s, cx).is_some_and(&mut *f)
        })
    }

    fn convert<'a>(&'a self, mut s: Sample<'a>, cx: &Ctx<'a>) -> Option<Sample<'a>> {
        for (conv, args) in &self.convs {
            if args.len() < conv.args.min {
                return None;
            }
            s = (conv.eval)(s.cast(conv.input)?, args, cx)?;
        }
        Some(s)
    }

    /// Evaluates the expression; `None` when a step finds nothing or a
    /// value cannot be cast to the next step's input.
    pub(crate) fn eval<'a>(&'a self, cx: &Ctx<'a>) -> Option<Sample<'a>> {
        if self.args.len() < self.fetch.args.min || cx.req_gone && self.fetch.uses.request_only() {
            return None;
        }
        let s = (self.fetch.eval)(&self.args, cx)?;
        self.convert(s, cx)
    }
}

fn conv_arg_error(name: &str, e: ArgError) -> ExprError {
    ExprError::Invalid(format!(
        "invalid arg {} in converter '{name}' : {}",
        e.pos, e.msg
    ))
}
