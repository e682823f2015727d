//! The stick table commands: `show table`, `clear table` and `set
//! table`, with HAProxy 2.6's replies. One parser serves the three, as in
//! HAProxy, quirks included: an operator level is needed to see or change
//! entries (below it a key command does nothing and a dump says so),
//! `set table <t>` without a key clears the table as `clear table <t>`
//! does.

use std::fmt::Write as _;
use std::sync::Arc;

use super::{Ctx, Output, text};
use crate::config::model::CliLevel;
use crate::sample::stick::{DataType, Std};
use crate::state::table::entry::Value;
use crate::state::table::key::{self, CliKeyError};
use crate::state::table::{Entry, Table, freq};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Show,
    Clear,
    Set,
}

pub(super) fn cmd_show_table(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    run(ctx, Action::Show, args)
}

pub(super) fn cmd_clear_table(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    run(ctx, Action::Clear, args)
}

pub(super) fn cmd_set_table(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    run(ctx, Action::Set, args)
}

/// The most data filters a command takes (HAProxy's
/// `STKTABLE_FILTER_LEN`).
const FILTERS: usize = 4;

fn err_args(action: Action) -> Output {
    text(match action {
        Action::Show => {
            "Optional argument only supports \"data.<store_data_type>\" <operator> <value> and key <key>\n"
        }
        Action::Clear => {
            "Required arguments: <table> \"data.<store_data_type>\" <operator> <value> or <table> key <key>\n"
        }
        Action::Set => "Required arguments: <table> key <key> [data.<store_data_type> <value>]*\n",
    })
}

/// `args`: the words after `show|clear|set table`.
fn run(ctx: &mut Ctx<'_>, action: Action, args: &[String]) -> Output {
    let snap = ctx.snap.clone();
    // A dump needs the socket's level, a key command the session's.
    let oper = ctx.bind_level >= CliLevel::Operator;
    let arg = |i: usize| args.get(i).map_or("", String::as_str);
    if args.is_empty() {
        if action != Action::Show {
            return err_args(action);
        }
        let mut out = String::new();
        for t in snap.tables.listed() {
            head(&mut out, t, false, oper);
        }
        return text(out);
    }
    let Some(t) = snap.tables.by_name(arg(0)) else {
        return text("No such table\n");
    };
    let filters = match arg(1) {
        "key" => return per_key(t, action, args, ctx.level >= CliLevel::Operator),
        w if w.starts_with("data.") => {
            if action == Action::Set {
                return text(
                    "content-based lookup is only supported with the \"show\" and \"clear\" actions\n",
                );
            }
            match filters(t, args) {
                Ok(f) => f,
                Err(e) => return text(e),
            }
        }
        "" => Vec::new(),
        _ => return err_args(action),
    };
    let mut out = String::new();
    if action == Action::Show {
        head(&mut out, t, true, oper);
    }
    if !oper {
        return text(out);
    }
    for (_, slot) in t.slots_by_key() {
        let e = Entry { table: t, slot };
        let keep = filters.iter().all(|f| f.holds(&e));
        if action == Action::Show {
            if keep {
                entry_line(&mut out, &e);
            }
            t.remove_if_expired(slot);
        } else if keep {
            t.remove_slot(slot);
        }
    }
    text(out)
}

/// `# table: <name>, type: <type>, size:<n>, used:<n>`, and for a table
/// named by the command a note when the level does not show entries.
fn head(out: &mut String, t: &Table, target: bool, oper: bool) {
    let _ = writeln!(
        out,
        "# table: {}, type: {}, size:{}, used:{}",
        t.name(),
        t.def.key.name(),
        t.def.size,
        t.used()
    );
    if target && !oper {
        out.push_str("# contents not dumped due to insufficient privileges\n");
    }
}

/// One entry as HAProxy dumps it: its address in memory (here the address
/// of its row), key, trackers, time to live, then each stored data type
/// in HAProxy's order, arrays element by element (`gpc0_rate(1000)=...`).
fn entry_line(out: &mut String, e: &Entry<'_>) {
    let t = e.table;
    let _ = write!(out, "{:p}: key=", t.words(e.slot).as_ptr());
    key::show(&e.key(), t.def.key, out);
    let _ = write!(
        out,
        " use={} exp={}",
        e.refs(),
        freq::tick_remain(freq::now_ms(), e.expire())
    );
    for (data, f) in t.schema.stored() {
        let name = data.name();
        let period = |out: &mut String| {
            if data.std() == Std::Freq {
                let _ = write!(out, "({})", f.period);
            }
        };
        if data.is_array() {
            let (pfx, sfx) = name.split_at(name.find('_').unwrap_or(name.len()));
            for i in 0..f.count {
                let _ = write!(out, " {pfx}{i}{sfx}");
                period(out);
                out.push('=');
                value(out, e.value(data, i));
            }
            continue;
        }
        let _ = write!(out, " {name}");
        period(out);
        out.push('=');
        value(out, e.value(data, 0));
    }
    out.push('\n');
}

fn value(out: &mut String, v: Option<Value>) {
    match v {
        Some(Value::Int(n)) => {
            let _ = write!(out, "{n}");
        }
        Some(Value::Text(Some(s))) => out.push_str(&s),
        Some(Value::Text(None)) | None => out.push('-'),
    }
}

/// `<cmd> table <t> key <k> [data.<type> <value>]*`.
fn per_key(t: &Arc<Table>, action: Action, args: &[String], oper: bool) -> Output {
    let Some(k) = args.get(2).filter(|k| !k.is_empty()) else {
        return text("Key value expected\n");
    };
    let k = match key::from_cli(k, t.def.key) {
        Ok(k) => k,
        Err(CliKeyError::Invalid) => return text("Invalid key\n"),
        Err(CliKeyError::Binary) => {
            return text(match action {
                Action::Show => {
                    "Showing keys from tables of type other than ip, ipv6, string and integer is not supported\n"
                }
                Action::Clear => {
                    "Removing keys from tables of type other than ip, ipv6, string and integer is not supported\n"
                }
                Action::Set => {
                    "Inserting keys into tables of type other than ip, ipv6, string and integer is not supported\n"
                }
            });
        }
    };
    if !oper {
        return text("Permission denied\n");
    }
    match action {
        Action::Show => {
            let mut out = String::new();
            let shown = t.with(&k, |e| {
                head(&mut out, t, true, true);
                entry_line(&mut out, &e);
                e.slot
            });
            if let Some(slot) = shown {
                t.remove_if_expired(slot);
            }
            text(out)
        }
        Action::Clear => match t.remove(&k) {
            Err(_) => text("Entry currently in use, cannot remove\n"),
            Ok(_) => text(""),
        },
        Action::Set => {
            let now = crate::state::table::freq::now64();
            let Ok(held) = t.get_or_create_at(&k, now) else {
                return text("Unable to allocate a new entry\n");
            };
            let e = held.entry();
            let reply = set_values(&e, &args[3..]);
            t.touch_at(e.slot, now as u32);
            text(reply)
        }
    }
}

/// The `data.<type> <value>` pairs of `set table`, applied in order up to
/// the first bad one (its message, else nothing).
fn set_values(e: &Entry<'_>, pairs: &[String]) -> &'static str {
    for pair in pairs.chunks(2) {
        let Some(name) = pair[0].strip_prefix("data.") else {
            return "\"data.<type>\" followed by a value expected\n";
        };
        let Some(data) = DataType::from_name(name) else {
            return "Unknown data type\n";
        };
        if e.table.schema.field(data).is_none() {
            return "Data type not stored in this table\n";
        }
        let Some(v) = pair.get(1).and_then(|v| strl2llrc(v)) else {
            return "Require a valid integer value to store\n";
        };
        e.set(data, v);
    }
    ""
}

/// HAProxy's `strl2llrc`: an optional sign and digits, nothing else.
fn strl2llrc(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(crate::sample::value::str_to_int(s.as_bytes()))
}

/// One `data.<type> <op> <value>` filter.
struct Filter {
    data: DataType,
    op: &'static str,
    value: i64,
}

impl Filter {
    fn holds(&self, e: &Entry<'_>) -> bool {
        let d = e.get(self.data, 0).unwrap_or(0);
        let v = self.value;
        match self.op {
            "eq" => d == v,
            "ne" => d != v,
            "le" => d <= v,
            "ge" => d >= v,
            "lt" => d < v,
            _ => d > v,
        }
    }
}

/// The filters of `show|clear table <t> data.<type> <op> <value> ...`,
/// or HAProxy's message.
fn filters(t: &Table, args: &[String]) -> Result<Vec<Filter>, String> {
    let arg = |i: usize| args.get(i).map_or("", String::as_str);
    let mut out = Vec::new();
    let mut i = 0;
    while i < FILTERS {
        let at = 1 + 3 * i;
        if i > 0 && arg(at).is_empty() {
            break;
        }
        let n = i + 1;
        let data = arg(at)
            .strip_prefix("data.")
            .and_then(DataType::from_name)
            .ok_or_else(|| format!("Filter entry #{n}: Unknown data type\n"))?;
        if t.schema.field(data).is_none() {
            return Err(format!(
                "Filter entry #{n}: Data type not stored in this table\n"
            ));
        }
        let op = ["eq", "ne", "le", "ge", "lt", "gt"]
            .into_iter()
            .find(|o| *o == arg(at + 1))
            .ok_or_else(|| {
                format!("Filter entry #{n}: Require and operator among \"eq\", \"ne\", \"le\", \"ge\", \"lt\", \"gt\"\n")
            })?;
        let value = strl2llrc(arg(at + 2)).ok_or_else(|| {
            format!("Filter entry #{n}: Require a valid integer value to compare against\n")
        })?;
        out.push(Filter { data, op, value });
        i += 1;
    }
    let at = 1 + 3 * i;
    if !arg(at).is_empty() {
        return Err(format!(
            "Detected extra data in filter, {}th word of input, after '{}'\n",
            at + 2 + 1,
            arg(at - 1)
        ));
    }
    Ok(out)
}
