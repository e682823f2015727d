//! Configuration: text to a validated [`model::Config`]. Pure and fuzzable:
//! nothing here binds, spawns or touches the data plane.
//!
//! Pipeline: [`lexer`] splits lines into words, [`parser`] applies keyword
//! handlers per section (with `defaults` inheritance), [`validate`] does the
//! cross-proxy checks, then server host names are resolved.

pub(crate) mod log;
pub(crate) mod log_format;
pub(crate) mod log_forward;
pub(crate) mod mailers;
#[cfg(test)]
mod matrix;
pub(crate) mod ring;

pub mod addr;
pub(crate) mod check_proto;
pub(crate) mod cond;
pub(crate) mod diag;
pub(crate) mod external_check;
pub(crate) mod extras;
pub(crate) mod fcgi;
pub mod keywords;
pub(crate) mod lexer;
pub mod model;
pub(crate) mod parser;
pub(crate) mod spoe;
pub(crate) mod suggest;
pub(crate) mod table;
pub(crate) mod table_check;
pub(crate) mod units;
pub(crate) mod validate;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub(crate) use diag::{Diagnostic, Level};
pub(crate) use parser::dynamic_server;

/// Result of loading a configuration.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `None` iff `diagnostics` holds at least one [`Level::Alert`].
    pub config: Option<model::Config>,
    /// In HAProxy's order, closing lines included; print with
    /// [`render_report`].
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// The statements in effect (after `.if` blocks, with variables
    /// expanded), in load order; see [`dump`].
    pub(crate) statements: Vec<parser::Statement>,
}

impl Loaded {
    /// Whether the global section says `quiet` (read even when the
    /// configuration has errors: HAProxy prints none of them then).
    pub(crate) fn says_quiet(&self) -> bool {
        self.statements
            .iter()
            .any(|s| !s.header && s.words.first().is_some_and(|w| w == "quiet"))
    }

    pub(crate) fn has_warnings(&self) -> bool {
        self.diagnostics.iter().any(|d| d.level == Level::Warning)
    }
}

/// One file to load, and whether it continues the section the previous
/// file ended in (only files of a split-directory layout do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    pub(crate) continues: bool,
}

/// A file's text, ready to parse.
#[derive(Debug, Clone)]
pub(crate) struct SourceText {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) continues: bool,
}

/// The files of the split-directory layout, in load order, after the
/// subdirectories are detected.
pub(crate) const SPLIT_FILES: &[&str] = &["global.cfg", "defaults.cfg", "frontend.cfg"];
pub(crate) const SPLIT_DIRS: &[&str] = &["frontend.d", "backend.d"];

/// Regular, non-hidden `*.cfg` files of `dir` in byte order (stat()
/// follows symlinks, as HAProxy does).
fn cfg_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let bytes = name.as_encoded_bytes().to_vec();
        if bytes.starts_with(b".") || !bytes.ends_with(b".cfg") {
            continue;
        }
        let full = entry.path();
        if std::fs::metadata(&full).is_ok_and(|m| m.is_file()) {
            files.push((bytes, full));
        }
    }
    files.sort();
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

/// Is `dir` a split-directory layout (it has `frontend.d/` or
/// `backend.d/`)?
pub(crate) fn is_split_layout(dir: &Path) -> bool {
    SPLIT_DIRS.iter().any(|d| dir.join(d).is_dir())
}

/// Expand the -f arguments into files. A file is itself. A directory with
/// a `frontend.d/` or `backend.d/` subdirectory is a split layout:
/// `global.cfg`, `defaults.cfg`, `frontend.cfg`, `frontend.d/*.cfg`,
/// `backend.d/*.cfg` (each folder in byte order), where each file after the
/// first continues the previous one's section, then any other `*.cfg` of
/// the directory in byte order, each starting at a section boundary. Any
/// other directory adds its `*.cfg` files in byte order, each starting at a
/// section boundary (HAProxy's rule).
pub(crate) fn expand_layout(paths: &[PathBuf]) -> Result<Vec<Source>, Diagnostic> {
    let mut out = Vec::new();
    for path in paths {
        let cannot = |p: &Path, e: std::io::Error| {
            Diagnostic::alert(
                None,
                format!(
                    "Cannot open configuration file/directory {} : {e}",
                    p.display()
                ),
            )
        };
        let meta = std::fs::metadata(path).map_err(|e| cannot(path, e))?;
        let plain = |p: PathBuf| Source {
            path: p,
            continues: false,
        };
        if !meta.is_dir() {
            out.push(plain(path.clone()));
            continue;
        }
        if !is_split_layout(path) {
            let files = cfg_files(path).map_err(|e| cannot(path, e))?;
            out.extend(files.into_iter().map(plain));
            continue;
        }
        let mut layout: Vec<PathBuf> = Vec::new();
        for f in SPLIT_FILES {
            let p = path.join(f);
            if std::fs::metadata(&p).is_ok_and(|m| m.is_file()) {
                layout.push(p);
            }
        }
        for d in SPLIT_DIRS {
            let p = path.join(d);
            if p.is_dir() {
                layout.extend(cfg_files(&p).map_err(|e| cannot(&p, e))?);
            }
        }
        for (i, p) in layout.into_iter().enumerate() {
            out.push(Source {
                path: p,
                continues: i > 0,
            });
        }
        let others = cfg_files(path).map_err(|e| cannot(path, e))?;
        out.extend(
            others
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_none_or(|n| !SPLIT_FILES.contains(&n))
                })
                .map(plain),
        );
    }
    Ok(out)
}

#[cfg(test)]
/// The files of [`expand_layout`], without the continuation flags.
pub(crate) fn expand_sources(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    expand_layout(paths).map(|v| v.into_iter().map(|s| s.path).collect())
}

/// Parse already-read texts (file name, content) in order, each starting
/// at a section boundary, validate, resolve host names. Pure apart from
/// the `resolve` callback.
pub fn parse_texts(
    files: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
    resolve: addr::Resolver<'_>,
) -> Loaded {
    let sources: Vec<SourceText> = files
        .iter()
        .map(|(name, text)| SourceText {
            name: name.clone(),
            text: text.clone(),
            continues: false,
        })
        .collect();
    parse_sources(&sources, env, resolve, None)
}

/// Checks a UNIX stats socket's directory; `Err` explains why the socket
/// cannot be created there.
pub(crate) type DirCheck<'a> = &'a dyn Fn(&Path) -> Result<(), String>;

/// [`parse_texts`] with continuation flags and an optional file-system
/// check of UNIX stats socket directories.
pub(crate) fn parse_sources(
    files: &[SourceText],
    env: &dyn Fn(&str) -> Option<String>,
    resolve: addr::Resolver<'_>,
    dir_check: Option<DirCheck<'_>>,
) -> Loaded {
    let flags = overrides();
    let mut st = parser::State::new(resolve);
    crate::sample::patref::begin();
    crate::sample::stick::begin();
    crate::sample::script::parsing_done();
    if flags.ssl_verify_none {
        // Before parsing, as HAProxy's -dV: a later `ssl-server-verify`
        // line still wins.
        st.global.ssl.server_verify_none = true;
    }
    for f in files {
        st.parse_file(&f.name, &f.text, env, f.continues);
    }
    st.finish();
    crate::sample::script::parsing_done();
    st.global.pat_refs = crate::sample::patref::finish();
    let table_uses = crate::sample::stick::take_uses();
    let statements = std::mem::take(&mut st.statements);
    if st.aborted {
        // `.alert`: HAProxy stops right there, without further checks.
        return Loaded {
            config: None,
            diagnostics: st.diags,
            statements,
        };
    }
    let mut config = model::Config {
        global: st.global,
        proxies: st.proxies,
    };
    default_resolvers(&mut config.global);
    let mut diags = st.diags;
    flags.apply(&mut config);
    validate::check(&mut config, &mut diags);
    table_check::check(&config, &table_uses, &mut diags);
    table_check::add_server_data(&mut config);
    if let Some(check) = dir_check {
        validate::stats_socket_dirs(&config, check, &mut diags);
    }
    let fatal_before_resolution = diags.iter().any(Diagnostic::is_alert);

    let mut unresolved = false;
    let mut unresolved_section = false;
    // As HAProxy, names are resolved only for an otherwise valid
    // configuration: a broken one fails at once, without waiting on DNS.
    let pending = if fatal_before_resolution {
        &[][..]
    } else {
        &st.pending[..]
    };
    for p in pending {
        let Some(proxy) = config.proxies.get_mut(p.proxy) else {
            continue;
        };
        let pname = proxy.name.clone();
        let Some(server) = proxy.servers.get_mut(p.server) else {
            continue;
        };
        // Resolved at run time (`resolvers`), or told how to start
        // (`init-addr`): the methods say what to start with.
        if server.resolve.is_some() || server.init_addr.is_some() {
            let methods = server
                .init_addr
                .clone()
                .unwrap_or_else(|| vec![model::InitAddr::Last, model::InitAddr::Libc]);
            let mut got = None;
            let mut none = false;
            // A name the system could not resolve before `none` is told,
            // as HAProxy tells it.
            let mut failed = false;
            for m in methods {
                match m {
                    // No server-state file is read yet: nothing to take.
                    model::InitAddr::Last => {}
                    model::InitAddr::Libc => {
                        match addr::resolve_host(&p.host, p.family, p.port, resolve) {
                            Ok(ip) => got = Some(ip),
                            Err(_) => failed = true,
                        }
                    }
                    model::InitAddr::Ip(ip) => got = Some(ip),
                    model::InitAddr::None => none = true,
                }
                if got.is_some() || none {
                    break;
                }
            }
            match got {
                Some(ip) => server.addr = SocketAddr::new(ip, p.port),
                None if none => {
                    // Without resolvers nothing will give it an address: it
                    // starts in maintenance, as HAProxy's does.
                    if server.resolve.is_none() {
                        server.opts.disabled = true;
                    }
                    if failed {
                        diags.push(Diagnostic::at(
                            Level::Warning,
                            &server.loc,
                            &format!("server {pname}/{}", server.name),
                            format!("could not resolve address '{}', disabling server.", p.host),
                        ));
                    }
                }
                None => diags.push(Diagnostic::at(
                    Level::Warning,
                    &server.loc,
                    &format!("server {pname}/{}", server.name),
                    format!("could not resolve address '{}', disabling server.", p.host),
                )),
            }
            continue;
        }
        match addr::resolve_host(&p.host, p.family, p.port, resolve) {
            Ok(ip) => server.addr = SocketAddr::new(ip, p.port),
            Err(_) if flags.resolve_dont_fail => {
                // -dr: the server starts in maintenance, without address.
                server.opts.disabled = true;
                diags.push(Diagnostic::at(
                    Level::Warning,
                    &server.loc,
                    &format!("server {pname}/{}", server.name),
                    format!("could not resolve address '{}', disabling server.", p.host),
                ));
            }
            Err(_) => {
                unresolved = true;
                diags.push(Diagnostic::at(
                    Level::Alert,
                    &server.loc,
                    &format!("server {pname}/{}", server.name),
                    format!("could not resolve address '{}'.", p.host),
                ));
            }
        }
    }
    if unresolved {
        diags.push(Diagnostic::alert(
            None,
            "Failed to initialize server(s) addr.",
        ));
    }
    for p in &config.proxies {
        for server in &p.servers {
            let Some(r) = &server.resolve else { continue };
            if !config
                .global
                .resolvers
                .iter()
                .any(|s| s.name == r.resolvers)
            {
                unresolved_section = true;
                diags.push(Diagnostic::new(
                    Level::Alert,
                    Some(server.loc.clone()),
                    format!(
                        "[{}] : backend '{}', server '{}': unable to find required resolvers '{}'",
                        server.loc, p.name, server.name, r.resolvers
                    ),
                ));
            }
        }
    }
    for p in &config.proxies {
        let missing = p.http_request.iter().filter_map(|r| match &r.action {
            model::HttpRequestAction::DoResolve(d)
                if !config
                    .global
                    .resolvers
                    .iter()
                    .any(|s| s.name == d.resolvers) =>
            {
                Some(&d.resolvers)
            }
            _ => None,
        });
        for name in missing {
            unresolved_section = true;
            diags.push(Diagnostic::alert(
                None,
                format!(
                    "Proxy '{}': Can't find resolvers section '{name}' for do-resolve action.",
                    p.name
                ),
            ));
        }
    }
    if fatal_before_resolution || unresolved_section {
        diags.push(Diagnostic::alert(None, diag::FATAL_ERRORS));
    }
    let failed = diags.iter().any(Diagnostic::is_alert);
    Loaded {
        config: (!failed).then_some(config),
        diagnostics: diags,
        statements,
    }
}

/// HAProxy 2.6's implicit `resolvers default` section, made of the
/// nameservers of /etc/resolv.conf, when no section has that name (HAProxy
/// lists it in `show resolvers`; servers may name it).
fn default_resolvers(global: &mut model::Global) {
    if global.resolvers.iter().any(|r| r.name == "default") {
        return;
    }
    let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    let loc = model::Loc {
        file: std::sync::Arc::from("/etc/resolv.conf"),
        line: 0,
    };
    let mut r = model::ResolversSection::new("default", loc.clone());
    for addr in parser::resolv_conf_nameservers(&text) {
        r.nameservers.push(model::Nameserver {
            name: addr.ip().to_string(),
            addr,
            tcp: false,
            loc: loc.clone(),
        });
    }
    global.resolvers.push(r);
}

/// What command-line flags change in every configuration loaded, reloads
/// included (HAProxy applies its flags to each load).
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    /// `-n <maxconn>`: the global `maxconn`, over the configuration's.
    pub(crate) maxconn: Option<u32>,
    /// `-N <maxpconn>`: the `maxconn` of frontends that set none.
    pub(crate) maxpconn: Option<u32>,
    /// `-dS`: as `nosplice`.
    pub(crate) no_splice: bool,
    /// `-dV`: as `ssl-server-verify none`, unless the configuration says.
    pub(crate) ssl_verify_none: bool,
    /// `-dr`: an unresolvable server name disables that server (warning)
    /// instead of failing the configuration.
    pub(crate) resolve_dont_fail: bool,
}

impl Overrides {
    fn apply(&self, config: &mut model::Config) {
        if let Some(n) = self.maxconn {
            config.global.maxconn = Some(n);
        }
        if let Some(n) = self.maxpconn {
            for p in config.proxies.iter_mut().filter(|p| p.kind.has_frontend()) {
                p.maxconn.get_or_insert(n);
            }
        }
        if self.no_splice {
            config.global.splice.disabled = true;
        }
    }
}

static OVERRIDES: std::sync::OnceLock<Overrides> = std::sync::OnceLock::new();

/// Set once, from the command line, before the first load.
pub(crate) fn set_overrides(o: Overrides) {
    let _ = OVERRIDES.set(o);
}

fn overrides() -> Overrides {
    OVERRIDES.get().cloned().unwrap_or_default()
}

/// Can a UNIX socket be created in `dir`? It must exist, be a directory,
/// and be writable and searchable by this process.
pub(crate) fn socket_dir_check(dir: &Path) -> Result<(), String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("directory '{}' does not exist", dir.display()));
        }
        Err(e) => return Err(format!("directory '{}' : {e}", dir.display())),
        Ok(m) if !m.is_dir() => {
            return Err(format!("'{}' is not a directory", dir.display()));
        }
        Ok(_) => {}
    }
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return Err(format!("invalid directory name '{}'", dir.display()));
    };
    // SAFETY: `c` is a valid NUL-terminated string for the whole call.
    let rc = unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) };
    if rc != 0 {
        return Err(format!(
            "directory '{}' is not writable ({})",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Convenience: expand sources, read files, use std::env and real
/// resolution (std::net::ToSocketAddrs), check stats socket directories.
pub(crate) fn load(paths: &[PathBuf]) -> Loaded {
    let failed = |d: Diagnostic| Loaded {
        config: None,
        diagnostics: vec![d],
        statements: Vec::new(),
    };
    let files = match expand_layout(paths) {
        Ok(f) => f,
        Err(d) => return failed(d),
    };
    let mut texts = Vec::with_capacity(files.len());
    for f in &files {
        match std::fs::read(&f.path) {
            Ok(bytes) => texts.push(SourceText {
                name: display_name(&f.path),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                continues: f.continues,
            }),
            Err(e) => {
                return failed(Diagnostic::alert(
                    None,
                    format!(
                        "Could not open configuration file {} : {e}",
                        f.path.display()
                    ),
                ));
            }
        }
    }
    let env = |name: &str| std::env::var(name).ok();
    parse_sources(&texts, &env, &addr::system_resolve, Some(&socket_dir_check))
}

/// The effective configuration as one text: every statement in effect,
/// in load order, with each file's name in a comment where it starts,
/// variables expanded and conditional blocks resolved. Words are quoted
/// so that the text reads back to the same words.
pub(crate) fn dump(statements: &[parser::Statement]) -> String {
    let mut out = String::new();
    let mut file: Option<&str> = None;
    for st in statements {
        if file != Some(&*st.loc.file) {
            if file.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("# {}\n", st.loc.file));
            file = Some(&st.loc.file);
        }
        if !st.header {
            out.push_str("    ");
        }
        let words: Vec<String> = st.words.iter().map(|w| quote_word(w)).collect();
        out.push_str(&words.join(" "));
        out.push('\n');
    }
    out
}

/// Quote a word for the config language so that it lexes back to itself.
pub(crate) fn quote_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:@,+=%!{}()[]^*~?<>|&;`".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        return w.to_string();
    }
    if !w.contains('\'') && w.chars().all(|c| !c.is_control()) {
        return format!("'{w}'");
    }
    let mut s = String::from("\"");
    for c in w.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '$' => s.push_str("\\$"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => s.push_str(&format!("\\x{:02x}", c as u32 & 0xff)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn display_name(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests;

/// The fuzzing harness, shared by `fuzz/` and the corpus replay test:
/// arbitrary bytes through the lexer, `.if` blocks, parser, validation,
/// (stubbed) resolution, rendering and `--dump`. Splitting the input on NUL
/// bytes gives several files, the odd ones continuing the previous file's
/// section. Must never panic.
#[doc(hidden)]
pub fn exercise(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let files: Vec<SourceText> = text
        .split('\0')
        .enumerate()
        .map(|(i, t)| SourceText {
            name: format!("f{i}.cfg"),
            text: t.to_string(),
            continues: i % 2 == 1,
        })
        .collect();
    let env = |name: &str| match name {
        "HOME" => Some("/root".to_string()),
        "LIST" => Some("a b  c".to_string()),
        _ => None,
    };
    let resolve = |host: &str, port: u16| -> Result<Vec<SocketAddr>, String> {
        if host == "localhost" {
            Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
        } else {
            Err("no DNS here".into())
        }
    };
    let check = |_: &Path| -> Result<(), String> { Ok(()) };
    let loaded = parse_sources(&files, &env, &resolve, Some(&check));
    for d in &loaded.diagnostics {
        let _ = d.render(1);
    }
    let dump = dump(&loaded.statements);
    let _ = parse_texts(&[("dump.cfg".to_string(), dump)], &env, &resolve);
}
