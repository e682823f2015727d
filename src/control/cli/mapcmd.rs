//! The map commands of the CLI: `show map <file>` and `get map <file>
//! <key>`, answered from the maps the running configuration loaded
//! (`sample::patref`). Replies are HAProxy 2.6's bytes.

use std::fmt::Write as _;

use super::{Ctx, Output, text};
use crate::sample::patref;
use crate::sample::pattern::MapEditError;

const UNKNOWN_MAP: &str = "Unknown map identifier. Please use #<id> or <file>.\n";

/// `show map <file>`: every entry as `0x<id> <key> <value>`. HAProxy shows
/// the address of its entry; here the id is the entry's place in the file
/// (stable while the configuration runs, as HAProxy's addresses are).
pub(super) fn cmd_show_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(path) = args.first() else {
        return text(UNKNOWN_MAP);
    };
    let maps = patref::maps_of(path);
    let Some(map) = maps.first() else {
        return text(UNKNOWN_MAP);
    };
    let mut out = String::new();
    for (i, (k, v)) in map.entries().into_iter().enumerate() {
        let _ = writeln!(out, "{:#x} {k} {v}", entry_id(i));
    }
    text(out)
}

/// An entry's id: non-zero and spaced as addresses are.
fn entry_id(i: usize) -> usize {
    0x1000 + i * 0x50
}

/// `get map <file> <key>`: one line per converter using the file.
pub(super) fn cmd_get_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(path), Some(key)) = (args.first(), args.get(1)) else {
        return text("Missing map identifier and/or key.\n");
    };
    let maps = patref::maps_of(path);
    if maps.is_empty() {
        return text(UNKNOWN_MAP);
    }
    // Converters of one matcher and output type share one lookup in
    // HAProxy, so one line.
    let mut seen = Vec::new();
    let mut out = String::new();
    for m in &maps {
        if !seen.contains(&m.shape()) {
            seen.push(m.shape());
            out.push_str(&m.describe_lookup(key));
        }
    }
    text(out)
}

/// HAProxy's reply for an entry the CLI refused.
fn edit_error(e: MapEditError, not_found: &str) -> Output {
    match e {
        MapEditError::Key(e) => text(format!("{e}.\n")),
        MapEditError::Value(v) => text(format!("unable to parse '{v}'.\n")),
        MapEditError::NotFound => text(not_found),
    }
}

/// `add map <file> <key> <value>`: to every converter's copy of the file,
/// all or none (every copy must accept the key and the value first).
pub(super) fn cmd_add_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(path), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text(
            "'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n",
        );
    };
    let maps = patref::maps_of(path);
    if maps.is_empty() {
        return text(UNKNOWN_MAP);
    }
    if let Some(e) = maps.iter().find_map(|m| m.check_value(value).err()) {
        return edit_error(e, "");
    }
    for m in &maps {
        if let Err(e) = m.add(key, value) {
            return edit_error(e, "");
        }
    }
    text("")
}

/// `set map <file> <key> <value>`: the value of every entry of that key.
pub(super) fn cmd_set_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(path), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text("'set map' expects three parameters: map identifier, key and value.\n");
    };
    let maps = patref::maps_of(path);
    if maps.is_empty() {
        return text(UNKNOWN_MAP);
    }
    // HAProxy 2.6 answers nothing to a value its converter cannot parse.
    if maps.iter().any(|m| m.check_value(value).is_err()) {
        return text("");
    }
    let mut out = text("");
    for m in &maps {
        if let Err(e) = m.set(key, value) {
            out = edit_error(e, "entry not found.\n");
        }
    }
    out
}

/// `del map <file> <key>`: every entry of that key.
pub(super) fn cmd_del_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(path), Some(key)) = (args.first(), args.get(1)) else {
        return text("This command expects two parameters: map identifier and key.\n");
    };
    let maps = patref::maps_of(path);
    if maps.is_empty() {
        return text(UNKNOWN_MAP);
    }
    let mut out = text("");
    for m in &maps {
        if let Err(e) = m.delete(key) {
            out = edit_error(e, "Key not found.\n");
        }
    }
    out
}

/// `clear map <file>`: no entry left.
pub(super) fn cmd_clear_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(path) = args.first() else {
        return text("Missing map identifier.\n");
    };
    let maps = patref::maps_of(path);
    if maps.is_empty() {
        return text(UNKNOWN_MAP);
    }
    maps.iter().for_each(|m| m.clear());
    text("")
}
