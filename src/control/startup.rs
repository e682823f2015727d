//! Command line: HAProxy's flags, the check mode, and start-up.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::config::{self, model::Config};
use crate::snapshot::runtime::Runtime;

pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

pub(crate) const USAGE: &str = "Usage : sluice [-f <cfgfile|cfgdir>]* [ -vdVD ] [ -c ] [ -q ] [ -dW ] [ --dump ] [ -p <pidfile> ] [ -- <cfgfile>* ]
        -v displays version ; -vv shows known build options.
        -d enters debug mode (foreground, logs to stderr) ; -db only disables background mode.
        -V enters verbose mode (cancels -q)
        -D goes daemon ; -C <dir> changes to this directory before loading files.
        -c checks the configuration and exits ; -q quiet mode (no output)
        -cc <condition> evaluates a condition as '.if' does and exits (0 true, 1 false, 2 error)
        -dW fails if any warning is emitted (as the global 'zero-warning')
        -dr ignores server address resolution failures (such servers start in maintenance)
        -dS disables splice (as 'nosplice') ; -dV disables TLS verification of servers (as 'ssl-server-verify none')
        -dL lists the loaded object files after the check
        -n <maxconn> sets the global maxconn ; -N <maxpconn> sets the maxconn of frontends that set none
        --dump prints the effective merged configuration on stdout (with -c)
        -p <pidfile> writes sluice's pid to this file (one process: no children), removed at exit
        -sf [pid ]* once ready, tells old pids to finish (SIGUSR1: soft stop, requests in flight end)
        -st [pid ]* once ready, terminates old pids (SIGINT: immediate stop, requests in flight are cut)
        -x <unix_socket> takes the listening sockets over from an old process
        -W master-worker mode: a master process starts the worker and reloads it on SIGUSR2
        -Ws master-worker mode speaking systemd's Type=notify (READY, RELOADING, STOPPING)
        -S <bind>[,<opts>] binds the master CLI (master-worker mode): show proc, reload, @<n> <command>
        -L <name> sets the local peer name, this process's in `peers` sections (shown as 'node' when no node is set)
        -f <file|dir> adds a configuration file, the *.cfg files of a directory in byte order,
           or a split layout (global.cfg, defaults.cfg, frontend.cfg, frontend.d/, backend.d/)
        -m <megs> is accepted without effect, as are -dM[<opts>], -dK<classes>, -dD, -de, -dp, -dG, -dR
";

/// What the command line asks for.
#[derive(Debug, Default, Clone)]
pub(crate) struct Options {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) check_only: bool,
    pub(crate) debug: bool,
    pub(crate) daemon: bool,
    pub(crate) quiet: bool,
    /// `-V`: verbose; as in HAProxy, it cancels `-q` whatever the order.
    pub(crate) verbose: bool,
    pub(crate) pidfile: Option<PathBuf>,
    pub(crate) version: u8,
    /// `-dW`: warnings are fatal.
    pub(crate) zero_warning: bool,
    /// `--dump`: print the effective configuration.
    pub(crate) dump: bool,
    /// `-sf <pid>...`: old processes told to finish (SIGUSR1) once ready.
    pub(crate) finish_pids: Vec<i32>,
    /// `-st <pid>...`: old processes stopped at once (SIGINT) once ready:
    /// HAProxy's `-st` terminates, where `-sf` lets requests finish.
    pub(crate) terminate_pids: Vec<i32>,
    /// `-x <socket>`: take the listening sockets of the process behind
    /// this stats socket (`expose-fd listeners`).
    pub(crate) takeover: Option<PathBuf>,
    /// `-Ws`: master-worker mode with systemd's `Type=notify`.
    pub(crate) systemd: bool,
    /// `-W`: master-worker mode (`control/master.rs`).
    pub(crate) master_worker: bool,
    /// `-L <name>`: the local peer name.
    pub(crate) local_peer: Option<String>,
    /// `-cc <condition>`: evaluate it and exit.
    pub(crate) check_condition: Option<String>,
    /// `-C <dir>`: the directory to change to before loading files.
    pub(crate) change_dir: Option<PathBuf>,
    /// `-dL`: list the loaded object files after the check.
    pub(crate) dump_libs: bool,
    /// `-S <bind>[,<opts>]`: the master CLI sockets (master-worker mode).
    pub(crate) master_cli: Vec<String>,
    /// `-n`, `-N`, `-dS`, `-dV`, `-dr`: applied to every load.
    pub(crate) overrides: config::Overrides,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum UsageError {
    #[error("option '{0}' requires an argument")]
    MissingArgument(String),
    #[error("unknown option '{0}'")]
    Unknown(String),
    #[error("no configuration file given (use -f)")]
    NoConfig,
    #[error("option '{0}' expects a number, not '{1}'")]
    NotANumber(String, String),
    #[error(
        "'{0}' is not a configuration file option: configuration files follow -f, or all come after --"
    )]
    Stray(String),
    /// HAProxy's own message for a pid list it cannot read.
    #[error("{0} option: some bytes unconsumed in PID list {{{1}}}")]
    BadPid(String, String),
    #[error("{0} option: pids are positive numbers, not '{1}'")]
    NonPositivePid(String, String),
}

/// Flags of HAProxy 2.6 that sluice accepts without effect, each with why
/// (docs/migrating-from-haproxy.md lists them). HAProxy itself reads a
/// flag by its first letters (`-dI` is `-d` there, `-cx` is `-c`); sluice
/// takes only these spellings, so a typo never switches mode silently.
const NO_EFFECT: &[&str] = &[
    // Diagnostic mode: HAProxy's extra [DIAG] lines for suspicious
    // statements; sluice has no such checks beyond its warnings.
    "-dD",
    // Pollers and getaddrinfo(): sluice uses tokio's epoll and the libc
    // resolver, with no other to fall back to.
    "-de", "-dp", "-dG", // SO_REUSEPORT: sluice never sets it.
    "-dR",
];

pub(crate) fn parse_args(args: &[String]) -> Result<Options, UsageError> {
    let mut o = Options::default();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| UsageError::MissingArgument(flag.to_string()))
        };
        let number = |flag: &str, v: String| {
            v.parse::<u32>()
                .map_err(|_| UsageError::NotANumber(flag.to_string(), v))
        };
        match a.as_str() {
            // As HAProxy: the version comes at once, whatever follows.
            "-v" => {
                o.version = 1;
                return Ok(o);
            }
            "-vv" => {
                o.version = 2;
                return Ok(o);
            }
            "-f" => o.files.push(PathBuf::from(value("-f")?)),
            "-p" => o.pidfile = Some(PathBuf::from(value("-p")?)),
            "-c" => o.check_only = true,
            "-cc" => o.check_condition = Some(value("-cc")?),
            "-C" => o.change_dir = Some(PathBuf::from(value("-C")?)),
            "-d" | "-db" => o.debug = true,
            "-D" => o.daemon = true,
            "-q" => o.quiet = true,
            "-V" => o.verbose = true,
            "-dW" => o.zero_warning = true,
            "-dr" => o.overrides.resolve_dont_fail = true,
            "-dS" => o.overrides.no_splice = true,
            "-dV" => o.overrides.ssl_verify_none = true,
            "-dL" => o.dump_libs = true,
            "-n" => {
                let v = value("-n")?;
                // 0 is HAProxy's "not set".
                o.overrides.maxconn = Some(number("-n", v)?).filter(|&n| n > 0);
            }
            "-N" => {
                let v = value("-N")?;
                o.overrides.maxpconn = Some(number("-N", v)?).filter(|&n| n > 0);
            }
            "-m" => {
                // HAProxy's limit is on the address space (RLIMIT_AS), which
                // tokio's per-thread reservations would exhaust long before
                // the memory in use: accepted, checked, not applied.
                let v = value("-m")?;
                number("-m", v)?;
            }
            "-S" => o.master_cli.push(value("-S")?),
            "--dump" => o.dump = true,
            "-sf" | "-st" => {
                // Every following word that is not a flag, as HAProxy.
                let mut pids = Vec::new();
                while let Some(w) = it.next_if(|w| !w.starts_with('-')) {
                    let p = w.trim_end().parse::<i64>().map_err(|_| {
                        let rest = w.trim_start_matches(|c: char| c.is_ascii_digit());
                        UsageError::BadPid(a.clone(), rest.to_string())
                    })?;
                    let p = i32::try_from(p)
                        .ok()
                        .filter(|&p| p > 0)
                        .ok_or_else(|| UsageError::NonPositivePid(a.clone(), w.clone()))?;
                    pids.push(p);
                }
                if a == "-sf" {
                    o.finish_pids.extend(pids);
                } else {
                    o.terminate_pids.extend(pids);
                }
            }
            "-x" => o.takeover = Some(PathBuf::from(value("-x")?)),
            "-Ws" => o.systemd = true,
            "-W" => o.master_worker = true,
            "-L" => o.local_peer = Some(value("-L")?),
            "--" => {
                o.files.extend(it.by_ref().map(PathBuf::from));
            }
            // Memory debugging options and keyword dumps of HAProxy's C
            // internals (pools, registered keyword classes).
            f if f.starts_with("-dM") || f.starts_with("-dK") => {}
            f if NO_EFFECT.contains(&f) => {}
            f if !f.starts_with('-') => return Err(UsageError::Stray(f.to_string())),
            other => return Err(UsageError::Unknown(other.to_string())),
        }
    }
    if o.files.is_empty() && o.check_condition.is_none() {
        return Err(UsageError::NoConfig);
    }
    Ok(o)
}

/// `-cc <condition>`: HAProxy splits the text into words as a config line
/// (quotes, `${VAR}`), joins them with spaces and evaluates them as `.if`.
/// Exit status 0 when true, 1 when false, 2 when it cannot be evaluated.
fn check_condition(text: &str, quiet: bool) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    let ctx = config::lexer::LexCtx {
        file: "",
        line: 0,
        section: "",
        env: &env,
    };
    let failed = |msg: String| {
        if !quiet {
            let pid = std::process::id();
            let d = config::Diagnostic::alert(None, msg);
            eprint!("{}", report(&[d], pid));
        }
        2
    };
    let words = match config::lexer::split_line(text, &ctx) {
        Ok(w) => w,
        Err(e) => {
            use config::lexer::LexErrorKind as K;
            return failed(match e.kind {
                K::Quote => "Syntax Error in condition: Unmatched quote.".to_string(),
                K::Hex => "Syntax Error in condition: Truncated or invalid hexadecimal sequence."
                    .to_string(),
                K::TooMany { .. } => "Error in condition: Too many words.".to_string(),
                _ => format!("Syntax Error in condition: {}", e.message(text)),
            });
        }
    };
    match config::cond::eval(&words.join(" "), &env) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => failed(format!("Failed to evaluate condition: {}", e.message)),
    }
}

/// `-dL`: the executable and the shared objects mapped into this process,
/// as HAProxy lists them.
fn loaded_objects() -> String {
    let mut out = String::from("List of loaded object files:\n");
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        out.push_str(&format!("{}\n", exe.display()));
    }
    for line in maps.lines() {
        // address perms offset dev inode path
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        if path.starts_with('/') && path.contains(".so") && !seen.contains(&path) {
            seen.push(path);
            out.push_str(path);
            out.push('\n');
        }
    }
    out
}

fn version_text(level: u8) -> String {
    let mut s =
        format!("sluice version {VERSION} - a reverse proxy that speaks HAProxy's language\n");
    if level >= 2 {
        s.push_str(&build_options());
    }
    s
}

/// `-vv`: what a bug report needs, laid out as `haproxy -vv`.
fn build_options() -> String {
    let tls = match env!("SLUICE_TLS") {
        "" => "none",
        t => t,
    };
    format!(
        "Git revision: {rev}\n\
         Speaks: HAProxy {dialect} configuration, stats CSV, CLI and logs\n\
         Running on: {uname}\n\
         Build options :\n  \
         TARGET  = {target}\n  \
         PROFILE = {profile} (opt-level {opt}, debuginfo {debug})\n  \
         RUSTC   = {rustc}\n\
         \n\
         Feature list : {features}\n\
         \n\
         Built with TLS : {tls}\n\
         Built with Lua version : Lua 5.4 (vendored through mlua)\n\
         Built with HTTP/2 : {h2}\n\
         Built with the Prometheus exporter as a service : yes\n\
         Built with systemd notify support : yes (sd_notify protocol built in, no libsystemd)\n\
         Built with multi-threading support : yes (tokio multi-threaded runtime)\n",
        rev = env!("SLUICE_GIT_REV"),
        dialect = config::cond::DIALECT_VERSION,
        uname = running_on(),
        target = env!("SLUICE_TARGET"),
        profile = env!("SLUICE_PROFILE"),
        opt = env!("SLUICE_OPT_LEVEL"),
        debug = env!("SLUICE_DEBUGINFO"),
        rustc = env!("SLUICE_RUSTC_VERSION"),
        features = config::cond::FEATURES,
        h2 = match env!("SLUICE_H2") {
            "" => "no".to_string(),
            v => format!("yes ({v}: clients by ALPN, h2c and the preface; servers with proto h2)"),
        },
    )
}

/// The kernel, as HAProxy's "Running on:" line (`uname -srvm`).
fn running_on() -> String {
    // SAFETY: utsname is plain bytes; uname fills it or fails.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".to_string();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version),
        field(&u.machine)
    )
}

fn alert(pid: u32, msg: &str) {
    // HAProxy's -q silences even start-up alerts: the exit code tells.
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    eprintln!("{:<10} ({pid}) : {msg}", "[ALERT]");
}

/// The diagnostics as HAProxy prints them: its two NOTICE lines (version,
/// executable) come right before the first warning or alert.
pub(crate) fn report(diags: &[config::Diagnostic], pid: u32) -> String {
    let mut out = String::new();
    let mut introduced = false;
    for d in diags {
        if !introduced && d.level != config::Level::Notice {
            introduced = true;
            let exe = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            out.push_str(&format!(
                "{:<10} ({pid}) : sluice version is {VERSION}\n",
                "[NOTICE]"
            ));
            out.push_str(&format!(
                "{:<10} ({pid}) : path to executable is {exe}\n",
                "[NOTICE]"
            ));
        }
        out.push_str(&d.render(pid));
        out.push('\n');
    }
    out
}

/// Runs sluice; returns the process exit code.
pub fn main_with_args(args: &[String]) -> i32 {
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sluice: {e}\n{USAGE}");
            return 1;
        }
    };
    if opts.version > 0 {
        print!("{}", version_text(opts.version));
        return 0;
    }
    // -V cancels -q, whichever comes first (as in HAProxy).
    let mut quiet = opts.quiet && !opts.verbose;
    if let Some(cond) = &opts.check_condition {
        return check_condition(cond, quiet);
    }
    let pid = std::process::id();
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
    if let Some(dir) = &opts.change_dir
        && let Err(e) = std::env::set_current_dir(dir)
    {
        alert(
            pid,
            &format!(
                "Could not change to directory {} : {}",
                dir.display(),
                crate::sys::strerror(&e)
            ),
        );
        return 1;
    }
    if opts.check_only {
        config::addr::set_check_only();
    }
    config::set_overrides(opts.overrides.clone());
    // Still single-threaded here: the runtime starts in `run`.
    crate::sys::process::export_startup_env(&opts.files, opts.local_peer.as_deref(), VERSION);
    // Before the configuration is read: `peers` sections look for it.
    if let Some(peer) = &opts.local_peer {
        crate::sys::process::set_local_peer(peer);
    }
    // Before the configuration is read: its `lua-load` lines run there.
    crate::lua::install();
    let mut loaded = config::load(&opts.files);
    if let Some(cfg) = &loaded.config {
        let machine = machine_checks(cfg, &opts);
        if machine.iter().any(config::Diagnostic::is_alert) {
            loaded.config = None;
        }
        loaded.diagnostics.extend(machine);
    }
    if opts.dump {
        print!("{}", config::dump(&loaded.statements));
    }
    // The global `quiet`, as `-q`.
    if loaded.says_quiet() && !opts.verbose {
        quiet = true;
        QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if !quiet {
        eprint!("{}", report(&loaded.diagnostics, pid));
    }
    let has_warnings = loaded.has_warnings();
    let Some(cfg) = loaded.config else {
        return 1;
    };
    if opts.dump_libs {
        print!("{}", loaded_objects());
    }
    if has_warnings && (opts.zero_warning || cfg.global.zero_warning) {
        if !quiet {
            alert(
                pid,
                "config : Some warnings were found and 'zero-warning' is set. Aborting.",
            );
        }
        return 1;
    }
    if opts.check_only {
        // A `peers` section naming this process listens for its peers.
        let local = crate::config::table::local_peer(&cfg.global);
        let listens = cfg
            .proxies
            .iter()
            .any(|p| !p.disabled && !p.binds.is_empty())
            || !cfg.global.stats_sockets.is_empty()
            || cfg
                .global
                .peers
                .iter()
                .any(|s| !s.disabled && s.has_local(&local));
        if !quiet {
            if has_warnings {
                println!("Warnings were found.");
            }
            if listens {
                println!("Configuration file is valid");
            } else {
                println!(
                    "Configuration file has no error but will not start (no listener) => exit(2)."
                );
            }
        }
        return if listens { 0 } else { 2 };
    }
    let cli: Vec<String> = cfg
        .global
        .stats_sockets
        .iter()
        .map(|s| s.cli_address())
        .collect();
    crate::sys::process::export_cli_env(&cli);
    if crate::control::master::wanted(&opts, &cfg) {
        return crate::control::master::run(&cfg, &opts, args);
    }
    run(cfg, &opts)
}

/// Checks of the machine rather than of the text, made once the
/// configuration is otherwise valid, at the first load only (a reload runs
/// after `chroot`, where the user database may be out of sight): the
/// `user` / `group` names, and the master CLI sluice does not have. Under
/// `-c` a missing user or group is a warning, for the check may run on a
/// CI box or in an image build that lacks it (HAProxy's `-c` fails); at
/// start it is fatal, as in HAProxy.
fn machine_checks(cfg: &Config, opts: &Options) -> Vec<config::Diagnostic> {
    use crate::config::model::IdSpec;
    let mut out = Vec::new();
    let level = if opts.check_only {
        config::Level::Warning
    } else {
        config::Level::Alert
    };
    let ids = [
        ("user", &cfg.global.user, &cfg.global.user_loc),
        ("group", &cfg.global.group, &cfg.global.group_loc),
    ];
    for (what, spec, loc) in ids {
        let (Some(IdSpec::Name(name)), Some(loc)) = (spec, loc) else {
            continue;
        };
        // getpwnam/getgrnam leave errno alone when the name is simply not
        // there: HAProxy's message then ends in "(0:Success)".
        // SAFETY: errno is this thread's; nothing else runs yet.
        unsafe { *libc::__errno_location() = 0 };
        let found = if what == "user" {
            crate::sys::process::lookup_user(name).is_some()
        } else {
            crate::sys::process::lookup_group(name).is_some()
        };
        if !found {
            let e = std::io::Error::last_os_error();
            let text = crate::sys::strerror(&e);
            out.push(config::Diagnostic::parsing(
                level,
                loc,
                format!(
                    "cannot find {what} id for '{name}' ({}:{text})",
                    e.raw_os_error().unwrap_or(0)
                ),
            ));
        }
    }
    if !opts.master_cli.is_empty() && !crate::control::master::requested(opts, cfg) {
        out.push(config::Diagnostic::warning(
            None,
            "a master CLI socket was defined, but master-worker mode (-W) is not enabled.",
        ));
    }
    if level == config::Level::Alert && out.iter().any(config::Diagnostic::is_alert) {
        out.push(config::Diagnostic::alert(None, config::diag::FATAL_ERRORS));
    }
    out
}

use crate::config::model::ListenAddr;
use crate::frontend::listener::Listening;

/// A listening socket ready to serve: frontend, address, socket.
type Bound = (
    Arc<str>,
    crate::config::model::ListenAddr,
    crate::frontend::listener::Listening,
);

/// Binds every listener (before daemonizing, so errors reach the terminal),
/// then serves until a stop signal.
fn run(cfg: Config, opts: &Options) -> i32 {
    let pid = std::process::id();
    // Until `serve` handles them, a reload signal must not end the process.
    crate::sys::process::hold_control_signals();
    // Sockets handed over by an old process (-x).
    let mut taken = crate::control::takeover::Handover::default();
    if let Some(sock) = &opts.takeover {
        match crate::control::takeover::fetch(sock) {
            Ok(h) => taken = h,
            Err(e) => warn(
                pid,
                &format!(
                    "Failed to get the sockets from the old process ({}): {e}; binding them instead.",
                    sock.display()
                ),
            ),
        }
    }
    let mut bound: Vec<Bound> = Vec::new();
    // A disabled proxy listens nowhere.
    for p in cfg
        .proxies
        .iter()
        .filter(|p| p.kind.has_frontend() && !p.disabled)
    {
        for b in &p.binds {
            if let Some(fd) = b.fd {
                let got = inherited_or_handed(
                    fd,
                    &mut taken,
                    crate::frontend::listener::adopt_inherited,
                    |s| crate::frontend::listener::inherited(fd, s),
                );
                match got {
                    Ok((addr, l)) => {
                        if addr.ip().is_some()
                            && let Err(e) = crate::frontend::listener::set_bind_options(
                                l.raw_fd(),
                                &b.sock,
                                false,
                            )
                        {
                            alert(
                                pid,
                                &format!(
                                    "Starting frontend {}: cannot set socket options on 'fd@{fd}' ({}) [{}]",
                                    p.name,
                                    crate::sys::strerror(&e),
                                    b.loc
                                ),
                            );
                            return 1;
                        }
                        bound.push((Arc::from(p.name.as_str()), addr, l))
                    }
                    Err(e) => {
                        alert(
                            pid,
                            &format!(
                                "Starting frontend {}: cannot use 'fd@{fd}' ({e}) [{}]",
                                p.name, b.loc
                            ),
                        );
                        return 1;
                    }
                }
                continue;
            }
            if let Some(u) = &b.unix {
                let addr = ListenAddr::Unix(u.name.clone());
                if let Some(l) = taken.take_unix(&u.name) {
                    bound.push((Arc::from(p.name.as_str()), addr, Listening::Unix(l)));
                    continue;
                }
                match crate::frontend::listener::bind_unix(u) {
                    Ok(l) => bound.push((Arc::from(p.name.as_str()), addr, Listening::Unix(l))),
                    Err(e) => {
                        alert(
                            pid,
                            &format!(
                                "Starting frontend {}: cannot bind UNIX socket ({}) [{}]",
                                p.name,
                                crate::sys::strerror(&e),
                                b.text
                            ),
                        );
                        return 1;
                    }
                }
                continue;
            }
            for addr in &b.addrs {
                let (l, fresh) = match taken.take_tcp(*addr) {
                    Some(l) => (l, false),
                    None => match crate::frontend::listener::bind_std(*addr, b.v6, &b.sock) {
                        Ok(l) => (l, true),
                        Err(e) => {
                            alert(
                                pid,
                                &format!(
                                    "Starting frontend {}: cannot bind socket ({}) [{}]",
                                    p.name,
                                    crate::sys::strerror(&e),
                                    addr
                                ),
                            );
                            return 1;
                        }
                    },
                };
                if let Err(e) = crate::frontend::listener::set_bind_options(
                    std::os::fd::AsRawFd::as_raw_fd(&l),
                    &b.sock,
                    fresh,
                ) {
                    alert(
                        pid,
                        &format!(
                            "Starting frontend {}: cannot set socket options ({}) [{}]",
                            p.name,
                            crate::sys::strerror(&e),
                            addr
                        ),
                    );
                    return 1;
                }
                bound.push((
                    Arc::from(p.name.as_str()),
                    ListenAddr::Ip(*addr),
                    Listening::Tcp(l),
                ));
            }
        }
    }
    // Inherited CLI sockets, taken now: once the runtime opens descriptors
    // of its own, a number that was not passed may name one of those.
    let mut cli_sockets = Vec::new();
    for sock in &cfg.global.stats_sockets {
        let Some(fd) = sock.fd else {
            cli_sockets.push(None);
            continue;
        };
        match inherited_or_handed(fd, &mut taken, crate::frontend::listener::adopt_any, Ok) {
            Ok(s) => {
                if sock.expose_fd && matches!(s, crate::frontend::listener::Listening::Tcp(_)) {
                    warn(
                        pid,
                        &format!(
                            "Starting proxy GLOBAL: 'expose-fd listeners' ignored on 'fd@{fd}', a TCP socket (descriptors pass over UNIX sockets only) [{}]",
                            sock.loc
                        ),
                    );
                }
                crate::control::takeover::hand_over_cli(fd, &s);
                cli_sockets.push(Some(s));
            }
            Err(e) => {
                alert(
                    pid,
                    &format!(
                        "Starting proxy GLOBAL: cannot use 'fd@{fd}' ({e}) [{}]",
                        sock.loc
                    ),
                );
                return 1;
            }
        }
    }
    // Handed-over sockets the new configuration does not use close here.
    drop(taken);
    if !raise_fd_limit(&cfg, pid) {
        return 1;
    }
    let ids = match resolve_ids(&cfg) {
        Ok(ids) => ids,
        Err(e) => {
            alert(pid, &e);
            return 1;
        }
    };
    // A master's worker leaves both to its master, which runs in the
    // foreground unless asked to go to background itself.
    let worker = crate::control::master::worker_cli().is_some();
    let daemon = (opts.daemon || cfg.global.daemon) && !opts.systemd && !worker;
    let pidfile = if worker {
        None
    } else {
        opts.pidfile.clone().or(cfg.global.pidfile.clone())
    };
    if daemon && let Err(e) = crate::sys::process::daemonize(pidfile.as_deref()) {
        alert(pid, &format!("cannot go to background: {e}"));
        return 1;
    }
    let my_pid = std::process::id();
    // A daemon's pid file was written by its parent before it returned.
    if let Some(path) = &pidfile
        && !daemon
        && let Err(e) = crate::sys::process::write_pidfile(path, my_pid)
    {
        alert(
            my_pid,
            &format!("cannot create pidfile {}: {e}", path.display()),
        );
        return 1;
    }
    let threads = cfg
        .global
        .nbthread
        .map(|n| n as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let affinity = thread_cpus(&cfg.global.cpu_map, threads);
    let runtimes =
        match crate::sys::workers::start(threads, &affinity, crate::wire::spares::trim_all) {
            Ok(r) => r,
            Err(e) => {
                alert(pid, &format!("cannot start the runtime: {e}"));
                return 1;
            }
        };
    let code = runtimes.control.block_on(serve(
        cfg,
        opts.clone(),
        bound,
        cli_sockets,
        threads as u32,
        ids,
    ));
    if let Some(path) = &pidfile {
        // A successor (-sf) may have written its own pid there already.
        if std::fs::read_to_string(path).is_ok_and(|t| t.trim() == my_pid.to_string()) {
            let _ = std::fs::remove_file(path);
        }
    }
    // Connections still open at a hard stop are not waited for: the
    // workers' threads end with the process.
    runtimes.control.shutdown_background();
    code
}

/// The socket behind `fd@<fd>`: the descriptor this process inherited as
/// that number (`own`), else the one the old process (`-x`) had inherited
/// as `fd@<fd>` (`handed`), as when the supervisor passed it to the first
/// process only. A number that a received socket now holds was not passed.
fn inherited_or_handed<T>(
    fd: std::os::fd::RawFd,
    taken: &mut crate::control::takeover::Handover,
    own: impl FnOnce(std::os::fd::RawFd) -> std::io::Result<T>,
    handed: impl FnOnce(crate::frontend::listener::Listening) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let err = if taken.occupies(fd) {
        std::io::Error::from_raw_os_error(libc::EBADF)
    } else {
        match own(fd) {
            Ok(x) => return Ok(x),
            Err(e) => e,
        }
    };
    match taken.take_inherited(fd) {
        Some(s) => handed(s),
        None => Err(err),
    }
}

/// `ulimit-n`, or what `maxconn` needs: two descriptors per connection
/// (client and server side) and a margin for listeners, checks and the CLI.
/// False when the limit could not be had and `strict-limits` makes that
/// fatal (an alert then, a warning without it).
fn raise_fd_limit(cfg: &Config, pid: u32) -> bool {
    let maxconn = cfg
        .global
        .maxconn
        .unwrap_or(crate::snapshot::DEFAULT_MAXCONN) as u64;
    let want = match cfg.global.ulimit_n {
        Some(n) => n as u64,
        None => {
            let listeners: usize = cfg.proxies.iter().map(|p| p.binds.len()).sum();
            let servers: usize = cfg.proxies.iter().map(|p| p.servers.len()).sum();
            let need = maxconn * 2 + listeners as u64 + servers as u64 + 100;
            // `fd-hard-limit`: never more than this.
            cfg.global.fd_hard_limit.map_or(need, |cap| need.min(cap))
        }
    };
    let result = match cfg.global.ulimit_n {
        Some(n) => crate::sys::process::set_nofile(n as u64),
        None => crate::sys::process::raise_nofile(want),
    };
    let short = match result {
        Ok(got) if got < want => {
            format!("[sluice.main()] Cannot raise FD limit to {want}, limit is {got}.")
        }
        Ok(_) => return true,
        Err(e) => format!("[sluice.main()] Cannot raise FD limit to {want}: {e}."),
    };
    if cfg.global.strict_limits {
        alert(pid, &short);
        return false;
    }
    warn(pid, &short);
    true
}

/// The uid and gid to drop to, resolved before a chroot hides the user
/// database.
fn resolve_ids(cfg: &Config) -> Result<(Option<u32>, Option<u32>), String> {
    use crate::config::model::IdSpec;
    let mut gid = None;
    let uid = match &cfg.global.user {
        None => None,
        Some(IdSpec::Id(u)) => Some(*u),
        Some(IdSpec::Name(n)) => match crate::sys::process::lookup_user(n) {
            Some((u, g)) => {
                gid = Some(g);
                Some(u)
            }
            None => return Err(format!("[sluice.main()] Cannot find user id for '{n}'.")),
        },
    };
    match &cfg.global.group {
        None => {}
        Some(IdSpec::Id(g)) => gid = Some(*g),
        Some(IdSpec::Name(n)) => match crate::sys::process::lookup_group(n) {
            Some(g) => gid = Some(g),
            None => return Err(format!("[sluice.main()] Cannot find group id for '{n}'.")),
        },
    }
    Ok((uid, gid))
}

/// The CPUs of each worker thread (1-based) after every `cpu-map` line.
pub(crate) fn thread_cpus(
    maps: &[crate::config::model::CpuMap],
    threads: usize,
) -> std::collections::HashMap<usize, Vec<usize>> {
    let mut out = std::collections::HashMap::new();
    for m in maps {
        let list: Vec<usize> = match &m.threads {
            Some(t) => t.iter().map(|&t| t as usize).collect(),
            None => (1..=threads).collect(),
        };
        for (k, t) in list.into_iter().enumerate() {
            if t == 0 || t > threads {
                continue;
            }
            let cpus = if m.auto {
                match m.cpus.get(k) {
                    Some(&c) => vec![c],
                    None => continue,
                }
            } else {
                m.cpus.clone()
            };
            out.insert(t, cpus);
        }
    }
    out
}

/// `-q`: nothing is printed, warnings nor alerts (as HAProxy's -q).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn warn(pid: u32, msg: &str) {
    print_line("[WARNING]", pid, msg);
}

/// One line of HAProxy's start-up messages (`[NOTICE]`, `[WARNING]`,
/// `[ALERT]`) on stderr, unless `-q`.
pub(crate) fn print_line(tag: &str, pid: u32, msg: &str) {
    if QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    eprintln!("{tag:<10} ({pid}) : {msg}");
}

async fn serve(
    cfg: Config,
    opts: Options,
    bound: Vec<Bound>,
    cli_sockets: Vec<Option<crate::frontend::listener::Listening>>,
    threads: u32,
    (uid, gid): (Option<u32>, Option<u32>),
) -> i32 {
    let pid = std::process::id();
    // Installed first: a stop signal during start-up is not lost, nor a
    // reload signal sent as soon as a listener accepts.
    let mut signals = crate::sys::process::StopSignals::install();
    let control_signals = match crate::control::reload::ControlSignals::install() {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!("reload signals unavailable ({e}); use the CLI 'reload' command");
            None
        }
    };
    // This thread runs to the end of the process: the held signals are
    // delivered here (the workers keep them blocked).
    crate::sys::process::release_control_signals();
    crate::state::counters::start_coarse_clock();
    let rt = Runtime::new(&cfg, threads);
    crate::control::server_state::load(&rt, &cfg);
    crate::observe::log::event::attach(&rt);
    let snap = rt.snapshot();
    let global_max = Arc::new(Semaphore::new(
        cfg.global
            .maxconn
            .unwrap_or(crate::snapshot::DEFAULT_MAXCONN) as usize,
    ));
    // The CLI sockets are bound now (before privileges are dropped) and
    // served once the supervisor exists, so that `reload` is never
    // answered "not available" by a process that is starting.
    let mut cli_servers = Vec::new();
    for (sock, inherited) in cfg.global.stats_sockets.iter().zip(cli_sockets) {
        match bind_stats_socket(sock, inherited, &rt) {
            Ok(server) => {
                cli_servers.push(server);
                continue;
            }
            Err(e) => {
                let what = match sock.tcp {
                    Some(addr) => {
                        format!("cannot bind socket ({}) [{addr}]", crate::sys::strerror(&e))
                    }
                    None => match e
                        .get_ref()
                        .and_then(|i| i.downcast_ref::<crate::control::cli::SocketOwnershipError>())
                    {
                        Some(own) => {
                            format!(
                                "{own} ({}) [{}]",
                                crate::sys::strerror(&own.0),
                                sock.path.display()
                            )
                        }
                        None => format!(
                            "cannot bind UNIX socket ({}) [{}]",
                            crate::sys::strerror(&e),
                            sock.path.display()
                        ),
                    },
                };
                alert(pid, &format!("Starting proxy GLOBAL: {what}"));
                return 1;
            }
        }
    }
    // A master's worker: the private CLI its master routes commands and
    // reloads through, which hands the listeners over to the worker of a
    // new binary (`-x`).
    match crate::control::master::bind_worker_cli() {
        Some(Ok(l)) => cli_servers.push(Box::pin(crate::control::takeover::serve_exposing(
            l,
            crate::config::model::CliLevel::Admin,
            rt.clone(),
        ))),
        Some(Err(e)) => {
            alert(pid, &format!("cannot bind the master's CLI socket: {e}"));
            return 1;
        }
        None => {}
    }
    drop(snap);
    // The local peers' listeners, bound before privileges are dropped.
    if let Err((loc, local, addr, e)) = crate::peers::bind_at_start(&cfg.global) {
        alert(
            pid,
            &format!(
                "Binding [{loc}] for proxy {local}: cannot bind socket ({}) for [{addr}]",
                crate::sys::strerror(&e)
            ),
        );
        alert(
            pid,
            "[sluice.main()] Some protocols failed to start their listeners! Exiting.",
        );
        return 1;
    }
    // Everything is bound: chroot, then drop privileges.
    let mut sources = opts.files.clone();
    if let Some(dir) = &cfg.global.chroot {
        sources = sources_in_chroot(&sources, dir);
        if let Err(e) = crate::sys::process::chroot(dir) {
            alert(
                pid,
                &format!("[sluice.main()] Cannot chroot({}): {e}.", dir.display()),
            );
            return 1;
        }
    }
    if let Err(e) = crate::sys::process::drop_privileges(uid, gid) {
        alert(
            pid,
            &format!("[sluice.main()] Cannot drop privileges: {e}."),
        );
        return 1;
    }
    // A process that changed user is not dumpable unless asked.
    if cfg.global.set_dumpable {
        crate::sys::process::set_dumpable();
    }
    let sup =
        match crate::control::reload::Supervisor::start(rt.clone(), sources, global_max, bound) {
            Ok(sup) => sup,
            Err(e) => {
                alert(pid, &format!("cannot start listeners: {e}"));
                return 1;
            }
        };
    if let Some(c) = control_signals {
        c.serve(sup.clone());
    }
    crate::control::reload::serve_scripts(&sup);
    for server in cli_servers {
        tokio::spawn(server);
    }
    tracing::info!("sluice {VERSION} started (pid {pid})");
    crate::sys::process::sd_notify(&format!("READY=1\nMAINPID={pid}\n"));
    // Ready: old processes may go.
    for (pids, sig, how) in [
        (&opts.finish_pids, libc::SIGUSR1, "finish"),
        // SIGINT, not SIGTERM: in sluice SIGTERM is a soft stop (as SIGUSR1).
        (&opts.terminate_pids, libc::SIGINT, "terminate"),
    ] {
        for (p, e) in crate::sys::process::signal_pids(pids, sig) {
            warn(
                pid,
                &format!("Failed to send the {how} signal to old pid {p}: {e}."),
            );
        }
    }
    match signals.next().await {
        crate::sys::process::StopKind::Immediate => 0,
        crate::sys::process::StopKind::Soft => soft_stop(&sup, &rt, &mut signals).await,
    }
}

/// With `chroot`, the `-f` sources as a reload will see them: a path
/// under the new root loses that prefix (others stay, and a reload will
/// report them missing).
fn sources_in_chroot(sources: &[PathBuf], dir: &std::path::Path) -> Vec<PathBuf> {
    let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    sources
        .iter()
        .map(|s| {
            let abs = std::fs::canonicalize(s).unwrap_or_else(|_| s.clone());
            match abs.strip_prefix(&root) {
                Ok(rest) => PathBuf::from("/").join(rest),
                Err(_) => s.clone(),
            }
        })
        .collect()
}

/// SIGTERM / SIGUSR1: stop accepting, close idle connections, let the
/// requests in flight finish (each response says `connection: close`),
/// exit 0 when no connection is left, or at `hard-stop-after`. SIGINT
/// meanwhile exits at once.
async fn soft_stop(
    sup: &crate::control::reload::Supervisor,
    rt: &Arc<Runtime>,
    signals: &mut crate::sys::process::StopSignals,
) -> i32 {
    // `grace`: the listeners keep accepting a while before the stop.
    if let Some(grace) = rt.snapshot().global.grace {
        tokio::time::sleep(grace).await;
    }
    crate::sys::process::sd_notify("STOPPING=1\n");
    crate::sys::process::begin_soft_stop();
    sup.stop_listening().await;
    let snap = rt.snapshot();
    for p in &snap.proxies {
        // A script stopped it already, and said so (`Proxy:stop()`).
        if p.frontend
            .as_ref()
            .is_some_and(|f| f.state.admin() == crate::state::FrontendAdmin::Stopped)
        {
            continue;
        }
        let fe = p
            .frontend
            .as_ref()
            .map_or(0, |f| f.state.client.sum(|s| &s.conn_tot));
        let be = p
            .backend
            .as_ref()
            .map_or(0, |b| b.state.counters.sum(|s| &s.stot));
        tracing::warn!(
            "Proxy {} stopped (cumulated conns: FE: {fe}, BE: {be}).",
            p.name
        );
    }
    let closed = crate::http::park::close_all();
    tracing::debug!("soft stop: {closed} idle connection(s) closed");
    let deadline = snap
        .global
        .hard_stop_after
        .map(|d| tokio::time::Instant::now() + d);
    drop(snap);
    loop {
        let open = rt.process.conns.cur();
        if open == 0 {
            return 0;
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            tracing::warn!(
                "hard-stop-after expired: exiting with {open} connection(s) still open."
            );
            return 0;
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
            kind = signals.next() => {
                if kind == crate::sys::process::StopKind::Immediate {
                    return 0;
                }
            }
        }
    }
}

/// The accept loop of one CLI socket, bound but not yet running.
type CliServer = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>;

/// Binds one `stats socket` (UNIX path or `ipv4@`/`ipv6@` address), or
/// takes the `inherited` one of a `stats socket fd@<n>`; returns the loop
/// that serves the CLI on it.
fn bind_stats_socket(
    sock: &crate::config::model::StatsSocket,
    inherited: Option<crate::frontend::listener::Listening>,
    rt: &Arc<Runtime>,
) -> std::io::Result<CliServer> {
    use crate::control::{cli, takeover};
    use crate::frontend::listener::Listening;
    let rt = rt.clone();
    let level = sock.level;
    Ok(match inherited {
        Some(Listening::Tcp(l)) => Box::pin(cli::serve_tcp(l, level, rt)),
        Some(Listening::Unix(l)) if sock.expose_fd => {
            Box::pin(takeover::serve_exposing(l, level, rt))
        }
        Some(Listening::Unix(l)) => Box::pin(cli::serve_unix_listener(l, level, rt)),
        // Taken (or refused) at start, in `run`.
        None if sock.fd.is_some() => {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        }
        None => match sock.tcp {
            Some(addr) => {
                let listener =
                    crate::frontend::listener::bind_std(addr, sock.v6, &Default::default())?;
                Box::pin(cli::serve_tcp(listener, level, rt))
            }
            None if sock.expose_fd => {
                Box::pin(takeover::serve_exposing(cli::bind_unix(sock)?, level, rt))
            }
            None => Box::pin(cli::serve_listener(cli::bind_unix(sock)?, sock.clone(), rt)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn flags() {
        let o = parse_args(&args(&[
            "-f", "a.cfg", "-f", "dir", "-c", "-p", "x.pid", "-d",
        ]))
        .unwrap();
        assert_eq!(o.files, vec![PathBuf::from("a.cfg"), PathBuf::from("dir")]);
        assert!(o.check_only && o.debug);
        assert_eq!(o.pidfile, Some(PathBuf::from("x.pid")));
        assert!(matches!(
            parse_args(&args(&["-Z"])),
            Err(UsageError::Unknown(_))
        ));
        assert!(matches!(
            parse_args(&args(&["-f", "a", "-x"])),
            Err(UsageError::MissingArgument(_))
        ));
        let o = parse_args(&args(&[
            "-f", "a", "-sf", "12", "34", "-x", "/s.sock", "-st", "56", "-Ws", "-L", "p1", "-db",
        ]))
        .unwrap();
        assert_eq!(o.finish_pids, vec![12, 34]);
        assert_eq!(o.terminate_pids, vec![56]);
        assert_eq!(o.takeover, Some(PathBuf::from("/s.sock")));
        assert!(o.systemd && o.debug);
        assert_eq!(o.local_peer.as_deref(), Some("p1"));
        assert!(matches!(
            parse_args(&args(&["-f"])),
            Err(UsageError::MissingArgument(_))
        ));
        let o = parse_args(&args(&["--", "a", "b"])).unwrap();
        assert_eq!(o.files.len(), 2);
    }

    #[test]
    fn haproxy_flags() {
        // -V is verbose, not the version: the check still happens.
        let o = parse_args(&args(&["-c", "-V", "-f", "a"])).unwrap();
        assert!(o.check_only && o.verbose && o.version == 0);
        // -v stops the parsing, as HAProxy prints the version at once.
        let o = parse_args(&args(&["-c", "-v", "-Z"])).unwrap();
        assert_eq!(o.version, 1);
        let o = parse_args(&args(&[
            "-cc",
            "1",
            "-C",
            "/d",
            "-n",
            "100",
            "-N",
            "10",
            "-m",
            "64",
            "-dr",
            "-dS",
            "-dV",
            "-dL",
            "-dM0x51,no-merge",
            "-dKcfg",
            "-dD",
            "-de",
            "-dp",
            "-dG",
            "-dR",
            "-S",
            "/m",
        ]))
        .unwrap();
        assert_eq!(o.check_condition.as_deref(), Some("1"));
        assert_eq!(o.change_dir, Some(PathBuf::from("/d")));
        assert_eq!(o.overrides.maxconn, Some(100));
        assert_eq!(o.overrides.maxpconn, Some(10));
        assert!(o.overrides.resolve_dont_fail && o.overrides.no_splice);
        assert!(o.overrides.ssl_verify_none && o.dump_libs);
        assert_eq!(o.master_cli, vec!["/m".to_string()]);
        for bad in [
            &["-n", "x", "-f", "a"][..],
            &["-dI", "-f", "a"],
            &["-f", "a", "b"],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
        assert!(matches!(
            parse_args(&args(&["-f", "a", "-sf", "12x"])),
            Err(UsageError::BadPid(_, rest)) if rest == "x"
        ));
    }
}
