//! The `core` and `act` tables scripts see when they are loaded: the
//! `register_*` functions, logging, the clock. The functions that yield
//! (`core.sleep`, `core.msleep`, `core.yield`) are in `prelude.lua`.

use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, Table};

use super::{ActionDef, HTTP_REQ, HTTP_RES, Registered, TCP_REQ, TCP_RES};

/// HAProxy's log levels, `core.emerg` (0) to `core.debug` (7).
pub(crate) const LEVELS: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
];

pub(super) fn install(lua: &Lua, reg: &Arc<Mutex<Registered>>) -> mlua::Result<()> {
    let core = lua.create_table()?;
    for (n, l) in LEVELS.iter().enumerate() {
        core.set(*l, n as i64)?;
    }
    core.set("thread", 0)?;
    let r = reg.clone();
    core.set(
        "register_action",
        lua.create_function(
            move |_, (name, kinds, f, nargs): (String, Table, Function, Option<i64>)| {
                let mut bits = 0;
                for k in kinds.sequence_values::<String>() {
                    bits |= match k?.as_str() {
                        "http-req" => HTTP_REQ,
                        "http-res" => HTTP_RES,
                        "tcp-req" => TCP_REQ,
                        "tcp-res" => TCP_RES,
                        other => {
                            return Err(mlua::Error::RuntimeError(format!(
                                "Lua action '{name}': unknown action type '{other}'"
                            )));
                        }
                    };
                }
                let nargs = nargs.unwrap_or(0).max(0) as usize;
                // One action per rule set: a name may serve requests and
                // responses with two functions, as HAProxy's rule sets
                // keep their keywords apart.
                let mut reg = lock(&r);
                for bit in [HTTP_REQ, HTTP_RES, TCP_REQ, TCP_RES] {
                    if bits & bit != 0 {
                        let def = ActionDef {
                            f: f.clone(),
                            nargs,
                        };
                        reg.actions[super::kind_index(bit)].insert(name.clone(), def);
                    }
                }
                Ok(())
            },
        )?,
    )?;
    let r = reg.clone();
    core.set(
        "register_fetches",
        lua.create_function(move |_, (name, f): (String, Function)| {
            lock(&r).fetches.insert(name, f);
            Ok(())
        })?,
    )?;
    let r = reg.clone();
    core.set(
        "register_converters",
        lua.create_function(move |_, (name, f): (String, Function)| {
            lock(&r).convs.insert(name, f);
            Ok(())
        })?,
    )?;
    let r = reg.clone();
    core.set(
        "register_service",
        lua.create_function(move |_, (name, mode, f): (String, String, Function)| {
            let http = match mode.as_str() {
                "http" => true,
                "tcp" => false,
                _ => {
                    return Err(mlua::Error::RuntimeError(format!(
                        "Lua service '{name}': unknown mode '{mode}', 'http' or 'tcp' expected"
                    )));
                }
            };
            lock(&r).services.insert(name, (f, http));
            Ok(())
        })?,
    )?;
    let r = reg.clone();
    core.set(
        "register_cli",
        lua.create_function(move |_, (path, usage, f): (Table, String, Function)| {
            let words = path
                .sequence_values::<String>()
                .collect::<mlua::Result<Vec<_>>>()?;
            lock(&r).clis.push((words, usage, f));
            Ok(())
        })?,
    )?;
    let r = reg.clone();
    core.set(
        "register_init",
        lua.create_function(move |_, f: Function| {
            lock(&r).inits.push(f);
            Ok(())
        })?,
    )?;
    let r = reg.clone();
    core.set(
        "register_task",
        lua.create_function(move |_, f: Function| {
            lock(&r).tasks.push(f);
            Ok(())
        })?,
    )?;
    core.set(
        "log",
        lua.create_function(|_, (level, msg): (i64, String)| {
            log(level, &msg);
            Ok(())
        })?,
    )?;
    for (name, level) in [("Debug", 7), ("Info", 6), ("Warning", 4), ("Alert", 1)] {
        core.set(
            name,
            lua.create_function(move |_, msg: String| {
                log(level, &msg);
                Ok(())
            })?,
        )?;
    }
    core.set(
        "set_map",
        lua.create_function(|_, (file, key, value): (String, String, String)| {
            crate::sample::patref::set_map(&file, &key, &value);
            Ok(())
        })?,
    )?;
    core.set(
        "del_map",
        lua.create_function(|_, (file, key): (String, String)| {
            crate::sample::patref::del_map(&file, &key);
            Ok(())
        })?,
    )?;
    core.set(
        "now",
        lua.create_function(|lua, ()| {
            let d = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let t = lua.create_table()?;
            t.set("sec", d.as_secs() as i64)?;
            t.set("usec", i64::from(d.subsec_micros()))?;
            Ok(t)
        })?,
    )?;
    lua.globals().set("core", core)?;
    let act = lua.create_table()?;
    for (n, name) in [
        "CONTINUE", "STOP", "YIELD", "ERROR", "DONE", "DENY", "ABORT", "INVALID",
    ]
    .iter()
    .enumerate()
    {
        act.set(*name, n as i64)?;
    }
    lua.globals().set("act", act)?;
    Ok(())
}

fn lock(r: &Mutex<Registered>) -> std::sync::MutexGuard<'_, Registered> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// `core.log` and its friends: HAProxy's line on stderr,
/// `[info] 338/001500 (1234) : text` (the day of the year counted from
/// 0, the local time, the pid).
pub(crate) fn log(level: i64, msg: &str) {
    let name = LEVELS
        .get(level.clamp(0, 7) as usize)
        .copied()
        .unwrap_or("info");
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let when = crate::sys::time::strftime("%j %H%M%S", secs, true).unwrap_or_default();
    let (day, time) = when.split_once(' ').unwrap_or(("1", ""));
    let yday = day.parse::<u32>().unwrap_or(1).saturating_sub(1);
    // HAProxy writes what is not printable as a dot.
    let msg: String = msg
        .chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '.'
            }
        })
        .collect();
    eprintln!("[{name}] {yday:03}/{time} ({}) : {msg}", std::process::id());
}
