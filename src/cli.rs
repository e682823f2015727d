//! Command line: HAProxy's flags, the check mode, and start-up.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::config::{self, model::Config};
use crate::runtime::Runtime;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

const USAGE: &str = "Usage : sluice [-f <cfgfile|cfgdir>]* [ -vdVD ] [ -c ] [ -q ] [ -dW ] [ --dump ] [ -p <pidfile> ] [ -- <cfgfile>* ]
        -v displays version ; -vv shows known build options.
        -d enters debug mode (foreground, logs to stderr) ; -db only disables background mode.
        -D goes daemon ; -c checks the configuration and exits ; -q quiet mode (no output)
        -dW fails if any warning is emitted (as the global 'zero-warning')
        --dump prints the effective merged configuration on stdout (with -c)
        -p writes pids of all children to this file
        -f <file|dir> adds a configuration file, the *.cfg files of a directory in byte order,
           or a split layout (global.cfg, defaults.cfg, frontend.cfg, frontend.d/, backend.d/)
";

/// What the command line asks for.
#[derive(Debug, Default, Clone)]
pub struct Options {
    pub files: Vec<PathBuf>,
    pub check_only: bool,
    pub debug: bool,
    pub daemon: bool,
    pub quiet: bool,
    pub pidfile: Option<PathBuf>,
    pub version: u8,
    /// `-dW`: warnings are fatal.
    pub zero_warning: bool,
    /// `--dump`: print the effective configuration.
    pub dump: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("option '{0}' requires an argument")]
    MissingArgument(String),
    #[error("unknown option '{0}'")]
    Unknown(String),
    #[error("no configuration file given (use -f)")]
    NoConfig,
}

pub fn parse_args(args: &[String]) -> Result<Options, UsageError> {
    let mut o = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| UsageError::MissingArgument(flag.to_string()))
        };
        match a.as_str() {
            "-f" => o.files.push(PathBuf::from(value("-f")?)),
            "-p" => o.pidfile = Some(PathBuf::from(value("-p")?)),
            "-c" => o.check_only = true,
            "-d" | "-db" => o.debug = true,
            "-D" => o.daemon = true,
            "-q" => o.quiet = true,
            "-dW" => o.zero_warning = true,
            "--dump" => o.dump = true,
            "-v" | "-V" => o.version = o.version.max(1),
            "-vv" => o.version = 2,
            "--" => {
                o.files.extend(it.by_ref().map(PathBuf::from));
            }
            other => return Err(UsageError::Unknown(other.to_string())),
        }
    }
    if o.files.is_empty() && o.version == 0 {
        return Err(UsageError::NoConfig);
    }
    Ok(o)
}

fn version_text(level: u8) -> String {
    let mut s =
        format!("sluice version {VERSION} - a reverse proxy that speaks HAProxy's language\n");
    if level >= 2 {
        s.push_str("Build options :\n  TLS: none yet\n  HTTP/1.1 engine: own codec on httparse\n  Runtime: tokio multi-threaded\n");
    }
    s
}

fn alert(pid: u32, msg: &str) {
    eprintln!("{:<10} ({pid}) : {msg}", "[ALERT]");
}

/// The diagnostics as HAProxy prints them: its two NOTICE lines (version,
/// executable) come right before the first warning or alert.
pub fn report(diags: &[config::Diagnostic], pid: u32) -> String {
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
    let pid = std::process::id();
    let loaded = config::load(&opts.files);
    if opts.dump {
        print!("{}", config::dump(&loaded.statements));
    }
    if !opts.quiet {
        eprint!("{}", report(&loaded.diagnostics, pid));
    }
    let has_warnings = loaded.has_warnings();
    let Some(cfg) = loaded.config else {
        return 1;
    };
    if has_warnings && (opts.zero_warning || cfg.global.zero_warning) {
        if !opts.quiet {
            alert(
                pid,
                "config : Some warnings were found and 'zero-warning' is set. Aborting.",
            );
        }
        return 1;
    }
    if opts.check_only {
        let listens =
            cfg.proxies.iter().any(|p| !p.binds.is_empty()) || !cfg.global.stats_sockets.is_empty();
        if !listens {
            if !opts.quiet {
                println!(
                    "Configuration file has no error but will not start (no listener) => exit(2)."
                );
            }
            return 2;
        }
        if !opts.quiet {
            if has_warnings {
                println!("Warnings were found.");
            }
            println!("Configuration file is valid");
        }
        return 0;
    }
    run(cfg, &opts)
}

/// Binds every listener (before daemonizing, so errors reach the terminal),
/// then serves until a stop signal.
fn run(cfg: Config, opts: &Options) -> i32 {
    let pid = std::process::id();
    let mut bound: Vec<(Arc<str>, SocketAddr, std::net::TcpListener)> = Vec::new();
    for p in cfg.proxies.iter().filter(|p| p.kind.has_frontend()) {
        for b in &p.binds {
            for addr in &b.addrs {
                match crate::listener::bind_std(*addr) {
                    Ok(l) => bound.push((Arc::from(p.name.as_str()), *addr, l)),
                    Err(e) => {
                        alert(
                            pid,
                            &format!(
                                "Starting frontend {}: cannot bind socket ({}) [{}]",
                                p.name,
                                errno_text(&e),
                                addr
                            ),
                        );
                        return 1;
                    }
                }
            }
        }
    }
    if (opts.daemon || cfg.global.daemon)
        && let Err(e) = crate::process::daemonize()
    {
        alert(pid, &format!("cannot go to background: {e}"));
        return 1;
    }
    let pidfile = opts.pidfile.clone().or(cfg.global.pidfile.clone());
    if let Some(path) = &pidfile
        && let Err(e) = std::fs::write(path, format!("{}\n", std::process::id()))
    {
        alert(
            std::process::id(),
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            alert(pid, &format!("cannot start the runtime: {e}"));
            return 1;
        }
    };
    let code = runtime.block_on(serve(cfg, opts.files.clone(), bound, threads as u32));
    if let Some(path) = &pidfile {
        let _ = std::fs::remove_file(path);
    }
    code
}

async fn serve(
    cfg: Config,
    sources: Vec<PathBuf>,
    bound: Vec<(Arc<str>, SocketAddr, std::net::TcpListener)>,
    threads: u32,
) -> i32 {
    let pid = std::process::id();
    crate::backend::counters::start_coarse_clock();
    let rt = Runtime::new(&cfg, threads);
    crate::log::event::attach(&rt);
    let snap = rt.snapshot();
    let global_max = Arc::new(Semaphore::new(
        cfg.global
            .maxconn
            .unwrap_or(crate::routing::DEFAULT_MAXCONN) as usize,
    ));
    for sock in &cfg.global.stats_sockets {
        if let Err(e) = start_stats_socket(sock, &rt) {
            let what = match sock.tcp {
                Some(addr) => format!("cannot bind socket ({}) [{addr}]", errno_text(&e)),
                None => format!(
                    "cannot bind UNIX socket ({}) [{}]",
                    errno_text(&e),
                    sock.path.display()
                ),
            };
            alert(pid, &format!("Starting proxy GLOBAL: {what}"));
            return 1;
        }
    }
    drop(snap);
    let sup = match crate::reload::Supervisor::start(rt.clone(), sources, global_max, bound) {
        Ok(sup) => sup,
        Err(e) => {
            alert(pid, &format!("cannot start listeners: {e}"));
            return 1;
        }
    };
    tokio::spawn(crate::reload::reload_on_signals(sup));
    tracing::info!("sluice {VERSION} started (pid {pid})");
    crate::process::wait_for_stop().await;
    0
}

/// Binds one `stats socket` (UNIX path or `ipv4@`/`ipv6@` address) and
/// serves the CLI on it.
fn start_stats_socket(
    sock: &crate::config::model::StatsSocket,
    rt: &Arc<Runtime>,
) -> std::io::Result<()> {
    match sock.tcp {
        Some(addr) => {
            let listener = crate::listener::bind_std(addr)?;
            tokio::spawn(crate::stats::cli::serve_tcp(
                listener,
                sock.level,
                rt.clone(),
            ));
        }
        None => {
            let listener = crate::stats::cli::bind_unix(sock)?;
            tokio::spawn(crate::stats::cli::serve_listener(
                listener,
                sock.clone(),
                rt.clone(),
            ));
        }
    }
    Ok(())
}

fn errno_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "Address already in use".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        std::io::ErrorKind::AddrNotAvailable => "Cannot assign requested address".to_string(),
        _ => e.to_string(),
    }
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
            parse_args(&args(&["-x"])),
            Err(UsageError::Unknown(_))
        ));
        assert!(matches!(
            parse_args(&args(&["-f"])),
            Err(UsageError::MissingArgument(_))
        ));
        let o = parse_args(&args(&["--", "a", "b"])).unwrap();
        assert_eq!(o.files.len(), 2);
    }
}
