//! The fetches and converters scripts register (`lua.<name>`): the
//! sample registry's side of the Lua room (`src/lua/`). The room sits
//! above the registry, so it reaches it through the [`Scripts`] trait:
//! the configuration's `lua-load` lines run the scripts through the
//! loader `lua` installs ([`set_loader`]), the names they register are
//! found by [`super::fetch::find`] and [`super::conv::find`] while that
//! configuration is read, and the running configuration's scripts
//! ([`activate`]) answer when a request evaluates one. A configuration
//! without `lua-load` never reaches this module on a request.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;

use super::arg::{Arg, ArgSpec, ArgType};
use super::conv::ConvDef;
use super::fetch::{Ctx, FetchDef};
use super::stage::{Src, Uses};
use super::value::{Sample, SmpType};

/// A configuration's loaded scripts, as the registry sees them.
pub(crate) trait Scripts: Send + Sync {
    /// Whether a fetch (`conv` false) or converter of this name (without
    /// `lua.`) was registered.
    fn has(&self, name: &str, conv: bool) -> bool;
    /// Runs the fetch `name` on the request `cx` describes.
    fn fetch(&self, name: &str, args: &[Arg], cx: &Ctx<'_>) -> Option<Sample<'static>>;
    /// Runs the converter `name` on `input`.
    fn convert(
        &self,
        name: &str,
        input: Sample<'_>,
        args: &[Arg],
        cx: &Ctx<'_>,
    ) -> Option<Sample<'static>>;
    /// How many arguments the action `name` registered for `kind`
    /// (`http-req`, `http-res`, `tcp-req`, `tcp-res`) takes; None for no
    /// such action.
    fn action_args(&self, name: &str, kind: &str) -> Option<usize>;
    /// Whether a service of this name was registered, for HTTP (`http`)
    /// or TCP.
    fn has_service(&self, name: &str, http: bool) -> bool;
    /// The room's own type, for the engines that run its actions.
    fn as_any(&self) -> &dyn Any;
}

/// What a `lua-load` line asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadReq<'a> {
    pub(crate) file: &'a str,
    pub(crate) args: &'a [String],
    /// `lua-prepend-path` lines before it: (path, is cpath).
    pub(crate) prepend: &'a [(String, bool)],
    /// `tune.lua.maxmem` in bytes (0: no bound).
    pub(crate) maxmem: usize,
    /// `tune.lua.forced-yield` as read so far.
    pub(crate) forced_yield: u32,
}

/// Runs one file into the scripts loaded before it by the same
/// configuration (`prev`), giving the scripts with it, or HAProxy's
/// message.
pub(crate) type Loader =
    fn(prev: Option<&Arc<dyn Scripts>>, req: &LoadReq<'_>) -> Result<Arc<dyn Scripts>, String>;

static LOADER: OnceLock<Loader> = OnceLock::new();

/// Installed by the binary's start-up (the room above), once.
pub(crate) fn set_loader(f: Loader) {
    let _ = LOADER.set(f);
}

/// Runs a `lua-load` line (an error where no loader is installed).
pub(crate) fn load(
    prev: Option<&Arc<dyn Scripts>>,
    req: &LoadReq<'_>,
) -> Result<Arc<dyn Scripts>, String> {
    match LOADER.get() {
        Some(f) => {
            let s = f(prev, req)?;
            PARSING.with(|p| *p.borrow_mut() = Some(s.clone()));
            Ok(s)
        }
        None => Err("Lua is not available in this build".into()),
    }
}

thread_local! {
    /// The scripts of the configuration this thread is reading, whose
    /// names its sample expressions may use.
    static PARSING: RefCell<Option<Arc<dyn Scripts>>> = const { RefCell::new(None) };
}

/// How many arguments the action `name` the scripts of the
/// configuration being read registered for `kind` takes (None: none).
pub(crate) fn parsing_action_args(name: &str, kind: &str) -> Option<usize> {
    PARSING.with(|p| p.borrow().as_ref().and_then(|s| s.action_args(name, kind)))
}

/// Whether the scripts of the configuration being read registered the
/// service `name` (HTTP or TCP).
pub(crate) fn parsing_has_service(name: &str, http: bool) -> bool {
    PARSING.with(|p| {
        p.borrow()
            .as_ref()
            .is_some_and(|s| s.has_service(name, http))
    })
}

/// Forgets the scripts of the configuration read before (called when a
/// configuration starts being read, and when it is done).
pub(crate) fn parsing_done() {
    PARSING.with(|p| *p.borrow_mut() = None);
}

/// The running configuration's scripts (None: no `lua-load`).
static ACTIVE: ArcSwapOption<Active> = ArcSwapOption::const_empty();

/// An `Arc<dyn Scripts>` behind the `ArcSwapOption` (which holds sized
/// types).
struct Active(Arc<dyn Scripts>);

/// Makes `s` the scripts requests run (a start or a reload).
pub(crate) fn activate(s: Option<Arc<dyn Scripts>>) {
    ACTIVE.store(s.map(|s| Arc::new(Active(s))));
}

/// The running configuration's scripts.
pub(crate) fn active() -> Option<Arc<dyn Scripts>> {
    ACTIVE.load_full().map(|a| a.0.clone())
}

/// The registry's entries of the script keywords, made once per name for
/// the life of the process (a reload that registers a name again reuses
/// it): a `FetchDef`'s evaluation is a plain function, which finds the
/// name in its first argument (see [`hidden_name`]).
static FETCH_DEFS: Mutex<Option<HashMap<String, &'static FetchDef>>> = Mutex::new(None);
static CONV_DEFS: Mutex<Option<HashMap<String, &'static ConvDef>>> = Mutex::new(None);

/// Up to five string arguments, as HAProxy gives a Lua keyword; the
/// first one, hidden, is the keyword's name.
const ARGS: ArgSpec = ArgSpec::of(
    &[
        ArgType::Str,
        ArgType::Str,
        ArgType::Str,
        ArgType::Str,
        ArgType::Str,
    ],
    0,
);

/// A `lua.<name>` fetch the scripts of the configuration being read
/// registered.
pub(crate) fn find_fetch(name: &str) -> Option<&'static FetchDef> {
    let short = name.strip_prefix("lua.")?;
    let known = PARSING.with(|p| p.borrow().as_ref().is_some_and(|s| s.has(short, false)));
    if !known {
        return None;
    }
    let mut defs = FETCH_DEFS.lock().unwrap_or_else(|e| e.into_inner());
    let defs = defs.get_or_insert_with(HashMap::new);
    Some(defs.entry(name.to_string()).or_insert_with(|| {
        Box::leak(Box::new(FetchDef {
            name: Box::leak(name.to_string().into_boxed_str()),
            uses: Uses::of(&[Src::Intrn]),
            args: ARGS,
            check: None,
            out: SmpType::Str,
            eval: eval_fetch,
            each: None,
        }))
    }))
}

/// A `lua.<name>` converter the scripts of the configuration being read
/// registered.
pub(crate) fn find_conv(name: &str) -> Option<&'static ConvDef> {
    let short = name.strip_prefix("lua.")?;
    let known = PARSING.with(|p| p.borrow().as_ref().is_some_and(|s| s.has(short, true)));
    if !known {
        return None;
    }
    let mut defs = CONV_DEFS.lock().unwrap_or_else(|e| e.into_inner());
    let defs = defs.get_or_insert_with(HashMap::new);
    Some(defs.entry(name.to_string()).or_insert_with(|| {
        Box::leak(Box::new(ConvDef {
            name: Box::leak(name.to_string().into_boxed_str()),
            args: ARGS,
            check: None,
            input: SmpType::Str,
            out: SmpType::Str,
            eval: eval_conv,
        }))
    }))
}

/// Whether `def` is a script's: its arguments then start with its name.
pub(crate) fn is_script(name: &str) -> bool {
    name.starts_with("lua.")
}

/// The hidden first argument of a script keyword: its name without
/// `lua.`, put there when the expression is parsed.
pub(crate) fn hidden_name(name: &str) -> Arg {
    Arg::Str(name.strip_prefix("lua.").unwrap_or(name).to_string())
}

fn eval_fetch<'a>(args: &'a [Arg], cx: &Ctx<'a>) -> Option<Sample<'a>> {
    let (name, rest) = args.split_first()?;
    active()?.fetch(name.as_str(), rest, cx)
}

fn eval_conv<'a>(input: Sample<'a>, args: &'a [Arg], cx: &Ctx<'a>) -> Option<Sample<'a>> {
    let (name, rest) = args.split_first()?;
    active()?.convert(name.as_str(), input, rest, cx)
}

/// Runs the converter `name` with its arguments as written between its
/// parentheses (`txn.c:<name>(...)` in a script): the value, None when it
/// gives none, or the message for a converter or arguments refused.
pub(crate) fn convert_named(
    name: &str,
    input: Sample<'_>,
    args: &str,
    cx: &Ctx<'_>,
) -> Result<Option<Sample<'static>>, String> {
    let Some(conv) = super::conv::find(name) else {
        return Err(format!("unknown converter '{name}'"));
    };
    let text = format!("{args})");
    let (mut cargs, _) = super::arg::parse(conv.args, &text)
        .map_err(|e| format!("invalid arg {} in converter '{name}' : {}", e.pos, e.msg))?;
    if let Some(check) = conv.check {
        check(&mut cargs).map_err(|e| match e {
            super::conv::CheckError::Invalid(m) | super::conv::CheckError::Unsupported(m) => m,
        })?;
    }
    if is_script(conv.name) {
        cargs.insert(0, hidden_name(conv.name));
    }
    if cargs.len() < conv.args.min {
        return Ok(None);
    }
    let Some(input) = input.cast(conv.input) else {
        return Ok(None);
    };
    Ok((conv.eval)(input, &cargs, cx).map(Sample::into_owned))
}

/// The bounds scripts run under (`tune.lua.*`), the running
/// configuration's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tune {
    /// Instructions between two forced yields.
    pub(crate) forced_yield: u32,
    /// The Lua time of one action, fetch or converter.
    pub(crate) session_timeout: std::time::Duration,
    /// The Lua time of one service's run.
    pub(crate) service_timeout: std::time::Duration,
    /// The Lua time of a task (None: unbounded).
    pub(crate) task_timeout: Option<std::time::Duration>,
}

impl Default for Tune {
    /// HAProxy 2.6's defaults.
    fn default() -> Tune {
        Tune {
            forced_yield: 10_000,
            session_timeout: std::time::Duration::from_secs(4),
            service_timeout: std::time::Duration::from_secs(4),
            task_timeout: None,
        }
    }
}

static TUNE: Mutex<Option<Tune>> = Mutex::new(None);

/// Sets the running configuration's bounds.
pub(crate) fn set_tune(t: Tune) {
    *TUNE.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
}

/// The running configuration's bounds.
pub(crate) fn tune() -> Tune {
    TUNE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or_default()
}
