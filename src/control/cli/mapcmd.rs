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
use crate::sample::pattern::{Entry, MapEditError};

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

/// A leading `@<ver>`: the version, read as HAProxy's `str2uic` reads
/// it (the leading digits, nothing at all being 0), and the words after.
fn version(args: &[String]) -> (Option<u32>, &[String]) {
    match args.first().and_then(|a| a.strip_prefix('@')) {
        Some(v) => (Some(str2uic(v)), &args[1..]),
        None => (None, args),
    }
}

fn str2uic(s: &str) -> u32 {
    s.bytes().take_while(u8::is_ascii_digit).fold(0u32, |n, d| {
        n.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))
    })
}

/// `map` or `ACL` as HAProxy's messages name the kind.
fn kind_word(flag: u8) -> &'static str {
    if flag == MAP { "map" } else { "ACL" }
}

/// `show map|acl [<ref>]`: the list of references, or the entries of one
/// as `0x<id> <key> [<value>]`. HAProxy shows the address of its entry;
/// here the id is the entry's own number, which it keeps while it lives
/// whatever happens to the others, as HAProxy's addresses are (`set map`
/// and `del map` take it as `#0x<id>`). Entries of a version not yet
/// committed are numbered by their place.
fn show(flag: u8, args: &[String]) -> Output {
    if args.is_empty() {
        let mut out = String::from("# id (file) description\n");
        for r in patref::running().listed(flag) {
            out.push_str(&r.list_line());
        }
        return text(out);
    }
    let (ver, args) = version(args);
    let name = args.first().map_or("", String::as_str);
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    let (curr, _) = r.versions();
    let entries: Vec<(u64, String, Option<String>)> = match ver {
        Some(g) if g != curr => (r.staged(g).into_iter().enumerate())
            .map(|(i, (k, v))| (i as u64, k, v))
            .collect(),
        _ => r.users().first().map_or_else(Vec::new, |m| {
            let map = m.has_values();
            (m.entries().into_iter())
                .map(|(id, k, v)| (id, k, (map || !v.is_empty()).then_some(v)))
                .collect()
        }),
    };
    let mut out = String::new();
    for (id, k, v) in entries {
        let _ = match v {
            Some(v) => writeln!(out, "{:#x} {k} {v}", entry_id(id)),
            None => writeln!(out, "{:#x} {k}", entry_id(id)),
        };
    }
    text(out)
}

/// The entries a `set map` or `del map` argument names: `#0x<id>` one
/// entry by the id `show map` shows (HAProxy's own form: anything else
/// after `#` is a key), or a key; Err for a `#0x` one that is no number.
fn entry_arg(arg: &str) -> Result<Entry<'_>, Output> {
    let Some(hex) = arg.strip_prefix("#0x") else {
        return Ok(Entry::Key(arg));
    };
    match u64::from_str_radix(hex, 16) {
        // An id sluice did not give names no entry.
        Ok(n) => Ok(Entry::Id(
            n.checked_sub(ENTRY_BASE)
                .filter(|d| d % ENTRY_STEP == 0)
                .map_or(u64::MAX, |d| d / ENTRY_STEP),
        )),
        Err(_) => Err(text("Malformed identifier. Please use #<id> or <file>.\n")),
    }
}

pub(super) fn cmd_show_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    show(MAP, args)
}

pub(super) fn cmd_show_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    show(ACL, args)
}

/// An entry's id as shown: non-zero and spaced as addresses are.
fn entry_id(n: u64) -> u64 {
    ENTRY_BASE + n * ENTRY_STEP
}

const ENTRY_BASE: u64 = 0x1000;
const ENTRY_STEP: u64 = 0x50;

/// `get map|acl <ref> <key>`: one line per lookup structure of the
/// reference (HAProxy's expressions), of any kind.
fn get(flag: u8, args: &[String]) -> Output {
    let (Some(name), Some(key)) = (args.first(), args.get(1)) else {
        return text(format!(
            "Missing {} identifier and/or key.\n",
            kind_word(flag)
        ));
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

/// `add map|acl [@<ver>]`: HAProxy's reply.
fn add_entry(r: &PatRef, ver: Option<u32>, key: &str, value: Option<&str>) -> Output {
    match r.add(ver, key, value) {
        Ok(()) => text(""),
        Err(e) => edit_error(e, ""),
    }
}

/// `add map <ref> <key> <value>`: to every user of the file; or `add map
/// <ref> <<` and a payload of `<key> <value>` lines.
pub(super) fn cmd_add_map(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let (ver, args) = version(args);
    if let (Some(payload), Some(name)) = (ctx.payload, args.first()) {
        return add_payload(name, ver, payload);
    }
    let (Some(name), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text(
            "'add map' expects three parameters (map identifier, key and value) or one parameter (map identifier) and a payload\n",
        );
    };
    let Some(r) = find(name, None) else {
        return unknown(MAP);
    };
    if let Some(out) = future(&r, ver, MAP) {
        return out;
    }
    add_entry(&r, ver, key, Some(value))
}

/// `add map <ref> <<`: each `<key> <value>` of the payload added in turn,
/// read as HAProxy reads them: the key ends at the first blank (a line
/// end does not end it), the value after the blanks that follow runs to
/// the line end (trailing blanks kept); the first entry refused ends it
/// with its reply, those before it stay.
fn add_payload(name: &str, ver: Option<u32>, payload: &str) -> Output {
    let Some(r) = find(name, None) else {
        return unknown(MAP);
    };
    if let Some(out) = future(&r, ver, MAP) {
        return out;
    }
    let mut p = payload;
    while !p.is_empty() {
        let end = p.find([' ', '\t']).unwrap_or(p.len());
        let key = &p[..end];
        if end == p.len() {
            return text(format!("Missing value for key '{key}'.\n"));
        }
        p = p[end + 1..].trim_start_matches([' ', '\t']);
        let end = p.find('\n').unwrap_or(p.len());
        let value = &p[..end];
        p = p.get(end + 1..).unwrap_or("");
        let out = add_entry(&r, ver, key, Some(value));
        if !out.text.is_empty() {
            return out;
        }
    }
    text("")
}

/// HAProxy's refusal of a version `prepare` has not made yet.
fn future(r: &PatRef, ver: Option<u32>, flag: u8) -> Option<Output> {
    let (_, next) = r.versions();
    let g = ver?;
    ((g.wrapping_sub(next) as i32) > 0).then(|| {
        text(format!(
            "Version number in the future, please use 'prepare {}' before.\n",
            if flag == MAP { "map" } else { "acl" }
        ))
    })
}

/// `add acl <ref> <pattern>`: to every ACL using the file (or line).
pub(super) fn cmd_add_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (ver, args) = version(args);
    let (Some(name), Some(pattern)) = (args.first(), args.get(1)) else {
        return text("'add acl' expects two parameters: ACL identifier and pattern.\n");
    };
    let Some(r) = find(name, None) else {
        return unknown(ACL);
    };
    if let Some(out) = future(&r, ver, ACL) {
        return out;
    }
    if r.users().iter().any(|m| m.has_values()) {
        return text(
            "This ACL is shared with a map containing samples. You must use the command 'add map' to add values.\n",
        );
    }
    add_entry(&r, ver, pattern, None)
}

/// `set map <ref> <key> <value>`: the value of every entry of that key.
pub(super) fn cmd_set_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let (Some(name), Some(key), Some(value)) = (args.first(), args.get(1), args.get(2)) else {
        return text("'set map' expects three parameters: map identifier, key and value.\n");
    };
    let Some(r) = find(name, None) else {
        return unknown(MAP);
    };
    let entry = match entry_arg(key) {
        Ok(e) => e,
        Err(out) => return out,
    };
    // HAProxy's reply for an id it has no entry of.
    let not_found = match entry {
        Entry::Id(_) => "key or pattern not found.\n",
        Entry::Key(_) => "entry not found.\n",
    };
    match r.set(entry, value) {
        Ok(()) => text(""),
        // HAProxy 2.6 answers nothing to a value its converter cannot parse.
        Err(MapEditError::Value(_)) => text(""),
        Err(e) => edit_error(e, not_found),
    }
}

/// `del map|acl <ref> <key>`: every entry of that key. HAProxy names a
/// map in its reply to an unknown ACL too.
fn del(flag: u8, args: &[String]) -> Output {
    let (Some(name), Some(key)) = (args.first(), args.get(1)) else {
        return text(format!(
            "This command expects two parameters: {} identifier and key.\n",
            kind_word(flag)
        ));
    };
    let Some(r) = find(name, Some(flag)) else {
        return text(UNKNOWN_MAP);
    };
    let entry = match entry_arg(key) {
        Ok(e) => e,
        Err(out) => return out,
    };
    if r.delete(entry) {
        text("")
    } else {
        text("Key not found.\n")
    }
}

pub(super) fn cmd_del_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    del(MAP, args)
}

pub(super) fn cmd_del_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    del(ACL, args)
}

/// `clear map|acl <ref>`: no entry left.
fn clear(flag: u8, args: &[String]) -> Output {
    let (ver, args) = version(args);
    let Some(name) = args.first() else {
        return text(format!("Missing {} identifier.\n", kind_word(flag)));
    };
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    let (curr, _) = r.versions();
    if let Some(g) = ver.filter(|&g| g != curr) {
        r.drop_staged(|v, _| v == g);
        return text("");
    }
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

/// `prepare map|acl <ref>`: a new empty version, its number in the reply.
fn prepare(flag: u8, args: &[String]) -> Output {
    let name = args.first().map_or("", String::as_str);
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    text(format!("New version created: {}\n", r.prepare()))
}

pub(super) fn cmd_prepare_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    prepare(MAP, args)
}

pub(super) fn cmd_prepare_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    prepare(ACL, args)
}

/// `commit map|acl @<ver> <ref>`: the version requests see becomes
/// `<ver>`, the older ones are gone.
fn commit(flag: u8, args: &[String]) -> Output {
    let (Some(ver), args) = version(args) else {
        return text("Missing version number.\n");
    };
    let Some(name) = args.first() else {
        return text(format!("Missing {} identifier.\n", kind_word(flag)));
    };
    let Some(r) = find(name, Some(flag)) else {
        return unknown(flag);
    };
    match r.commit(ver) {
        Ok(()) => text(""),
        Err(_) => text("Version number out of range.\n"),
    }
}

pub(super) fn cmd_commit_map(_: &mut Ctx<'_>, args: &[String]) -> Output {
    commit(MAP, args)
}

pub(super) fn cmd_commit_acl(_: &mut Ctx<'_>, args: &[String]) -> Output {
    commit(ACL, args)
}
