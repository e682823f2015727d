//! The variable commands of the CLI: `get var <name>`, `set var <name>
//! [expr|fmt] <value>` (HAProxy 2.6 keeps it for the experimental mode)
//! and `experimental-mode [on|off]`. Only `proc` variables exist here, as
//! in HAProxy. Replies are HAProxy 2.6's bytes.

use super::{Ctx, Output, text};
use crate::sample::value::Sample;
use crate::sample::vars::{self, Scope, VarName};

/// HAProxy's replies built at run time (`cli_dynerr`, and `get var`'s
/// value) end without the empty line the others have: the text carries no
/// final newline.
fn dynerr(msg: String) -> Output {
    text(msg)
}

pub(super) fn cmd_experimental_mode(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match args.first().map(String::as_str) {
        None => text(format!(
            "experimental-mode is {}\n",
            if ctx.experimental { "ON" } else { "OFF" }
        )),
        Some("on") => {
            ctx.experimental = true;
            text("")
        }
        Some("off") => {
            ctx.experimental = false;
            text("")
        }
        Some(_) => text("error: 'on' or 'off' expected.\n"),
    }
}

pub(super) fn cmd_get_var(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(name) = args.first().filter(|a| !a.is_empty()) else {
        return text("Missing process-wide variable identifier.\n");
    };
    let value = VarName::parse(name)
        .ok()
        .filter(|v| v.scope == Scope::Proc)
        .and_then(|v| vars::get_proc(&v.name));
    let Some(value) = value else {
        return text("Variable not found.\n");
    };
    let kind = match &value {
        Sample::Bool(_) => "bool",
        Sample::Sint(_) => "sint",
        Sample::Ipv4(_) => "ipv4",
        Sample::Ipv6(_) => "ipv6",
        Sample::Str(_) => "str",
        Sample::Bin(_) => "bin",
        Sample::Meth(_) => "meth",
    };
    // Binary values are shown whole (HAProxy's cast keeps the bytes),
    // unprintable bytes as dots.
    let shown: Vec<u8> = match value {
        Sample::Bin(b) => b.into_owned(),
        v => {
            let mut out = Vec::new();
            v.write_text(&mut out);
            out
        }
    };
    let shown: String = shown
        .iter()
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    // HAProxy's message has no newline of its own either.
    text(format!("{name}: type={kind} value=<{shown}>"))
}

pub(super) fn cmd_set_var(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    if !ctx.experimental {
        return text("This command is restricted to experimental mode only.\n");
    }
    let Some(name) = args.first().filter(|a| !a.is_empty()) else {
        return text("Missing process-wide variable identifier.\n");
    };
    let Some(first) = args.get(1).filter(|a| !a.is_empty()) else {
        return text("Missing either 'expr', 'fmt' or expression.\n");
    };
    let (fmt, value) = match args.get(2).filter(|a| !a.is_empty()) {
        None => (false, first),
        Some(v) => match first.as_str() {
            "fmt" => (true, v),
            "expr" => (false, v),
            other => {
                return dynerr(format!(
                    "'set var': arg type must be either 'expr' or 'fmt' but got '{other}'."
                ));
            }
        },
    };
    let action = format!("set-var{}({name})", if fmt { "-fmt" } else { "" });
    let rule = match crate::config::parser::var_rule(
        &[action, value.clone()],
        crate::sample::Stage::ANY,
    ) {
        Ok(r) => r,
        Err(e) => return dynerr(e),
    };
    if rule.var.scope != Scope::Proc {
        return dynerr(format!(
            "'set var': cannot set variable '{name}', only scope 'proc' is permitted here."
        ));
    }
    crate::config::parser::run_outside(&rule);
    text("")
}
