//! What a script's TXN object reaches: the [`Txn`] an engine hands a
//! running action (the message's head and its edits, the request's
//! samples), and the primitives `prelude.lua`'s objects call, made for
//! the time of one resume of the script ([`install`]: scoped functions,
//! which fail if a script kept one and called it later).

use std::cell::{Cell, RefCell};

use mlua::{FromLuaMulti, IntoLuaMulti, Lua, MultiValue, Value, Variadic};

use crate::sample::Ctx;
use crate::sample::expr::Expr;
use crate::sample::value::Sample;
use crate::sample::vars::{Conds, VarName};

use super::Host;

/// The transaction a script works on, as its engine shows it.
pub(crate) trait Txn {
    /// What the fetches read.
    fn sample(&self) -> Ctx<'_>;
    /// The request's (`res` false) or response's header fields as they
    /// are now, rules' edits included: (lower-case name, value).
    fn headers(&self, _res: bool) -> Vec<(String, Vec<u8>)> {
        Vec::new()
    }
    fn add_header(&mut self, _res: bool, _name: &str, _value: &[u8]) {}
    fn del_header(&mut self, _res: bool, _name: &str) {}
    /// `replace-header` (`value` false) or `replace-value`.
    fn rep_header(
        &mut self,
        _res: bool,
        _name: &str,
        _re: &regex::bytes::Regex,
        _with: &[u8],
        _value: bool,
    ) {
    }
    /// `method`, `path`, `query` or `uri`.
    fn set_target(&mut self, _part: &str, _value: &[u8]) {}
    fn set_status(&mut self, _code: u16, _reason: Option<&[u8]>) {}
    /// The request's method, path, query string and version
    /// (`HTTP/1.1`), for an HTTP service's applet.
    fn request_line(&self) -> [Vec<u8>; 4] {
        Default::default()
    }
    fn set_loglevel(&mut self, _level: u8) {}
    /// An HTTP service's request body: `n` bytes (all that is left for
    /// None), or a line with its LF (`line`); "" past its end.
    fn read_body(&mut self, _n: Option<usize>, _line: bool) -> Vec<u8> {
        Vec::new()
    }
    /// The length of that body.
    fn body_len(&self) -> usize {
        0
    }
    /// The log targets of the proxy whose rule runs the script, where
    /// HAProxy sends its errors too.
    fn log_to(&self) -> Option<&crate::snapshot::log_setup::LogSetup> {
        None
    }
    /// `txn:done(reply)`: the answer the transaction ends with.
    fn set_reply(&mut self, _reply: Reply) {}
    /// `txn:set_tos()`, `txn:set_mark()`: for the client connection, once
    /// the action ended.
    fn set_sock_mark(&mut self, _marks: crate::sys::sockmarks::SockMarks) {}
    /// The request's (`res` false) or response's channel, where a TCP
    /// rule's script may read and edit it.
    fn channel(&mut self, _res: bool) -> Option<&mut Chan> {
        None
    }
}

/// HAProxy's buffer size and the room it keeps for rewrites: a channel
/// holds at most their difference of incoming bytes for a script.
const BUFSIZE: usize = 16384;
const MAXREWRITE: usize = 1024;

/// The incoming bytes of a channel, as a script's Channel object reads
/// and edits them (the server's bytes a `tcp-response content` rule
/// holds); none of them forwarded yet (HAProxy's output part is empty).
#[derive(Debug, Default)]
pub(crate) struct Chan {
    pub(crate) data: Vec<u8>,
    /// Whether more bytes may come (the peer has not closed).
    pub(crate) may_recv: bool,
    /// Whether a script changed `data`.
    pub(crate) edited: bool,
}

impl Chan {
    /// The bytes `[offset, offset + length)` of the incoming data as
    /// HAProxy's Channel functions take them: a negative offset counts
    /// from the end, no length means up to the end, -1 as much as there
    /// is. Lua's errors for the values out of range.
    fn range(&self, offset: Option<i64>, length: Option<i64>) -> mlua::Result<(usize, usize)> {
        let input = self.data.len() as i64;
        let mut off = offset.unwrap_or(0);
        if off < 0 {
            off = (input + off).max(0);
        }
        if off > input {
            return Err(rt("offset out of range.".into()));
        }
        let len = match length {
            None | Some(-1) => input - off,
            Some(l) if l < 0 => return Err(rt("length out of range.".into())),
            Some(l) => l.min(input - off),
        };
        Ok((off as usize, (off + len) as usize))
    }

    /// Replaces the bytes `from..to` with `with`: its length, or -1 when
    /// the buffer has no room for it.
    fn splice(&mut self, (from, to): (usize, usize), with: &[u8]) -> i64 {
        if self.data.len() - (to - from) + with.len() > BUFSIZE - MAXREWRITE {
            return -1;
        }
        self.data.splice(from..to, with.iter().copied());
        self.edited = true;
        with.len() as i64
    }

    /// The first line of `from..to`, its LF included (all of it when it
    /// has none).
    fn line(&self, (from, to): (usize, usize)) -> (usize, usize) {
        let end = self.data[from..to]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(to, |i| from + i + 1);
        (from, end)
    }
}

/// A task's or an init function's transaction: no request; `proc`
/// variables only.
pub(crate) struct NoTxn;

impl Txn for NoTxn {
    fn sample(&self) -> Ctx<'_> {
        Ctx::default()
    }
}

/// A fetch's or converter's transaction: samples only.
pub(crate) struct FetchTxn<'a>(pub(crate) Ctx<'a>);

impl Txn for FetchTxn<'_> {
    fn sample(&self) -> Ctx<'_> {
        self.0
    }
}

/// A TCP rule's or service's transaction: the connection's samples, and
/// its proxy's log targets.
pub(crate) struct ConnTxn<'a> {
    pub(crate) cx: Ctx<'a>,
    pub(crate) log: Option<&'a crate::snapshot::log_setup::LogSetup>,
}

impl Txn for ConnTxn<'_> {
    fn sample(&self) -> Ctx<'_> {
        self.cx
    }

    fn log_to(&self) -> Option<&crate::snapshot::log_setup::LogSetup> {
        self.log
    }
}

/// A Lua value as a sample: strings, integers, booleans (nil: none).
pub(crate) fn to_sample(v: &Value) -> Option<Sample<'static>> {
    match v {
        Value::String(s) => Some(Sample::Str(s.as_bytes().to_vec().into())),
        Value::Integer(n) => Some(Sample::Sint(*n)),
        Value::Number(f) => Some(Sample::Sint(*f as i64)),
        Value::Boolean(b) => Some(Sample::Bool(*b)),
        _ => None,
    }
}

/// A sample as a Lua value (addresses as their text).
pub(crate) fn from_sample(lua: &Lua, s: &Sample<'_>) -> mlua::Result<Value> {
    Ok(match s {
        Sample::Bool(b) => Value::Boolean(*b),
        Sample::Sint(n) => Value::Integer(*n),
        Sample::Ipv4(a) => Value::String(lua.create_string(a.to_string())?),
        Sample::Ipv6(a) => Value::String(lua.create_string(a.to_string())?),
        Sample::Str(b) | Sample::Bin(b) | Sample::Meth(b) => Value::String(lua.create_string(b)?),
    })
}

/// A Lua argument as it goes between a keyword's parentheses.
fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string_lossy(),
        Value::Integer(n) => n.to_string(),
        Value::Number(f) => (*f as i64).to_string(),
        Value::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

fn args_text(args: &[Value]) -> String {
    args.iter().map(arg_text).collect::<Vec<_>>().join(",")
}

/// What a run of a script leaves for its engine.
#[derive(Default)]
pub(crate) struct Flags {
    /// `txn:done()`.
    pub(crate) done: Cell<bool>,
    /// `txn:done(reply)`: `reply` holds the answer.
    pub(crate) replied: Cell<bool>,
    /// An HTTP service's response.
    pub(crate) reply: RefCell<Reply>,
}

/// The response an HTTP service composes.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    /// `applet:set_status()` (200 unless set).
    pub(crate) status: Option<u16>,
    pub(crate) reason: Option<Vec<u8>>,
    /// `applet:add_header()`, in order.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    /// `applet:start_response()` was called.
    pub(crate) started: bool,
    /// What `applet:send()` gave.
    pub(crate) body: Vec<u8>,
}

/// The answer a `txn:reply()` object holds: its status and reason, its
/// header fields (names in lower case, HAProxy's order being its Lua
/// table's) with the `content-length` of its body after them.
fn reply_of(t: &mlua::Table) -> mlua::Result<Reply> {
    let status: Option<i64> = t.get("status")?;
    let reason: Option<mlua::String> = t.get("reason")?;
    let body: Option<mlua::String> = t.get("body")?;
    let body = body.map(|b| b.as_bytes().to_vec()).unwrap_or_default();
    let mut headers = Vec::new();
    let fields: Option<mlua::Table> = t.get("headers")?;
    if let Some(fields) = fields {
        for pair in fields.pairs::<mlua::String, mlua::Table>() {
            let (name, values) = pair?;
            let name = String::from_utf8_lossy(&name.as_bytes()).to_ascii_lowercase();
            for v in values.sequence_values::<mlua::String>() {
                headers.push((name.clone(), v?.as_bytes().to_vec()));
            }
        }
    }
    headers.push((
        "content-length".to_string(),
        body.len().to_string().into_bytes(),
    ));
    Ok(Reply {
        status: Some(status.unwrap_or(200).clamp(0, 999) as u16),
        reason: reason.map(|r| r.as_bytes().to_vec()),
        headers,
        started: true,
        body,
    })
}

fn rt(msg: String) -> mlua::Error {
    mlua::Error::RuntimeError(msg)
}

/// A `tcp-response content` rule's transaction: the connection's
/// samples, its proxy's log targets, and the server's bytes held, which
/// the script reads and edits through `txn.res`.
pub(crate) struct ResTxn<'a> {
    pub(crate) conn: ConnTxn<'a>,
    pub(crate) res: Chan,
}

impl Txn for ResTxn<'_> {
    fn sample(&self) -> Ctx<'_> {
        self.conn.cx
    }

    fn log_to(&self) -> Option<&crate::snapshot::log_setup::LogSetup> {
        self.conn.log
    }

    fn channel(&mut self, res: bool) -> Option<&mut Chan> {
        res.then_some(&mut self.res)
    }
}

/// A Channel function `op` over `chan` (None: a channel the script may
/// not read, whose functions find nothing), its arguments `a`, `b`, `c`.
fn channel_op(
    lua: &Lua,
    chan: Option<&mut Chan>,
    op: &[u8],
    (a, b, c): (Value, Value, Value),
) -> mlua::Result<Value> {
    let int = |v: &Value| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64));
    let Some(chan) = chan else {
        return Ok(match op {
            b"input" | b"output" => Value::Integer(0),
            b"full" | b"may_recv" => Value::Boolean(false),
            _ => Value::Nil,
        });
    };
    // Nothing held and nothing more to come: nil, as in HAProxy.
    let none = chan.data.is_empty() && !chan.may_recv;
    let text = |v: &Value| -> mlua::Result<Vec<u8>> {
        match v {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(_) | Value::Number(_) => Ok(arg_text(v).into_bytes()),
            _ => Err(rt("bad argument: string expected".into())),
        }
    };
    Ok(match op {
        b"input" => Value::Integer(chan.data.len() as i64),
        b"output" => Value::Integer(0),
        b"full" => Value::Boolean(chan.data.len() + MAXREWRITE >= BUFSIZE),
        b"may_recv" => Value::Boolean(chan.may_recv),
        _ if none && matches!(op, b"dup" | b"get" | b"getline" | b"data" | b"line") => Value::Nil,
        b"dup" => Value::String(lua.create_string(&chan.data)?),
        b"get" => {
            let all = std::mem::take(&mut chan.data);
            chan.edited |= !all.is_empty();
            Value::String(lua.create_string(&all)?)
        }
        b"getline" => {
            let (from, to) = chan.line((0, chan.data.len()));
            let line: Vec<u8> = chan.data.drain(from..to).collect();
            chan.edited |= !line.is_empty();
            Value::String(lua.create_string(&line)?)
        }
        b"data" => {
            let (from, to) = chan.range(int(&a), int(&b))?;
            Value::String(lua.create_string(&chan.data[from..to])?)
        }
        b"line" => {
            let (from, to) = chan.line(chan.range(int(&a), int(&b))?);
            Value::String(lua.create_string(&chan.data[from..to])?)
        }
        b"set" => {
            let with = text(&a)?;
            let r = chan.range(int(&b), int(&c))?;
            Value::Integer(chan.splice(r, &with))
        }
        b"insert" => {
            let with = text(&a)?;
            let (at, _) = chan.range(int(&b), Some(0))?;
            Value::Integer(chan.splice((at, at), &with))
        }
        // HAProxy 2.6's `append` copies its string in front of the
        // incoming data, as `prepend` does (not at their end, as its
        // documentation says): its behaviour is what scripts met.
        b"append" => {
            let with = text(&a)?;
            Value::Integer(chan.splice((0, 0), &with))
        }
        b"remove" => {
            let (from, to) = chan.range(int(&a), int(&b))?;
            chan.data.drain(from..to);
            chan.edited |= to > from;
            Value::Integer((to - from) as i64)
        }
        other => {
            return Err(rt(format!(
                "unknown channel function '{}'",
                String::from_utf8_lossy(other)
            )));
        }
    })
}

/// Sets `S.call`, the primitives over `t`, for one resume; the scope
/// ends it. One scoped function rather than one per primitive: each is
/// made again at every resume.
pub(super) fn install<'s, 'e: 's>(
    scope: &'s mlua::Scope<'s, 'e>,
    host: &'e Host,
    t: &'e RefCell<&'e mut dyn Txn>,
    flags: &'e Flags,
) -> mlua::Result<()> {
    host.prims.raw_set(
        "call",
        scope.create_function(move |lua, (op, args): (mlua::String, MultiValue)| {
            dispatch(lua, host, t, flags, &op.as_bytes(), args)
        })?,
    )?;
    Ok(())
}

/// The primitive `op` with its arguments. Each arm's body is a closure
/// called at once: its `?` and early `return`s give the primitive's own
/// value, which the arm then turns into Lua values.
#[allow(clippy::redundant_closure_call)]
fn dispatch(
    lua: &Lua,
    host: &Host,
    t: &RefCell<&mut dyn Txn>,
    flags: &Flags,
    op: &[u8],
    args: MultiValue,
) -> mlua::Result<MultiValue> {
    match op {
        b"fetch" => {
            let (k, strings, args): (String, bool, Variadic<Value>) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let Some(name) = host.fetch_names.get(&k).copied() else {
                    return Err(rt(format!("unknown sample fetch '{k}'")));
                };
                let text = if args.is_empty() {
                    name.to_string()
                } else {
                    format!("{name}({})", args_text(&args))
                };
                let expr = match Expr::parse(&text) {
                    Ok((e, n)) if n == text.len() => e,
                    Ok(_) => return Err(rt(format!("invalid arguments to '{k}'"))),
                    Err(e) => return Err(rt(e.to_string())),
                };
                let t = t.borrow();
                let cx = t.sample();
                match expr.eval(&cx) {
                    Some(v) if strings => match v.cast(crate::sample::value::SmpType::Str) {
                        Some(v) => from_sample(lua, &v),
                        None => Ok(Value::String(lua.create_string("")?)),
                    },
                    Some(v) => from_sample(lua, &v),
                    None if strings => Ok(Value::String(lua.create_string("")?)),
                    None => Ok(Value::Nil),
                }
            })();
            r?.into_lua_multi(lua)
        }
        b"convert" => {
            let (k, strings, input, args): (String, bool, Value, Variadic<Value>) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let Some(name) = host.conv_names.get(&k).copied() else {
                    return Err(rt(format!("unknown converter '{k}'")));
                };
                let Some(input) = to_sample(&input) else {
                    return Ok(Value::Nil);
                };
                let t = t.borrow();
                let cx = t.sample();
                let out = crate::sample::script::convert_named(name, input, &args_text(&args), &cx)
                    .map_err(rt)?;
                match out {
                    Some(v) if strings => match v.cast(crate::sample::value::SmpType::Str) {
                        Some(v) => from_sample(lua, &v),
                        None => Ok(Value::String(lua.create_string("")?)),
                    },
                    Some(v) => from_sample(lua, &v),
                    None if strings => Ok(Value::String(lua.create_string("")?)),
                    None => Ok(Value::Nil),
                }
            })();
            r?.into_lua_multi(lua)
        }
        b"headers" => {
            let res: bool = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let list = lua.create_table()?;
                for (n, v) in t.borrow().headers(res) {
                    let pair = lua.create_table()?;
                    pair.push(n)?;
                    pair.push(lua.create_string(v)?)?;
                    list.push(pair)?;
                }
                Ok(list)
            })();
            r?.into_lua_multi(lua)
        }
        b"add_header" => {
            let (res, n, v): (bool, String, mlua::String) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                t.borrow_mut().add_header(res, &n, &v.as_bytes());
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"del_header" => {
            let (res, n): (bool, String) = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                t.borrow_mut().del_header(res, &n);
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"rep_header" => {
            let (res, n, re, with, value): (bool, String, String, mlua::String, bool) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let re = regex::bytes::Regex::new(&re).map_err(|e| rt(e.to_string()))?;
                t.borrow_mut()
                    .rep_header(res, &n, &re, &with.as_bytes(), value);
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"set_target" => {
            let (part, v): (String, mlua::String) = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                t.borrow_mut().set_target(&part, &v.as_bytes());
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"set_status" => {
            let (code, reason): (i64, Option<mlua::String>) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let reason = reason.map(|r| r.as_bytes().to_vec());
                t.borrow_mut()
                    .set_status(code.clamp(0, 999) as u16, reason.as_deref());
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"get_var" => {
            let name: String = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let Ok(v) = VarName::parse(&name) else {
                    return Ok(Value::Nil);
                };
                let t = t.borrow();
                let got = match t.sample().vars {
                    Some(vars) => vars.get(&v),
                    None => crate::sample::vars::get_outside(&v),
                };
                match got {
                    Some(s) => from_sample(lua, &s),
                    None => Ok(Value::Nil),
                }
            })();
            r?.into_lua_multi(lua)
        }
        b"set_var" => {
            let (name, value, ifexist): (String, Value, Option<bool>) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let v = VarName::parse(&name).map_err(rt)?;
                let Some(smp) = to_sample(&value) else {
                    return Ok(());
                };
                // HAProxy's `ifexist` sets only a name its configuration
                // uses somewhere (not one with a value already, as the
                // rules' `ifexists`); a script's names are those the
                // configuration reads, so it is set either way.
                let _ = ifexist;
                let conds = Conds::default();
                let t = t.borrow();
                match t.sample().vars {
                    Some(vars) => {
                        vars.set(&v, &smp, conds);
                    }
                    None => {
                        crate::sample::vars::set_proc(&v.name, &smp, conds);
                    }
                }
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"unset_var" => {
            let name: String = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let v = VarName::parse(&name).map_err(rt)?;
                if let Some(vars) = t.borrow().sample().vars {
                    vars.unset(&v);
                }
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"request" => {
            let (): () = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let [m, p, q, v] = t.borrow().request_line();
                // A chunked body's length is what came of it, as HAProxy
                // knows it once the body is in its buffer.
                let length = t
                    .borrow()
                    .headers(false)
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .and_then(|(_, v)| std::str::from_utf8(v).ok()?.trim().parse::<i64>().ok())
                    .unwrap_or_else(|| t.borrow().body_len() as i64);
                Ok((
                    lua.create_string(m)?,
                    lua.create_string(p)?,
                    lua.create_string(q)?,
                    lua.create_string(v)?,
                    length,
                ))
            })();
            r?.into_lua_multi(lua)
        }
        b"svc_status" => {
            let (code, reason): (i64, Option<mlua::String>) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let mut r = flags.reply.borrow_mut();
                r.status = Some(code.clamp(0, 999) as u16);
                r.reason = reason.map(|s| s.as_bytes().to_vec());
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"svc_header" => {
            let (n, v): (String, mlua::String) = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let mut r = flags.reply.borrow_mut();
                r.headers
                    .push((n.to_ascii_lowercase(), v.as_bytes().to_vec()));
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"svc_start" => {
            let (): () = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                flags.reply.borrow_mut().started = true;
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"svc_send" => {
            let d: mlua::String = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                let mut r = flags.reply.borrow_mut();
                // HAProxy starts the response at the first send.
                r.started = true;
                r.body.extend_from_slice(&d.as_bytes());
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"svc_receive" => {
            let n: Option<i64> = FromLuaMulti::from_lua_multi(args, lua)?;
            let n = n.filter(|&n| n > 0).map(|n| n as usize);
            let r: mlua::Result<_> = (|| lua.create_string(t.borrow_mut().read_body(n, false)))();
            r?.into_lua_multi(lua)
        }
        b"svc_getline" => {
            let (): () = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| lua.create_string(t.borrow_mut().read_body(None, true)))();
            r?.into_lua_multi(lua)
        }
        b"done" => {
            let reply: Option<mlua::Table> = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                if let Some(reply) = reply {
                    *flags.reply.borrow_mut() = reply_of(&reply)?;
                    flags.replied.set(true);
                }
                flags.done.set(true);
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"priority" => {
            // `set-priority-class` (false) or `-offset`, bounded as theirs.
            let (offset, n): (bool, i64) = FromLuaMulti::from_lua_multi(args, lua)?;
            if let Some(vars) = t.borrow().sample().vars {
                match offset {
                    false => vars.tune.set_class(n),
                    true => vars.tune.set_offset(n),
                }
            }
            ().into_lua_multi(lua)
        }
        b"sockmark" => {
            // `set-tos` (false) or `set-mark` on the client connection.
            let (mark, v): (bool, i64) = FromLuaMulti::from_lua_multi(args, lua)?;
            let v = v.clamp(0, u32::MAX as i64) as u32;
            t.borrow_mut().set_sock_mark(match mark {
                false => crate::sys::sockmarks::SockMarks {
                    tos: Some(v),
                    mark: None,
                },
                true => crate::sys::sockmarks::SockMarks {
                    tos: None,
                    mark: Some(v),
                },
            });
            ().into_lua_multi(lua)
        }
        b"reason" => {
            let code: i64 = FromLuaMulti::from_lua_multi(args, lua)?;
            let reason = crate::wire::error_pages::http_reason(code.clamp(0, 999) as u16);
            lua.create_string(reason)?.into_lua_multi(lua)
        }
        b"set_loglevel" => {
            let level: i64 = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                t.borrow_mut().set_loglevel(level.clamp(0, 7) as u8);
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"log" => {
            let (level, msg): (i64, String) = FromLuaMulti::from_lua_multi(args, lua)?;
            let r: mlua::Result<_> = (|| {
                super::core_api::log(level, &msg);
                Ok(())
            })();
            r?.into_lua_multi(lua)
        }
        b"chan" => {
            let (res, op, a, b, c): (bool, mlua::String, Value, Value, Value) =
                FromLuaMulti::from_lua_multi(args, lua)?;
            let mut t = t.borrow_mut();
            channel_op(lua, t.channel(res), &op.as_bytes(), (a, b, c))?.into_lua_multi(lua)
        }
        other => Err(rt(format!(
            "unknown primitive '{}'",
            String::from_utf8_lossy(other)
        ))),
    }
}
