//! The commands of the stats socket, one function each, as the table in
//! the parent module names them. Replies are HAProxy 2.6's texts.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::config::model::CliLevel;
use crate::snapshot::{BackendRt, ServerRt, Snapshot};
use crate::state::AdminState;
use crate::state::health::{CheckStatus, Forced};

use crate::observe::stats::admin::{self, ServerAction};
use crate::observe::stats::csv::{self, CsvOptions, Filter};
use crate::observe::stats::info;

use super::*;
use crate::config::units::atoi;

pub(super) fn cmd_help(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut out = String::new();
    let listed: Vec<&Command> = visible(ctx.level)
        .filter(|c| {
            args.iter()
                .zip(c.words)
                .all(|(a, w)| w.starts_with(a.as_str()))
        })
        .collect();
    out.push_str(VALID);
    if !listed.is_empty() {
        listed.iter().for_each(|c| help_line(&mut out, c));
    } else if !close_commands(&mut out, args, ctx.level) {
        // `help <nothing close>`: HAProxy lists every command.
        visible(ctx.level).for_each(|c| help_line(&mut out, c));
    }
    text(out)
}

pub(super) fn cmd_prompt(_: &mut Ctx<'_>, _: &[String]) -> Output {
    Output {
        text: String::new(),
        effect: Effect::TogglePrompt,
    }
}

pub(super) fn cmd_quit(_: &mut Ctx<'_>, _: &[String]) -> Output {
    Output {
        text: String::new(),
        effect: Effect::Quit,
    }
}

pub(super) fn cmd_operator(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    ctx.level = ctx.level.min(CliLevel::Operator);
    text("")
}

pub(super) fn cmd_user(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    ctx.level = CliLevel::User;
    text("")
}

pub(super) fn cmd_show_cli_level(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    text(format!("{}\n", ctx.level.as_str()))
}

/// What `reload` answers where no reload can run.
pub(super) const NO_RELOAD: &str = "reload is not available in this process.\n";

/// `reload`: the session runs it ([`run_reload`]); the dispatcher, which
/// is synchronous, only says so.
pub(super) fn cmd_reload(_: &mut Ctx<'_>, _: &[String]) -> Output {
    Output {
        text: String::new(),
        effect: Effect::Reload,
    }
}

/// Runs a reload for the CLI and answers with the outcome and, on failure,
/// the errors.
pub(crate) async fn run_reload() -> Output {
    let Some(sup) = crate::control::reload::supervisor() else {
        return text(NO_RELOAD);
    };
    let report = sup.reload().await;
    let mut out = if report.ok {
        format!("Success=1\ngeneration={}\n", report.generation)
    } else {
        String::from("Success=0\n")
    };
    for c in &report.changes {
        let _ = writeln!(out, "{c}");
    }
    for e in &report.errors {
        let _ = writeln!(out, "{}", e.trim_end());
    }
    text(out)
}

pub(super) fn cmd_show_reload(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    let generation = ctx.snap.generation;
    let last = crate::control::reload::supervisor().and_then(|s| s.last_report());
    text(crate::control::reload::render_report(
        last.as_ref(),
        generation,
    ))
}

pub(super) fn cmd_show_version(_: &mut Ctx<'_>, _: &[String]) -> Output {
    text(format!("{}\n", info::VERSION))
}

pub(super) fn cmd_show_backend(ctx: &mut Ctx<'_>, _: &[String]) -> Output {
    let mut out = String::from("# name\n");
    for b in ctx.snap.backends() {
        let _ = writeln!(out, "{}", b.name);
    }
    text(out)
}

pub(super) fn cmd_show_errors(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match crate::observe::stats::errors::parse_filter(&ctx.snap, args) {
        Ok(filter) => text(crate::observe::stats::errors::render(&ctx.snap, filter)),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_show_info(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    // The last of `typed` / `json` wins, as in HAProxy; `desc` and `float`
    // are accepted and ignored (no descriptions, integers only).
    let fmt = args
        .iter()
        .rev()
        .find(|a| *a == "typed" || *a == "json")
        .map(String::as_str);
    text(match fmt {
        Some("typed") => info::render_info_typed(ctx.rt, &ctx.snap),
        Some(_) => info::render_info_json(ctx.rt, &ctx.snap),
        None => info::render_info(ctx.rt, &ctx.snap),
    })
}

const STAT_KEYWORDS: &[&str] = &["typed", "json", "desc", "up", "no-maint"];

pub(super) fn cmd_show_sess(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    text(crate::observe::stats::sess::render(
        &ctx.snap, args, ctx.origin, ctx.me,
    ))
}

pub(super) fn cmd_show_stat(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut args = args;
    if args.first().is_some_and(|a| a == "domain") {
        match args.get(1).map(String::as_str) {
            Some("proxy") => args = &args[2..],
            Some("dns") => return text("'show stat domain dns' is not supported by sluice.\n"),
            _ => return text("Invalid statistics domain.\n"),
        }
    }
    let mut opts = CsvOptions {
        show_legends: ctx.level >= CliLevel::Operator,
        ..CsvOptions::default()
    };
    // `<iid|proxy> <type> <sid>` come as a triplet, before any keyword.
    if args.len() >= 3 && !STAT_KEYWORDS.contains(&args[0].as_str()) {
        let iid = match ctx.snap.proxies.iter().find(|p| p.name == args[0]) {
            Some(p) => i64::from(p.iid),
            None => atoi(&args[0]),
        };
        if iid == 0 {
            return text("No such proxy.\n");
        }
        opts.filter = Filter {
            iid,
            types: atoi(&args[1]),
            sid: atoi(&args[2]),
        };
        args = &args[3..];
    }
    let mut fmt = "csv";
    for a in args {
        match a.as_str() {
            "typed" => fmt = "typed",
            "json" => fmt = "json",
            "up" => opts.only_up = true,
            "no-maint" => opts.no_maint = true,
            // `desc` only adds descriptions to typed/json (not provided).
            _ => {}
        }
    }
    match fmt {
        "typed" => text(csv::render_typed(&csv::rows(ctx.rt, &ctx.snap, opts))),
        "json" => text(csv::render_json(&csv::rows(ctx.rt, &ctx.snap, opts))),
        _ => text(csv::render_csv(ctx.rt, &ctx.snap, opts)),
    }
}

/// `<backend>/<server>`, each a name or `#<id>`.
fn find_server<'a>(
    snap: &'a Snapshot,
    arg: Option<&String>,
) -> Result<(&'a BackendRt, &'a ServerRt), &'static str> {
    let Some((bk, sv)) = arg.and_then(|a| a.split_once('/')) else {
        return Err("Require 'backend/server'.\n");
    };
    let be = snap
        .backends()
        .find(|b| match bk.strip_prefix('#') {
            Some(id) => atoi(id) == i64::from(b.iid),
            None => b.name == bk,
        })
        .ok_or("No such backend.\n")?;
    let s = be
        .servers
        .iter()
        .find(|s| match sv.strip_prefix('#') {
            Some(id) => atoi(id) == i64::from(s.sid),
            None => s.name == sv,
        })
        .ok_or("No such server.\n")?;
    Ok((be, s))
}

pub(super) fn cmd_get_weight(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((_, s)) => text(format!(
            "{} (initial {})\n",
            s.state.weight.load(Relaxed),
            s.weight
        )),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_clear_counters(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let all = args.first().is_some_and(|a| a == "all");
    if all && ctx.level < CliLevel::Admin {
        return text(DENIED);
    }
    let clear = |c: &crate::state::Counters| {
        if all {
            c.clear_all();
        } else {
            c.clear_max();
        }
    };
    for p in &ctx.snap.proxies {
        if let Some(fe) = &p.frontend {
            clear(&fe.state.counters);
            if all {
                fe.state.client.clear_all();
            } else {
                fe.state.client.clear_max();
            }
        }
        if let Some(be) = &p.backend {
            clear(&be.state.counters);
            for s in &be.servers {
                clear(&s.state.counters);
                if all {
                    s.state.health.chkfail.store(0, Relaxed);
                    s.state.health.chkdown.store(0, Relaxed);
                }
            }
        }
    }
    let p = &ctx.rt.process;
    p.conns.clear_max();
    p.counts.conn_rate().clear_max();
    p.counts.sess_rate().clear_max();
    text("")
}

// ---------------------------------------------------------------------------
// Server administration (reference §1.8)

fn set_weight(s: &ServerRt, arg: Option<&String>) -> Output {
    match arg
        .ok_or("Require <weight> or <weight%>.\n")
        .and_then(|a| admin::weight_change(a, s.weight))
    {
        Ok(w) => {
            s.state.weight.store(w, Relaxed);
            text("")
        }
        Err(e) => text(e),
    }
}

pub(super) fn cmd_set_weight(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((_, s)) => set_weight(s, args.get(1)),
        Err(e) => text(e),
    }
}

fn set_admin(ctx: &Ctx<'_>, args: &[String], to: AdminState) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) => {
            admin::apply(be, s, ServerAction::State(to));
            text("")
        }
        Err(e) => text(e),
    }
}

pub(super) fn cmd_disable_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_admin(ctx, args, AdminState::Maint)
}

pub(super) fn cmd_enable_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_admin(ctx, args, AdminState::Ready)
}

fn set_health_checks(ctx: &Ctx<'_>, args: &[String], on: bool) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) if admin::apply(be, s, ServerAction::Checks(on)) => text(""),
        Ok(_) => text("Health check was not configured on this server, cannot enable.\n"),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_disable_health(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_health_checks(ctx, args, false)
}

pub(super) fn cmd_enable_health(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_health_checks(ctx, args, true)
}

pub(super) const SET_SERVER_USAGE: &str = "usage: set server <backend>/<server> addr | agent | agent-addr | agent-port | agent-send | check-addr | check-port | fqdn | health | ssl | state | weight\n";

pub(super) fn cmd_set_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let (be, s) = match find_server(&ctx.snap, args.first()) {
        Ok(found) => found,
        Err(e) => return text(e),
    };
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(1) {
        Some("weight") => set_weight(s, args.get(2)),
        Some("state") => {
            let to = match arg(2) {
                Some("ready") => AdminState::Ready,
                Some("drain") => AdminState::Drain,
                Some("maint") => AdminState::Maint,
                _ => {
                    return text(
                        "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n",
                    );
                }
            };
            admin::apply(be, s, ServerAction::State(to));
            text("")
        }
        Some("health") => {
            let to = match arg(2) {
                Some("up") => Forced::Up,
                Some("stopping") => Forced::Stopping,
                Some("down") => Forced::Down,
                _ => {
                    return text(
                        "'set server <srv> health' expects 'up', 'stopping', or 'down'.\n",
                    );
                }
            };
            admin::apply(be, s, ServerAction::Health(to));
            text("")
        }
        Some("addr") => {
            let out = text(admin::set_addr(
                s,
                (arg(2), arg(3), arg(4)),
                "stats socket command",
            ));
            // `set server .. addr` ends a `MAINT (resolution)`, as in
            // HAProxy (even when it could not change the address).
            if s.state.admin() & crate::state::ADMF_RMAINT != 0 && s.state.set_rmaint(false) {
                crate::observe::log::server_state::resolution_up(be, s, false);
            }
            out
        }
        Some("agent") => {
            if !s.state.health.agent_enabled() {
                return text("agent checks are not enabled on this server.\n");
            }
            let up = match arg(2) {
                Some("up") => true,
                Some("down") => false,
                _ => return text("'set server <srv> agent' expects 'up' or 'down'.\n"),
            };
            s.state.health.force_agent(up);
            text("")
        }
        Some("agent-send") => {
            if !s.state.health.agent_enabled() {
                return text("agent checks are not enabled on this server.\n");
            }
            crate::state::lock(&s.state.agent_target).send = arg(2).unwrap_or("").to_string();
            text("")
        }
        Some("agent-addr") => {
            let Some(a) = arg(2).filter(|a| !a.is_empty()) else {
                return text(
                    "set server <b>/<s> agent-addr requires an address and optionally a port.\n",
                );
            };
            let port = (arg(3) == Some("port")).then(|| arg(4).unwrap_or(""));
            set_agent_target(s, Some(a), port)
        }
        Some("agent-port") => {
            let Some(p) = arg(2).filter(|p| !p.is_empty()) else {
                return text("set server <b>/<s> agent-port requires a port.\n");
            };
            set_agent_target(s, None, Some(p))
        }
        Some("fqdn") => set_fqdn(be, s, arg(2)),
        Some("ssl") => text(
            "'set server <srv> ssl' cannot be set.  default-server should define ssl settings\n",
        ),
        Some(o @ ("check-addr" | "check-port")) => text(format!(
            "'set server <srv> {o}' is not supported by sluice yet.\n"
        )),
        _ => text(SET_SERVER_USAGE),
    }
}

/// `set server .. agent-addr|agent-port`: HAProxy's
/// `srv_update_agent_addr_port` (nothing changes on an error, told
/// without a line feed).
fn set_agent_target(s: &ServerRt, addr: Option<&str>, port: Option<&str>) -> Output {
    if !s.state.health.agent_enabled() {
        return text("agent checks are not enabled on this server");
    }
    let ip = match addr.map(str::parse::<std::net::IpAddr>) {
        Some(Err(_)) => return text(format!("invalid addr '{}'", addr.unwrap_or(""))),
        Some(Ok(ip)) => Some(ip),
        None => None,
    };
    let port = match port.map(str::parse::<i64>) {
        Some(Err(_)) => return text("provided port is not an integer"),
        Some(Ok(p)) if !(0..=65535).contains(&p) => return text("provided port is invalid"),
        Some(Ok(p)) => Some(p as u32),
        None => None,
    };
    let mut t = crate::state::lock(&s.state.agent_target);
    if let Some(ip) = ip {
        t.addr = Some(ip);
    }
    if let Some(p) = port {
        t.port = p;
    }
    text("")
}

/// `enable agent` / `disable agent`.
fn set_agent(ctx: &Ctx<'_>, args: &[String], on: bool) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((_, s)) if s.state.health.set_agent_enabled(on) => text(""),
        Ok(_) => text("Agent was not configured on this server, cannot enable.\n"),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_enable_agent(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_agent(ctx, args, true)
}

pub(super) fn cmd_disable_agent(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    set_agent(ctx, args, false)
}

/// `set server <b>/<s> fqdn <name>`: a server resolved by a `resolvers`
/// section is resolved under that name from now on.
fn set_fqdn(be: &BackendRt, s: &ServerRt, name: Option<&str>) -> Output {
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return text("set server <b>/<s> fqdn requires a FQDN.\n");
    };
    if s.resolve.is_none() {
        return text("set server <b>/<s> fqdn failed because no resolution is configured.\n");
    }
    if s.srvrecord.is_some() {
        return text("set server <b>/<s> fqdn failed because SRV resolution is configured.\n");
    }
    let st = &s.state;
    let current = st.fqdn.load_full();
    let msg = if current.as_deref().is_some_and(|c| c == name) {
        "no need to change the FDQN".to_string()
    } else if name.len() > 255
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
    {
        format!("invalid fqdn '{name}'")
    } else {
        let before = current
            .as_deref()
            .map_or("(null)", String::as_str)
            .to_string();
        st.fqdn.store(Some(std::sync::Arc::new(name.to_string())));
        crate::upstream::dns::wake();
        format!(
            "{}/{} changed its FQDN from {before} to {name}",
            be.name, st.name
        )
    };
    text(format!("{msg} by 'stats socket command'\n"))
}

/// `show cache`: each cache section and its objects, as HAProxy 2.6
/// prints them (`http::cache::show`).
pub(super) fn cmd_show_cache(ctx: &mut Ctx<'_>, _args: &[String]) -> Output {
    text(crate::http::cache::show(&ctx.snap.caches))
}

/// `show resolvers [<section>]`: each section's nameservers and their
/// counters, as HAProxy 2.6 prints them.
pub(super) fn cmd_show_peers(_ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match crate::peers::show::show(args) {
        Ok(s) => text(s),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_show_resolvers(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let sections = &ctx.snap.global.resolvers;
    if let Some(name) = args.first()
        && !sections.iter().any(|r| r.name == *name)
    {
        return text("Can't find that resolvers section\n");
    }
    let mut out = String::new();
    for r in sections {
        if args.first().is_some_and(|n| *n != r.name) {
            continue;
        }
        let _ = writeln!(out, "Resolvers section {}", r.name);
        if r.nameservers.is_empty() {
            out.push_str(" no nameserver\n");
        }
        for ns in &r.nameservers {
            let _ = writeln!(out, " nameserver {}:", ns.name);
            let c = crate::state::resolvers::counters(&r.name, &ns.name);
            for (label, v) in c.named() {
                let _ = writeln!(out, "  {:<13}{v}", format!("{label}:"));
            }
        }
    }
    text(out)
}

pub(super) fn cmd_set_maxconn_server(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let (be, s) = match find_server(&ctx.snap, args.first()) {
        Ok(x) => x,
        Err(e) => return text(e),
    };
    let Some(arg) = args.get(1) else {
        return text("Require <maxconn>.\n");
    };
    match admin::set_maxconn(be, s, arg) {
        Ok(()) => text(""),
        Err(e) => text(e),
    }
}

pub(super) fn cmd_set_maxconn_frontend(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(name) = args.first() else {
        return text("A frontend name is expected.\n");
    };
    if !ctx.snap.frontends().any(|f| f.name == *name) {
        return text("No such frontend.\n");
    }
    if args.get(1).is_none() {
        return text("Integer value expected.\n");
    }
    let v = atoi(&args[1]);
    if v < 0 {
        return text("Value out of range.\n");
    }
    let (Some(fe), Some(sup)) = (
        ctx.snap.frontends().find(|f| f.name == *name),
        crate::control::reload::supervisor(),
    ) else {
        return text("");
    };
    if sup.set_frontend_maxconn(fe, v.min(i64::from(u32::MAX)) as u32) {
        text("")
    } else {
        text("A reload is in progress; try again.\n")
    }
}

pub(super) fn cmd_set_maxconn_global(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let Some(v) = args.first() else {
        return text("Expects an integer value.\n");
    };
    let hard = ctx
        .snap
        .global
        .maxconn
        .unwrap_or(crate::snapshot::DEFAULT_MAXCONN);
    let v = atoi(v);
    if v > i64::from(hard) || v < 0 {
        return text("Value out of range.\n");
    }
    if let Some(sup) = crate::control::reload::supervisor() {
        sup.set_global_maxconn(v as u32);
    }
    text("")
}

/// `shutdown sessions server <b>/<s>`: the client connection of every
/// stream on the server is shut down at once (the server side of a request
/// still waiting for its answer ends with that answer or `timeout server`,
/// unless the server has `on-marked-down shutdown-sessions`).
pub(super) fn cmd_shutdown_sessions(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    match find_server(&ctx.snap, args.first()) {
        Ok((be, s)) => {
            crate::observe::stats::admin::apply(
                be,
                s,
                crate::observe::stats::admin::ServerAction::Shutdown,
            );
            text("")
        }
        Err(e) => text(e),
    }
}

/// HAProxy's `parse_time_err` in seconds: digits and an optional unit
/// (`us`, `ms`, `s`, `m`, `h`, `d`; seconds by default).
fn parse_seconds(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let us = match &s[digits..] {
        "us" => n,
        "ms" => n.checked_mul(1_000)?,
        "" | "s" => n.checked_mul(1_000_000)?,
        "m" => n.checked_mul(60_000_000)?,
        "h" => n.checked_mul(3_600_000_000)?,
        "d" => n.checked_mul(86_400_000_000)?,
        _ => return None,
    };
    Some(us / 1_000_000)
}

pub(super) fn cmd_set_timeout(_: &mut Ctx<'_>, args: &[String]) -> Output {
    if args.first().map(String::as_str) != Some("cli") {
        return text("'set timeout' only supports 'cli'.\n");
    }
    let Some(v) = args.get(1) else {
        return text("Expects an integer value.\n");
    };
    match parse_seconds(v) {
        Some(secs) if secs >= 1 => Output {
            text: String::new(),
            effect: Effect::SetTimeout(Duration::from_secs(secs)),
        },
        _ => text("Invalid timeout value.\n"),
    }
}

pub(super) fn cmd_show_env(_: &mut Ctx<'_>, args: &[String]) -> Output {
    let mut out = String::new();
    for (k, v) in crate::sys::env::vars() {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        if args.first().is_none_or(|name| *name == k) {
            let _ = writeln!(out, "{k}={}", v.replace(['\n', '\r'], " "));
        }
    }
    if out.is_empty() && !args.is_empty() {
        return text("Variable not found\n");
    }
    text(out)
}

/// `show servers state [<backend>]`: the `server-state-file` format
/// (reference §1.7), version 1.
pub(super) fn cmd_show_servers_state(ctx: &mut Ctx<'_>, args: &[String]) -> Output {
    let only = match args.first() {
        Some(name) => match ctx.snap.backend(name) {
            Some(b) => Some(b.name.as_str()),
            None => return text("Can't find backend.\n"),
        },
        None => None,
    };
    let mut out = String::from(
        "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n",
    );
    for be in ctx.snap.backends() {
        if only.is_some_and(|n| n != be.name) {
            continue;
        }
        for s in &be.servers {
            let st = &s.state;
            let h = &st.health;
            let info = h.info();
            let result = match info.status {
                CheckStatus::Ini => 0,
                c if c.is_ok() => 3,
                _ => 2,
            };
            // HAProxy's CHK_ST_CONFIGURED, _ENABLED and _PAUSED bits (a
            // server that starts `disabled` has its checks paused even
            // without `check`).
            let check_state = if h.is_checked() { 0x02 } else { 0 }
                | if h.check_enabled() { 0x04 } else { 0 }
                | if h.is_paused() { 0x08 } else { 0 };
            let addr = st.addr();
            // A UNIX socket server has no address or port to show.
            let unix = st.pool.load().unix().is_some();
            let (srv_addr, srv_port) = if unix {
                ("-".to_string(), 0)
            } else if !st.has_addr() {
                ("-".to_string(), addr.port())
            } else {
                (addr.ip().to_string(), addr.port())
            };
            // HAProxy's CHK_ST_CONFIGURED, _ENABLED and _AGENT bits.
            let agent_state = if h.agent_configured() {
                0x02 | 0x10 | if h.agent_enabled() { 0x04 } else { 0 }
            } else {
                0
            };
            let (agent_addr, agent_port) = {
                let t = crate::state::lock(&st.agent_target);
                (t.addr.map_or("-".to_string(), |a| a.to_string()), t.port)
            };
            let fqdn = st.fqdn.load();
            let fqdn = fqdn.as_deref().map_or("-", String::as_str);
            let _ = writeln!(
                out,
                "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} 0 {} {fqdn} {} {} {} 0 - {} {}",
                be.iid,
                be.name,
                s.sid,
                s.name,
                srv_addr,
                h.op_state(),
                st.admin(),
                st.weight.load(Relaxed),
                s.weight,
                h.lastchg(),
                info.status.number(),
                result,
                info.health,
                check_state,
                agent_state,
                u8::from(s.opts.forced_id),
                srv_port,
                s.srvrecord.as_deref().unwrap_or("-"),
                s.opts.use_ssl,
                agent_addr,
                agent_port
            );
        }
    }
    text(out)
}
