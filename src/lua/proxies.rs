//! What scripts see of the running process: `core.get_info()` (`show
//! info`'s fields), `core.proxies`, `core.backends` and `core.frontends`
//! with their Proxy and Server objects (written in `prelude.lua` over the
//! primitives here): `show stat`'s rows as `get_stats()` tables, a
//! server's address, weight and administrative state, changed as the
//! CLI's `set server` changes them.

use std::sync::{Arc, Mutex};

use mlua::{Lua, Table, Value};

use crate::observe::stats::admin::{self, ServerAction};
use crate::observe::stats::csv::{self, CsvOptions, Filter};
use crate::snapshot::runtime::Runtime;
use crate::snapshot::{BackendRt, ServerRt};
use crate::state::AdminState;

/// What `Proxy:pause()`, `resume()` and `stop()` ask of a frontend's
/// listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListenerOp {
    Pause,
    Resume,
    Stop,
}

/// The listeners are the control layer's: it says how to reach them
/// (`set_listener_ops`, at start-up), for a frontend by name.
type ListenerOps = Box<dyn Fn(&str, ListenerOp) + Send + Sync>;
static LISTENER_OPS: std::sync::OnceLock<ListenerOps> = std::sync::OnceLock::new();

pub(crate) fn set_listener_ops(f: ListenerOps) {
    let _ = LISTENER_OPS.set(f);
}

/// `Proxy:pause()`, `resume()`, `stop()` on a proxy with a frontend, as
/// HAProxy's: its status (the FRONTEND row's `PAUSED`, `OPEN`, `STOP`),
/// its listeners, and HAProxy's warning. Nothing for a backend, for a
/// stopped frontend, nor to resume one that was not paused.
fn frontend_op(p: &crate::snapshot::ProxyRt, op: ListenerOp) {
    use crate::state::FrontendAdmin;
    let Some(fe) = &p.frontend else { return };
    let now = fe.state.admin();
    let to = match (op, now) {
        (_, FrontendAdmin::Stopped) => return,
        (ListenerOp::Pause, FrontendAdmin::Open) => FrontendAdmin::Paused,
        (ListenerOp::Resume, FrontendAdmin::Paused) => FrontendAdmin::Open,
        (ListenerOp::Stop, _) => FrontendAdmin::Stopped,
        _ => return,
    };
    fe.state.set_admin(to);
    if let Some(ops) = LISTENER_OPS.get() {
        ops(&p.name, op);
    }
    match op {
        ListenerOp::Pause => tracing::warn!("Paused frontend {}.", p.name),
        ListenerOp::Resume => tracing::warn!("Resumed frontend {}.", p.name),
        ListenerOp::Stop => {
            let fe_conns = fe.state.client.sum(|s| &s.conn_tot);
            let be_conns = p
                .backend
                .as_ref()
                .map_or(0, |b| b.state.counters.sum(|s| &s.stot));
            tracing::warn!(
                "Proxy {} stopped (cumulated conns: FE: {fe_conns}, BE: {be_conns}).",
                p.name
            );
        }
    }
}

/// The process's runtime, known once it started (`super::spawn`).
static RUNTIME: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);

pub(super) fn set_runtime(rt: &Arc<Runtime>) {
    *RUNTIME.lock().unwrap_or_else(|e| e.into_inner()) = Some(rt.clone());
}

fn runtime() -> mlua::Result<Arc<Runtime>> {
    RUNTIME
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .ok_or_else(|| mlua::Error::RuntimeError("the process is not running yet".into()))
}

/// A stats cell as HAProxy's Lua gives it: a number when it is one.
fn cell(lua: &Lua, v: &str) -> mlua::Result<Value> {
    Ok(match v.parse::<i64>() {
        Ok(n) => Value::Integer(n),
        Err(_) => Value::String(lua.create_string(v)?),
    })
}

/// The `show stat` row `filter` selects, as a table of its non-empty
/// fields.
fn stats(lua: &Lua, rt: &Runtime, filter: Filter) -> mlua::Result<Value> {
    let snap = rt.snapshot();
    let opts = CsvOptions {
        show_legends: true,
        filter,
        ..Default::default()
    };
    let Some(row) = csv::rows(rt, &snap, opts).into_iter().next() else {
        return Ok(Value::Nil);
    };
    let t = lua.create_table()?;
    for name in csv::FIELDS.iter() {
        let v = row.get(name);
        if !v.is_empty() && *name != "-" {
            t.set(*name, cell(lua, v)?)?;
        }
    }
    Ok(Value::Table(t))
}

/// Sets the primitives the prelude's objects call: `S.info()`,
/// `S.px(op, proxy)`, `S.srv(op, proxy, server, arg)`.
pub(super) fn install(lua: &Lua, prims: &Table) -> mlua::Result<()> {
    prims.raw_set(
        "info",
        lua.create_function(|lua, ()| {
            let rt = runtime()?;
            let snap = rt.snapshot();
            let t = lua.create_table()?;
            for (k, v) in crate::observe::stats::info::info_fields(&rt, &snap) {
                t.set(k, cell(lua, &v)?)?;
            }
            Ok(t)
        })?,
    )?;
    prims.raw_set(
        "px",
        lua.create_function(|lua, (op, name): (String, String)| {
            let rt = runtime()?;
            let snap = rt.snapshot();
            let Some(p) = snap.proxies.iter().find(|p| p.name == name) else {
                return Ok(Value::Nil);
            };
            Ok(match op.as_str() {
                "stats" => stats(
                    lua,
                    &rt,
                    Filter {
                        iid: i64::from(p.iid),
                        // A backend's row where it has one, as HAProxy.
                        types: if p.backend.is_some() { 2 } else { 1 },
                        sid: -1,
                    },
                )?,
                "pause" | "resume" | "stop" => {
                    let op = match op.as_str() {
                        "pause" => ListenerOp::Pause,
                        "resume" => ListenerOp::Resume,
                        _ => ListenerOp::Stop,
                    };
                    frontend_op(p, op);
                    Value::Nil
                }
                // The sessions on the backend's backup servers shut, as
                // `shutdown sessions server` does for each.
                "shut_bcksess" => {
                    if let Some(be) = &p.backend {
                        for s in be.servers.iter().filter(|s| s.backup) {
                            admin::apply(be, s, ServerAction::Shutdown);
                        }
                    }
                    Value::Nil
                }
                "mode" => {
                    let http = p
                        .backend
                        .as_ref()
                        .map(|b| b.mode == crate::config::model::Mode::Http)
                        .or_else(|| {
                            p.frontend
                                .as_ref()
                                .map(|f| f.mode == crate::config::model::Mode::Http)
                        })
                        .unwrap_or(false);
                    Value::String(lua.create_string(if http { "http" } else { "tcp" })?)
                }
                _ => Value::String(lua.create_string(
                    match (p.frontend.is_some(), p.backend.is_some()) {
                        (true, true) => "proxy",
                        (true, false) => "frontend",
                        _ => "backend",
                    },
                )?),
            })
        })?,
    )?;
    prims.raw_set(
        "srv",
        lua.create_function(
            |lua, (op, px, name, arg): (String, String, String, Option<String>)| {
                let rt = runtime()?;
                let snap = rt.snapshot();
                let found = snap
                    .proxies
                    .iter()
                    .find(|p| p.name == px)
                    .and_then(|p| p.backend.as_ref())
                    .and_then(|b| Some((b, b.servers.iter().find(|s| s.name == name)?)));
                let Some((be, s)) = found else {
                    return Ok(Value::Nil);
                };
                server_op(lua, &rt, be, s, &op, arg.as_deref())
            },
        )?,
    )?;
    Ok(())
}

fn server_op(
    lua: &Lua,
    rt: &Runtime,
    be: &BackendRt,
    s: &ServerRt,
    op: &str,
    arg: Option<&str>,
) -> mlua::Result<Value> {
    use std::sync::atomic::Ordering::Relaxed;
    let state = |to| {
        admin::apply(be, s, ServerAction::State(to));
        Ok(Value::Nil)
    };
    match op {
        "stats" => stats(
            lua,
            rt,
            Filter {
                iid: i64::from(be.iid),
                types: 4,
                sid: i64::from(s.sid),
            },
        ),
        "addr" => {
            let addr = match stats(
                lua,
                rt,
                Filter {
                    iid: i64::from(be.iid),
                    types: 4,
                    sid: i64::from(s.sid),
                },
            )? {
                Value::Table(t) => t.get::<Value>("addr")?,
                _ => Value::Nil,
            };
            Ok(addr)
        }
        "weight" => Ok(Value::Integer(i64::from(s.state.weight.load(Relaxed)))),
        "set_weight" => match admin::weight_change(arg.unwrap_or(""), s.weight) {
            Ok(w) => {
                s.state.weight.store(w, Relaxed);
                Ok(Value::Nil)
            }
            Err(e) => Ok(Value::String(lua.create_string(e.trim_end())?)),
        },
        "maxconn" => Ok(Value::Integer(i64::from(s.state.maxconn.load(Relaxed)))),
        // HAProxy's Lua answers a number here.
        "draining" => Ok(Value::Integer(i64::from(s.state.is_drain()))),
        "maint" => state(AdminState::Maint),
        "drain" => state(AdminState::Drain),
        "ready" => state(AdminState::Ready),
        "set_maxconn" => match admin::set_maxconn(be, s, arg.unwrap_or("")) {
            Ok(()) => Ok(Value::Nil),
            Err(e) => Ok(Value::String(lua.create_string(e)?)),
        },
        // HAProxy's words name the script as the change's author.
        "set_addr" => {
            let (ip, port) = match arg.and_then(|a| a.split_once(' ')) {
                Some((ip, port)) => (Some(ip), Some(port)),
                None => (arg, None),
            };
            let msg = admin::set_addr(s, (ip, port.map(|_| "port"), port), "Lua script");
            Ok(Value::String(lua.create_string(msg.trim_end())?))
        }
        _ => {
            use crate::state::health::Forced;
            let action = match op {
                "check_enable" => ServerAction::Checks(true),
                "check_disable" => ServerAction::Checks(false),
                "check_force_up" => ServerAction::Health(Forced::Up),
                "check_force_nolb" => ServerAction::Health(Forced::Stopping),
                "check_force_down" => ServerAction::Health(Forced::Down),
                "agent_enable" => ServerAction::Agent(admin::AgentAction::Enable),
                "agent_disable" => ServerAction::Agent(admin::AgentAction::Disable),
                "agent_force_up" => ServerAction::Agent(admin::AgentAction::Up),
                "agent_force_down" => ServerAction::Agent(admin::AgentAction::Down),
                "shut_sess" => ServerAction::Shutdown,
                _ => return Ok(Value::Nil),
            };
            admin::apply(be, s, action);
            Ok(Value::Nil)
        }
    }
}

/// The proxies' description the prelude builds `core.proxies`,
/// `core.backends` and `core.frontends` from: for each, its name, its
/// number, whether it is a frontend and a backend, its servers' names
/// and numbers, and its listeners' names.
pub(super) fn describe(lua: &Lua, rt: &Runtime) -> mlua::Result<Table> {
    let snap = rt.snapshot();
    let list = lua.create_table()?;
    for p in snap.proxies.iter() {
        let t = lua.create_table()?;
        t.set("name", p.name.as_str())?;
        t.set("uuid", p.iid.to_string())?;
        t.set("fe", p.frontend.is_some())?;
        t.set("be", p.backend.is_some())?;
        let servers = lua.create_table()?;
        if let Some(be) = &p.backend {
            for s in &be.servers {
                let st = lua.create_table()?;
                st.set("name", s.name.as_str())?;
                st.set("puid", s.sid.to_string())?;
                servers.push(st)?;
            }
        }
        t.set("servers", servers)?;
        // By HAProxy's names: a bind line's `name`, else `sock-<id>`.
        let listeners = lua.create_table()?;
        if let Some(fe) = &p.frontend {
            for (_, l) in &fe.listeners {
                let name = match l.name() {
                    Some(n) => n.to_string(),
                    None => format!("sock-{}", l.id()),
                };
                listeners.push(name)?;
            }
        }
        t.set("listeners", listeners)?;
        list.push(t)?;
    }
    Ok(list)
}
