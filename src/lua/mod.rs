//! Lua scripts: `lua-load` and HAProxy's Lua API on mlua (a vendored
//! Lua 5.4). A configuration's scripts run while it is read
//! (`sample::script::load`, through the loader [`install`] sets): what
//! they register (`core.register_*`) is known to the lines after them.
//! The engines run the registered actions and services per request
//! ([`Host::run_action`]); fetches and converters run from the sample
//! registry ([`Host`]'s `Scripts`).
//!
//! A script runs as a coroutine that yields on `core.sleep`,
//! `core.yield`, its I/O (`core.tcp()`, `core.httpclient()`, a TCP
//! service's client: `io.rs`) and every `tune.lua.forced-yield`
//! instructions, so it never holds its worker (`run.rs`); one running
//! longer than its
//! timeout (`tune.lua.session-timeout`) fails with HAProxy's message.
//! All threads share one Lua state, as HAProxy's `lua-load` does (its
//! lock is mlua's); `lua-load-per-thread` loads into that same state.

mod core_api;
mod httpclient;
mod io;
mod proxies;
mod run;
pub(crate) mod txn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mlua::{Function, Lua, Table, Value};

use crate::sample::Ctx;
use crate::sample::arg::Arg;
use crate::sample::script::{LoadReq, Scripts};
use crate::sample::value::Sample;

pub(crate) use io::{AppletConn, Io};
pub(crate) use proxies::{ListenerOp, set_listener_ops};
pub(crate) use run::{ActionEnd, ServiceEnd};
pub(crate) use txn::Txn;

/// Where an action may be used (`core.register_action`'s second
/// argument), one bit each.
pub(crate) const HTTP_REQ: u8 = 1;
pub(crate) const HTTP_RES: u8 = 2;
pub(crate) const TCP_REQ: u8 = 4;
pub(crate) const TCP_RES: u8 = 8;

/// The position of a rule set's bit (`HTTP_REQ`...) among the four.
pub(crate) fn kind_index(kind: u8) -> usize {
    (kind.trailing_zeros() as usize).min(3)
}

/// A registered action.
pub(crate) struct ActionDef {
    f: Function,
    /// How many words after it a rule gives it.
    nargs: usize,
}

/// What the scripts registered.
#[derive(Default)]
pub(crate) struct Registered {
    /// By rule set (`HTTP_REQ`... as [`kind_index`] numbers them), then
    /// by name.
    actions: [HashMap<String, ActionDef>; 4],
    fetches: HashMap<String, Function>,
    convs: HashMap<String, Function>,
    /// Services and whether each is HTTP (`"http"`) or TCP.
    services: HashMap<String, (Function, bool)>,
    /// `core.register_cli`: each command's words, usage and function.
    clis: Vec<(Vec<String>, String, Function)>,
    inits: Vec<Function>,
    tasks: Vec<Function>,
}

/// A configuration's Lua state and what its scripts registered.
pub(crate) struct Host {
    lua: Lua,
    reg: Arc<Mutex<Registered>>,
    /// The prelude's TXN maker.
    new_txn: Function,
    /// The prelude's `run`: a registered function called under its
    /// traceback handler.
    run: Function,
    /// The prelude's AppletHTTP and AppletTCP makers.
    new_applet: Function,
    new_applet_tcp: Function,
    /// The prelude's maker of `core.proxies` and its friends.
    set_proxies: Function,
    /// The prelude's maker of a CLI command's applet.
    new_cli: Function,
    /// The primitives' table the prelude's objects call (`S`).
    prims: Table,
    /// The value `core.sleep` and friends yield first.
    sleep: Table,
    /// The value a script yields first to wait for I/O (`io.rs`).
    io: Table,
    /// Fetch and converter methods by the names Lua gives them (`req_hdr`
    /// for `req.hdr`).
    fetch_names: HashMap<String, &'static str>,
    conv_names: HashMap<String, &'static str>,
    /// A reload replaced these scripts: their tasks end.
    retired: std::sync::atomic::AtomicBool,
}

/// Makes `lua-load` work: called once at start, before a configuration
/// is read.
pub(crate) fn install() {
    crate::sample::script::set_loader(load);
}

/// The scripts whose init functions ran and whose tasks run.
static STARTED: Mutex<Option<Arc<dyn Scripts>>> = Mutex::new(None);

/// After a start or a reload: the running configuration's scripts run
/// their `core.register_init` functions, then their tasks start on the
/// calling runtime; the tasks of the scripts they replace end.
pub(crate) fn spawn(rt: &Arc<crate::snapshot::runtime::Runtime>) {
    proxies::set_runtime(rt);
    let current = crate::sample::script::active();
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    let same = match (&*started, &current) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    };
    if same {
        return;
    }
    if let Some(old) = started
        .as_ref()
        .and_then(|s| s.as_any().downcast_ref::<Host>())
    {
        old.retired
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    started.clone_from(&current);
    let Some(scripts) = current else {
        return;
    };
    let Some(host) = scripts.as_any().downcast_ref::<Host>() else {
        return;
    };
    if let Err(e) = proxies::describe(&host.lua, rt).and_then(|l| host.set_proxies.call::<()>(l)) {
        run::report(&format!("Lua: {}.", message(&e)));
    }
    host.run_inits();
    let tasks = host.registered().tasks.clone();
    for f in tasks {
        let scripts = scripts.clone();
        tokio::spawn(async move {
            if let Some(host) = scripts.as_any().downcast_ref::<Host>() {
                host.run_task(f).await;
            }
        });
    }
}

/// A command of the stats socket a script registered
/// (`core.register_cli`): its answer, or None when `words` name none.
pub(crate) fn run_cli(words: &[String]) -> Option<String> {
    let scripts = crate::sample::script::active()?;
    let host = scripts.as_any().downcast_ref::<Host>()?;
    host.run_cli(words)
}

fn load(prev: Option<&Arc<dyn Scripts>>, req: &LoadReq<'_>) -> Result<Arc<dyn Scripts>, String> {
    let scripts = match prev {
        Some(p) => p.clone(),
        None => Arc::new(Host::new(req).map_err(|e| format!("Lua: {e}"))?) as Arc<dyn Scripts>,
    };
    let Some(host) = scripts.as_any().downcast_ref::<Host>() else {
        return Err("Lua: unexpected script state".into());
    };
    host.load_file(req)?;
    Ok(scripts)
}

/// The text of a Lua error without mlua's decorations (HAProxy prints
/// Lua's own message).
pub(crate) fn message(e: &mlua::Error) -> String {
    match e {
        // Lua's message, without the traceback mlua appends to it.
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m
            .split("\nstack traceback:")
            .next()
            .unwrap_or(m)
            .to_string(),
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::MemoryError(m) => m.clone(),
        other => other.to_string(),
    }
}

impl Host {
    fn new(req: &LoadReq<'_>) -> mlua::Result<Host> {
        // SAFETY: HAProxy opens every standard library, `debug` included
        // (scripts written for it use it, and so does the prelude's
        // traceback); mlua's `Lua::new` leaves `debug` out only because its
        // functions can break the state's invariants from Lua code.
        let lua = unsafe { Lua::unsafe_new_with(mlua::StdLib::ALL, mlua::LuaOptions::default()) };
        if req.maxmem > 0 {
            lua.set_memory_limit(req.maxmem)?;
        }
        run::set_hook(&lua, req.forced_yield);
        let reg = Arc::new(Mutex::new(Registered::default()));
        core_api::install(&lua, &reg)?;
        let prims = lua.create_table()?;
        let sleep = lua.create_table()?;
        let io = lua.create_table()?;
        proxies::install(&lua, &prims)?;
        type Made = (Function, Function, Function, Function, Function, Function);
        let (new_txn, run, new_applet, new_applet_tcp, set_proxies, new_cli): Made = lua
            .load(include_str!("prelude.lua"))
            .set_name("=prelude")
            .call((prims.clone(), sleep.clone(), io.clone()))?;
        let mangle = |n: &'static str| (n.replace('.', "_"), n);
        Ok(Host {
            lua,
            reg,
            new_txn,
            run,
            new_applet,
            new_applet_tcp,
            set_proxies,
            new_cli,
            prims,
            sleep,
            io,
            fetch_names: crate::sample::fetch::all()
                .map(|f| mangle(f.name))
                .collect(),
            conv_names: crate::sample::conv::all().map(|c| mangle(c.name)).collect(),
            retired: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn load_file(&self, req: &LoadReq<'_>) -> Result<(), String> {
        let file = req.file;
        if !req.prepend.is_empty() {
            let package: Table = self
                .lua
                .globals()
                .get("package")
                .map_err(|e| format!("Lua runtime error: {}", message(&e)))?;
            for (path, cpath) in req.prepend {
                let key = if *cpath { "cpath" } else { "path" };
                let old: String = package.get(key).unwrap_or_default();
                let _ = package.set(key, format!("{path};{old}"));
            }
        }
        let text = std::fs::read(file).map_err(|e| {
            let why = e.to_string();
            let why = why.split(" (os error").next().unwrap_or(&why).to_string();
            format!("error in Lua file '{file}': cannot open {file}: {why}")
        })?;
        let chunk = self
            .lua
            .load(&text[..])
            .set_name(format!("@{file}"))
            .into_function()
            .map_err(|e| format!("error in Lua file '{file}': {}", message(&e)))?;
        let args: Vec<&str> = req.args.iter().map(String::as_str).collect();
        run::call_bounded(&self.lua, None, || {
            chunk.call::<()>(mlua::Variadic::from_iter(args.iter().copied()))
        })
        .map_err(|e| format!("Lua runtime error: {}", message(&e)))
    }

    fn registered(&self) -> std::sync::MutexGuard<'_, Registered> {
        self.reg.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Scripts for Host {
    fn has(&self, name: &str, conv: bool) -> bool {
        let r = self.registered();
        if conv {
            r.convs.contains_key(name)
        } else {
            r.fetches.contains_key(name)
        }
    }

    fn fetch(&self, name: &str, args: &[Arg], cx: &Ctx<'_>) -> Option<Sample<'static>> {
        let f = self.registered().fetches.get(name)?.clone();
        let mut t = txn::FetchTxn(*cx);
        let r = run::call_sync(self, &mut t, |host| {
            let txn: Table = host.new_txn.call(false)?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f));
            v.push(Value::Table(txn));
            for a in args {
                v.push(Value::String(host.lua.create_string(a.as_str())?));
            }
            host.run.call::<mlua::MultiValue>(v)
        });
        match r {
            Ok(v) => txn::to_sample(&v),
            Err(e) => {
                run::report(&format!("Lua sample-fetch '{name}': {e}."));
                None
            }
        }
    }

    fn convert(
        &self,
        name: &str,
        input: Sample<'_>,
        args: &[Arg],
        cx: &Ctx<'_>,
    ) -> Option<Sample<'static>> {
        let f = self.registered().convs.get(name)?.clone();
        let mut t = txn::FetchTxn(*cx);
        let r = run::call_sync(self, &mut t, |host| {
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f));
            v.push(txn::from_sample(&host.lua, &input)?);
            for a in args {
                v.push(Value::String(host.lua.create_string(a.as_str())?));
            }
            host.run.call::<mlua::MultiValue>(v)
        });
        match r {
            Ok(v) => txn::to_sample(&v),
            Err(e) => {
                run::report(&format!("Lua converter '{name}': {e}."));
                None
            }
        }
    }

    fn action_args(&self, name: &str, kind: &str) -> Option<usize> {
        let bit = match kind {
            "http-req" => HTTP_REQ,
            "http-res" => HTTP_RES,
            "tcp-req" => TCP_REQ,
            _ => TCP_RES,
        };
        let r = self.registered();
        r.actions[kind_index(bit)].get(name).map(|a| a.nargs)
    }

    fn has_service(&self, name: &str, http: bool) -> bool {
        self.registered()
            .services
            .get(name)
            .is_some_and(|(_, h)| *h == http)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
