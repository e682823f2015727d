//! The global section's Lua lines: `lua-load`, `lua-load-per-thread`,
//! `lua-prepend-path` and `tune.lua.*`. A `lua-load` line runs its file
//! while the configuration is read, as HAProxy does, so that the
//! actions, fetches and converters it registers are known to the lines
//! after it (through `sample::script`, which the Lua room serves).

use super::*;

pub(super) fn g_lua_load(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let per_thread = k == "lua-load-per-thread";
    let Some(file) = words.get(1) else {
        let what = if per_thread { "a file" } else { "a file name" };
        return s.alert(loc, format!("'{k}' expects {what} as parameter."));
    };
    let args = &words[2..];
    let lua = &mut s.global.lua;
    let req = crate::sample::script::LoadReq {
        file,
        args,
        prepend: &lua.prepend,
        maxmem: lua.maxmem.unwrap_or(0),
        forced_yield: lua
            .forced_yield
            .unwrap_or(crate::sample::script::Tune::default().forced_yield),
    };
    match crate::sample::script::load(lua.scripts.0.as_ref(), &req) {
        Ok(scripts) => {
            lua.scripts.0 = Some(scripts);
            lua.loads.push(LuaLoad {
                file: file.clone(),
                args: args.to_vec(),
                per_thread,
            });
        }
        Err(msg) => s.alert(loc, msg),
    }
}

pub(super) fn g_lua_prepend_path(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let Some(path) = words.get(1) else {
        return s.alert(
            loc,
            "'lua-prepend-path' expects to receive a <path> as argument",
        );
    };
    let cpath = match words.get(2).map(String::as_str) {
        None | Some("path") => false,
        Some("cpath") => true,
        Some(_) => {
            return s.alert(
                loc,
                "'lua-prepend-path' expects <type> to either be 'path' or 'cpath'",
            );
        }
    };
    s.global.lua.prepend.push((path.clone(), cpath));
}

pub(super) fn g_tune_lua(s: &mut State<'_>, loc: &Loc, words: &[String]) {
    let k = words[0].as_str();
    let arg = words.get(1).map_or("", String::as_str);
    let lua = &mut s.global.lua;
    match k {
        "tune.lua.forced-yield" => match arg.parse::<u32>() {
            // atoi's value: HAProxy reads a bad number as 0 only after
            // its own check, which refuses anything but digits.
            Ok(n) => lua.forced_yield = Some(n),
            Err(_) => s.alert(loc, format!("{k}: invalid number")),
        },
        "tune.lua.maxmem" => {
            let digits = arg.strip_prefix(['-', '+']).unwrap_or(arg);
            let end = digits.bytes().take_while(u8::is_ascii_digit).count();
            if arg.is_empty() || end < digits.len() {
                let at = &digits[end..];
                return s.alert(loc, format!("{k}: invalid number {arg} (error at '{at}')"));
            }
            let mb = crate::sample::value::str_to_int(arg.as_bytes()).max(0) as usize;
            lua.maxmem = Some(mb.saturating_mul(1024 * 1024));
        }
        "tune.lua.log.loggers" => match arg {
            "on" => lua.log_loggers = Some(true),
            "off" => lua.log_loggers = Some(false),
            _ => s.alert(loc, format!("'{k}' expects 'on' or 'off' but got '{arg}'.")),
        },
        "tune.lua.log.stderr" => match arg {
            "on" => lua.log_stderr = Some(LuaStderr::On),
            "auto" => lua.log_stderr = Some(LuaStderr::Auto),
            "off" => lua.log_stderr = Some(LuaStderr::Off),
            _ => s.alert(
                loc,
                format!("'{k}' expects 'on', 'auto', or 'off' but got '{arg}'."),
            ),
        },
        _ => {
            let Ok(d) = parse_time(arg) else {
                return s.alert(loc, format!("{k}: invalid timeout"));
            };
            match k {
                "tune.lua.session-timeout" => lua.session_timeout = Some(d),
                "tune.lua.task-timeout" => lua.task_timeout = Some(d),
                _ => lua.service_timeout = Some(d),
            }
        }
    }
}
