//! Running a script's function: as a coroutine for actions, services
//! and tasks, resumed after each yield (`core.sleep`, `core.yield`, the
//! I/O of `io.rs`, a forced yield every `tune.lua.forced-yield`
//! instructions) so that the worker serves other connections meanwhile;
//! directly for fetches, converters and CLI commands, which cannot
//! yield. Either way a hook stops a function
//! whose Lua time passes its timeout, with HAProxy's "execution timeout".

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, MultiValue, Table, ThreadStatus, Value, VmState};

use super::Host;
use super::txn::{self, Flags, Txn};

thread_local! {
    /// When the function running on this thread has used its Lua time.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The error a function past its timeout stops with.
const TIMEOUT: &str = "execution timeout";

/// The hook every state and coroutine runs every `forced-yield`
/// instructions: past the deadline, an error; else a yield (ignored
/// where the function cannot yield).
fn hook(_: &Lua, _: mlua::Debug) -> mlua::Result<VmState> {
    match DEADLINE.with(Cell::get) {
        Some(d) if Instant::now() >= d => Err(mlua::Error::RuntimeError(TIMEOUT.into())),
        _ => Ok(VmState::Yield),
    }
}

pub(super) fn triggers(forced_yield: u32) -> HookTriggers {
    HookTriggers::new().every_nth_instruction(forced_yield.max(1))
}

pub(super) fn set_hook(lua: &Lua, forced_yield: u32) {
    lua.set_hook(triggers(forced_yield), hook);
}

/// Runs `f` with `timeout` of Lua time (None: unbounded).
pub(super) fn call_bounded<R>(
    _lua: &Lua,
    timeout: Option<Duration>,
    f: impl FnOnce() -> mlua::Result<R>,
) -> mlua::Result<R> {
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let before = DEADLINE.with(|d| d.replace(deadline));
    let r = f();
    DEADLINE.with(|d| d.set(before));
    r
}

/// Runs a fetch's or converter's function over `t` (`f` calls it through
/// the prelude's `run`), within the session timeout: its value, or
/// HAProxy's text of its error.
pub(super) fn call_sync(
    host: &Host,
    t: &mut dyn Txn,
    f: impl FnOnce(&Host) -> mlua::Result<MultiValue>,
) -> Result<Value, String> {
    call_sync_with(host, t, &Flags::default(), f)
}

/// [`call_sync`] leaving what the function did in `flags`.
pub(super) fn call_sync_with(
    host: &Host,
    t: &mut dyn Txn,
    flags: &Flags,
    f: impl FnOnce(&Host) -> mlua::Result<MultiValue>,
) -> Result<Value, String> {
    let timeout = crate::sample::script::tune().session_timeout;
    let cell: RefCell<&mut dyn Txn> = RefCell::new(t);
    // A fetch a script calls from a script (`txn.f:lua_x()`) runs inside
    // the caller's resume: the caller's primitives come back after it.
    let saved: Vec<(Value, Value)> = host.prims.pairs().flatten().collect();
    let r = call_bounded(&host.lua, Some(timeout), || {
        host.lua.scope(|scope| {
            txn::install(scope, host, &cell, flags)?;
            f(host)
        })
    });
    for (k, v) in saved {
        let _ = host.prims.raw_set(k, v);
    }
    match r {
        Ok(vals) => ran(vals).map(|mut v| v.pop_front().unwrap_or(Value::Nil)),
        Err(e) => Err(format!(
            "[state-id 0] runtime error: {}",
            super::message(&e)
        )),
    }
}

/// What the prelude's `run` gave: the function's results, or HAProxy's
/// text of its error, `[state-id 0] runtime error: <error> from <frames>`.
fn ran(mut vals: MultiValue) -> Result<MultiValue, String> {
    match vals.pop_front() {
        Some(Value::Boolean(true)) => Ok(vals),
        _ => {
            let (err, trace) = match vals.pop_front() {
                Some(Value::Table(t)) => (
                    t.get::<Value>(1).unwrap_or(Value::Nil),
                    t.get::<String>(2).unwrap_or_default(),
                ),
                _ => (Value::Nil, String::new()),
            };
            let msg = match &err {
                Value::String(s) => s.to_string_lossy(),
                Value::Error(e) => super::message(e),
                Value::Nil => "unknown error".into(),
                other => other.to_string().unwrap_or_default(),
            };
            Err(format!("[state-id 0] runtime error: {msg} from {trace}"))
        }
    }
}

/// How an action ended, as HAProxy's `act.*` codes say (an error and
/// `act.ERROR` alike are `Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActionEnd {
    Continue,
    Stop,
    Done,
    Deny,
    Abort,
    Invalid,
    Error,
    /// `txn:done()`: the transaction ends there.
    Closed,
    /// The function failed (a Lua error, its timeout): reported, and
    /// the rules go on, as in HAProxy.
    Failed,
}

impl ActionEnd {
    fn of(code: Option<i64>) -> ActionEnd {
        match code {
            Some(1) => ActionEnd::Stop,
            Some(3) => ActionEnd::Error,
            Some(4) => ActionEnd::Done,
            Some(5) => ActionEnd::Deny,
            Some(6) => ActionEnd::Abort,
            Some(7) => ActionEnd::Invalid,
            _ => ActionEnd::Continue,
        }
    }
}

/// An error of a script's function, reported as HAProxy reports it
/// (stderr, HAProxy's alert form).
pub(crate) fn report(msg: &str) {
    eprintln!("[ALERT]    ({}) : {msg}", std::process::id());
}

/// [`report`], and to the log targets of the proxy of `t` at level err,
/// as HAProxy sends its Lua errors.
fn report_in(t: &(impl Txn + ?Sized), msg: &str) {
    report(msg);
    if let Some(setup) = t.log_to() {
        setup.send(
            crate::config::log::ERR,
            &crate::observe::log::time::Date::now(),
            msg,
        );
    }
}

/// How a coroutine's run ended.
enum Driven {
    /// The function returned these values.
    Returned(MultiValue),
    /// `txn:done()`.
    Done,
    /// It failed; reported.
    Failed,
}

/// What an HTTP service gives its engine.
pub(crate) enum ServiceEnd {
    /// The response it composed.
    Reply(txn::Reply),
    /// It failed or sent nothing: HAProxy's 500.
    Failed,
}

impl Host {
    /// Runs `f` as a coroutine over `t` until it ends: its first
    /// arguments from `first`, its sleeps, yields and I/O (`sockets`: its
    /// sockets, a TCP service's client) waited for on the worker's
    /// runtime, `timeout` of Lua time. `what` names it in the errors
    /// reported.
    async fn drive<T: Txn + Send>(
        &self,
        f: Function,
        first: impl Fn(&Host, &Function) -> mlua::Result<mlua::Variadic<Value>>,
        t: &mut T,
        timeout: Option<Duration>,
        what: &str,
        sockets: &mut super::io::Io<'_>,
    ) -> (Driven, Flags) {
        let flags = Flags::default();
        let thread = match self.lua.create_thread(self.run.clone()) {
            Ok(th) => th,
            Err(e) => {
                report_in(&*t, &format!("{what}: {}.", super::message(&e)));
                return (Driven::Failed, flags);
            }
        };
        let tune = crate::sample::script::tune();
        thread.set_hook(triggers(tune.forced_yield), hook);
        let mut spent = Duration::ZERO;
        let mut started = false;
        // The results of the I/O the coroutine waited for (performed with
        // `sockets`, its own), handed to it at the next resume.
        let mut io_done: Option<Vec<super::io::Out>> = None;
        loop {
            let start = Instant::now();
            let r = {
                let cell: RefCell<&mut dyn Txn> = RefCell::new(&mut *t);
                let left = timeout.map(|t| t.saturating_sub(spent));
                call_bounded(&self.lua, left, || {
                    self.lua.scope(|scope| {
                        txn::install(scope, self, &cell, &flags)?;
                        if let Some(outs) = io_done.take() {
                            thread.resume::<MultiValue>(super::io::to_lua(&self.lua, outs)?)
                        } else if started {
                            thread.resume::<MultiValue>(())
                        } else {
                            thread.resume::<MultiValue>(first(self, &f)?)
                        }
                    })
                })
            };
            spent += start.elapsed();
            started = true;
            let vals = match r {
                Ok(v) => v,
                Err(e) => {
                    report_in(
                        &*t,
                        &format!(
                            "{what}: [state-id 0] runtime error: {}.",
                            super::message(&e)
                        ),
                    );
                    return (Driven::Failed, flags);
                }
            };
            if flags.done.get() {
                return (Driven::Done, flags);
            }
            if thread.status() != ThreadStatus::Resumable {
                return match ran(vals) {
                    Ok(v) => (Driven::Returned(v), flags),
                    Err(e) => {
                        report_in(&*t, &format!("{what}: {e}."));
                        (Driven::Failed, flags)
                    }
                };
            }
            // A task of scripts a reload replaced ends at its next yield.
            if self.retired.load(std::sync::atomic::Ordering::Relaxed) {
                return (Driven::Done, flags);
            }
            if matches!(vals.front(), Some(Value::Table(m)) if *m == self.io) {
                let outs = match super::io::ask(&vals) {
                    Ok(ask) => sockets.perform(ask).await,
                    Err(e) => Err(e),
                };
                io_done = Some(outs.unwrap_or_else(|e| {
                    vec![super::io::Out::Nil, super::io::Out::Str(e.into_bytes())]
                }));
                continue;
            }
            let ms = match (vals.front(), vals.get(1)) {
                (Some(Value::Table(m)), Some(ms)) if *m == self.sleep => ms.as_i64().unwrap_or(0),
                _ => 0,
            };
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            } else {
                tokio::task::yield_now().await;
            }
        }
    }

    /// Runs the action `name` with its rule's arguments over `t`, until it
    /// ends: its sleeps and yields wait on the worker's runtime.
    pub(crate) async fn run_action<T: Txn + Send>(
        &self,
        name: &str,
        args: &[String],
        kind: u8,
        t: &mut T,
    ) -> ActionEnd {
        let http = kind & (super::HTTP_REQ | super::HTTP_RES) != 0;
        let Some(f) = self.registered().actions[super::kind_index(kind)]
            .get(name)
            .map(|a| a.f.clone())
        else {
            return ActionEnd::Continue;
        };
        let what = format!("Lua function '{name}'");
        let chans = kind == super::TCP_RES;
        let first = |host: &Host, f: &Function| {
            let txn: Table = host.new_txn.call((http, chans))?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f.clone()));
            v.push(Value::Table(txn));
            for a in args {
                v.push(Value::String(host.lua.create_string(a)?));
            }
            Ok(v)
        };
        let timeout = crate::sample::script::tune().session_timeout;
        let (driven, flags) = self
            .drive(f, first, t, Some(timeout), &what, &mut Default::default())
            .await;
        match driven {
            Driven::Returned(v) => ActionEnd::of(v.front().and_then(Value::as_i64)),
            Driven::Done => {
                if flags.replied.get() {
                    t.set_reply(flags.reply.into_inner());
                }
                ActionEnd::Closed
            }
            Driven::Failed => ActionEnd::Failed,
        }
    }

    /// Runs the HTTP service `name` over `t`: the response it composed,
    /// once it ended.
    pub(crate) async fn run_service<T: Txn + Send>(&self, name: &str, t: &mut T) -> ServiceEnd {
        let Some(f) = self.registered().services.get(name).map(|s| s.0.clone()) else {
            return ServiceEnd::Failed;
        };
        let what = format!("Lua applet http '<lua.{name}>'");
        let first = |host: &Host, f: &Function| {
            let applet: Table = host.new_applet.call(())?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f.clone()));
            v.push(Value::Table(applet));
            Ok(v)
        };
        let timeout = crate::sample::script::tune().service_timeout;
        let (end, flags) = self
            .drive(f, first, t, Some(timeout), &what, &mut Default::default())
            .await;
        let reply = flags.reply.into_inner();
        match end {
            Driven::Failed => ServiceEnd::Failed,
            _ if !reply.started => ServiceEnd::Failed,
            _ => ServiceEnd::Reply(reply),
        }
    }
}

impl Host {
    /// Runs the TCP service `name` over `t` and the client connection
    /// `io.applet` until it ends: false when it failed (reported).
    pub(crate) async fn run_tcp_service<T: Txn + Send>(
        &self,
        name: &str,
        t: &mut T,
        io: &mut super::io::Io<'_>,
    ) -> bool {
        let Some(f) = self.registered().services.get(name).map(|s| s.0.clone()) else {
            return false;
        };
        let what = format!("Lua applet tcp '<lua.{name}>'");
        let first = |host: &Host, f: &Function| {
            let applet: Table = host.new_applet_tcp.call(())?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f.clone()));
            v.push(Value::Table(applet));
            Ok(v)
        };
        let timeout = crate::sample::script::tune().service_timeout;
        let (end, _) = self.drive(f, first, t, Some(timeout), &what, io).await;
        !matches!(end, Driven::Failed)
    }

    /// Runs a `core.register_task` function until it returns, fails, or
    /// a reload replaces these scripts (`tune.lua.task-timeout` of Lua
    /// time, unbounded by default).
    pub(crate) async fn run_task(&self, f: Function) {
        let first = |_: &Host, f: &Function| {
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f.clone()));
            Ok(v)
        };
        let timeout = crate::sample::script::tune().task_timeout;
        let mut t = txn::NoTxn;
        self.drive(
            f,
            first,
            &mut t,
            timeout,
            "Lua task",
            &mut Default::default(),
        )
        .await;
    }

    /// A command of the stats socket the scripts registered: what its
    /// function sent, once it returned (it cannot yield); None when
    /// `words` name none (the longest path that starts them wins).
    pub(crate) fn run_cli(&self, words: &[String]) -> Option<String> {
        let (path, f) = self
            .registered()
            .clis
            .iter()
            .filter(|(p, _, _)| words.len() >= p.len() && p.iter().zip(words).all(|(a, b)| a == b))
            .max_by_key(|(p, _, _)| p.len())
            .map(|(p, _, f)| (p.join("."), f.clone()))?;
        let mut t = txn::NoTxn;
        let flags = Flags::default();
        let r = call_sync_with(self, &mut t, &flags, |host| {
            let applet: Table = host.new_cli.call(())?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f));
            v.push(Value::Table(applet));
            for w in words {
                v.push(Value::String(host.lua.create_string(w)?));
            }
            host.run.call::<MultiValue>(v)
        });
        if let Err(e) = r {
            report(&format!("Lua cli '<lua.cli.{path}>': {e}."));
            return Some(String::new());
        }
        let body = std::mem::take(&mut flags.reply.borrow_mut().body);
        Some(String::from_utf8_lossy(&body).into_owned())
    }

    /// Runs the `core.register_init` functions, in order.
    pub(crate) fn run_inits(&self) {
        let inits = self.registered().inits.clone();
        for f in inits {
            let mut t = txn::NoTxn;
            let r = call_sync(self, &mut t, |host| host.run.call::<MultiValue>(f.clone()));
            if let Err(e) = r {
                report(&format!("Lua init: {e}."));
            }
        }
    }
}

impl Host {
    /// Runs the action `name` over `t` without yielding (where its engine
    /// cannot wait): a yield fails it.
    pub(crate) fn run_action_now(
        &self,
        name: &str,
        args: &[String],
        kind: u8,
        t: &mut dyn Txn,
    ) -> ActionEnd {
        let Some(f) = self.registered().actions[super::kind_index(kind)]
            .get(name)
            .map(|a| a.f.clone())
        else {
            return ActionEnd::Continue;
        };
        // As before for the request's rules; a TCP response rule's has
        // the channels instead (what HAProxy gives in `mode tcp`).
        let chans = kind == super::TCP_RES;
        let http = !chans;
        let r = call_sync(self, t, |host| {
            let txn: Table = host.new_txn.call((http, chans))?;
            let mut v = mlua::Variadic::new();
            v.push(Value::Function(f));
            v.push(Value::Table(txn));
            for a in args {
                v.push(Value::String(host.lua.create_string(a)?));
            }
            host.run.call::<MultiValue>(v)
        });
        match r {
            Ok(v) => ActionEnd::of(v.as_i64()),
            // Where nothing may wait (no `tcp-request inspect-delay`), a
            // yield is HAProxy's expired timeout.
            Err(e) if e.contains("attempt to yield") => {
                report_in(
                    t,
                    &format!("Lua function '{name}': aborting Lua processing on expired timeout."),
                );
                ActionEnd::Failed
            }
            Err(e) => {
                report_in(t, &format!("Lua function '{name}': {e}."));
                ActionEnd::Failed
            }
        }
    }
}
