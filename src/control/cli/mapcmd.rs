//! The map and ACL commands of the CLI: `show`, `get`, `add`, `set`,
//! `del` and `clear` of `map` and `acl`, on the pattern references of the
//! running configuration (`sample::patref`), named by file or `#<id>`.
//! Replies are HAProxy 2.6's bytes, its checks included: `get`, `add`
//! and `set` take any reference, `show`, `del` and `clear` only one of
//! their kind.

use std::fmt::Write as _;
use std::sync::Arc;

use super::{Ctx, Output, text};
use crate::sample::patref::{self, ACL, MAP, PatRef};
use crate::sample::pattern::MapEditError;

const UNKNOWN_MAP: &str = "Unknown map identifier. Please use #<id> or <file>.\n";
const UNKNOWN_ACL: &str = "Unknown ACL identifier. Please use #<id> or <file>.\n";

fn unknown(flag: u8) -> Output {
    text(if flag == MAP {
        UNKNOWN_MAP
    } else {
        UNKNOWN_ACL
    })
}

/// The reference `name` names; with `kind`, only one used that way.
fn find(name: &str, kind: Option<u8>) -> Option<Arc<PatRef>> {
    patref::running().find(name, kind.unwrap_or(MAP | ACL))
}

/// `show map|acl [<ref>]`: the list of references, or the entries of one
/// as `0x<id> <key> [<value>]`. HAProxy shows the address of its entry;
/// here the id is the entry's place (stable until the entries change, as
/// HAProxy's addresses are while the entry lives).
fn show(flag: u8, args: &[String]) -> Output {
    let Some(name) = args.first() else {
        let mut out = String::from("# id (file) description\n");
        for r in patref::running().listed(flag) {
            out.push_str(&r.list_line());
        }
        return text(out);
    };
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    let mut out = String::new();
    if let Some(m) = r.users().first() {
        for (i, (k, v)) in m.entries().into_iter().enumerate() {
            let _ = if flag == MAP || !v.is_empty() {
                writeln!(out, "{:#x} {k} {v}", entry_id(i))
            } else {
                writeln!(out, "{:#x} {k}", entry_id(i))
            };
        }
    }
    text(out)
}

pub(super) fn cmd_show_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    show(MAP, args)
}

pub(super) fn cmd_show_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    show(ACL, args)
}

/// An entry's id: non-zero and spaced as addresses are.
fn entry_id(i: usize) -> usize {
    0x1000 + i * 0x50
}

/// `get map|acl <ref> <key>`: one line per lookup structure of the
/// reference (HAProxy's expressions), of any kind.
fn get(flag: u8, args: &[String]) -> Output {
    let (Some(name), Some(key)) = (args.first(), args.get(1)) else {
        return text(if flag == MAP {
            "Missing map identifier and/or key.\n"
        } else {
            "Missing ACL identifier and/or key.\n"
        });
    };
    let Some(r) = find(name, None) else {
        return unknown(flag);
    };
    let out: String = (r.lookups().iter())
        .map(|m| m.describe_lookup(key, flag == MAP))
        .collect();
    text(out)
}

pub(super) fn cmd_get_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    get(MAP, args)
}

pub(super) fn cmd_get_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    get(ACL, args)
}

/// HAProxy's reply for an entry the CLI refused.
fn edit_error(e: MapEditError, not_found: &str) -> Output {
    match e {
        MapEditError::Key(e) => text(format!("{e}.\n")),
        MapEditError::Value(v) => text(format!("unable to parse '{v}'.\n")),
        MapEditError::NotFound => text(not_found),
    }
}

/// Adds `key` (and `value`, for a map) to every user of `r`, all or none
/// (every user must accept the key and the value first).
fn add_entry(r: &PatRef, key: &str, value: &str) -> Output {
    // HAProxy gives the entry to each lookup structure in turn, the value
    // parsed before the key, and on the first refusal takes it back out
    // of all: its count then has one more for each structure that took it
    // and one fewer for the removal.
    let refusal = (r.lookups().iter().enumerate())
        .find_map(|(k, m)| Some((k, m.check_value(value).and(m.check_key(key)).err()?)));
    if let Some((k, e)) = refusal {
        r.note_refused(k);
        return edit_error(e, "");
    }
    let users = r.users();
    for m in &users {
        if let Err(e) = m.add(key, value) {
            return edit_error(e, "");
        }
    }
    r.note_added(1);
    text("")
}

/// `add map <ref> <key> <value>`: to every user of the file.
pub(super) fn cmd_add_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(name), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text(
            "'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n",
        );
    };
    let Some(r) = find(name, None) else {
        return unknown(MAP);
    };
    add_entry(&r, key, value)
}

/// `add acl <ref> <pattern>`: to every ACL using the file (or line).
pub(super) fn cmd_add_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(name), Some(pattern)) = (args.first(), args.get(1)) else {
        return text("'add acl' expects two parameters: ACL identifier and pattern.\n");
    };
    let Some(r) = find(name, None) else {
        return unknown(ACL);
    };
    if r.users().iter().any(|m| m.has_values()) {
        return text(
            "This ACL is shared with a map containing samples. You must use the command 'add map' to add values.\n",
        );
    }
    add_entry(&r, pattern, "")
}

/// `set map <ref> <key> <value>`: the value of every entry of that key.
pub(super) fn cmd_set_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(name), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text("'set map' expects three parameters: map identifier, key and value.\n");
    };
    let Some(r) = find(name, None) else {
        return unknown(MAP);
    };
    let users = r.users();
    // HAProxy 2.6 answers nothing to a value its converter cannot parse.
    if users.iter().any(|m| m.check_value(value).is_err()) {
        return text("");
    }
    let mut out = text("");
    for m in &users {
        if let Err(e) = m.set(key, value) {
            out = edit_error(e, "entry not found.\n");
        }
    }
    out
}

/// `del map|acl <ref> <key>`: every entry of that key. HAProxy names a
/// map in its reply to an unknown ACL too.
fn del(flag: u8, args: &[String]) -> Output {
    let (Some(name), Some(key)) = (args.first(), args.get(1)) else {
        return text(if flag == MAP {
            "This command expects two parameters: map identifier and key.\n"
        } else {
            "This command expects two parameters: ACL identifier and key.\n"
        });
    };
    let Some(r) = find(name, Some(flag)) else {
        return text(UNKNOWN_MAP);
    };
    let mut deleted = None;
    for m in r.users() {
        match m.delete(key) {
            Ok(n) => deleted = deleted.or(Some(n)),
            Err(_) => return text("Key not found.\n"),
        }
    }
    if let Some(n) = deleted {
        r.note_deleted(n);
    }
    text("")
}

pub(super) fn cmd_del_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    del(MAP, args)
}

pub(super) fn cmd_del_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    del(ACL, args)
}

/// `clear map|acl <ref>`: no entry left.
fn clear(flag: u8, args: &[String]) -> Output {
    let Some(name) = args.first() else {
        return text(if flag == MAP {
            "Missing map identifier.\n"
        } else {
            "Missing ACL identifier.\n"
        });
    };
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    // HAProxy deletes the entries one by one.
    let n = r.users().first().map_or(0, |m| m.len());
    r.users().iter().for_each(|m| m.clear());
    r.note_deleted(n);
    text("")
}

pub(super) fn cmd_clear_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    clear(MAP, args)
}

pub(super) fn cmd_clear_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    clear(ACL, args)
}
