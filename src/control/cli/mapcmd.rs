//! The map commands of the CLI: `show map <file>` and `get map <file>
//! <key>`, answered from the maps the running configuration loaded
//! (`sample::patref`). Replies are HAProxy 2.6's bytes.

use std::fmt::Write as _;

use super::{Ctx, Output, text};
use crate::sample::patref;

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
    for (i, (k, v)) in map.entries().enumerate() {
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
    text(
        maps.iter()
            .map(|m| m.describe_lookup(key))
            .collect::<String>(),
    )
}
