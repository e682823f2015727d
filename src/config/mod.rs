//! Configuration: text to a validated [`model::Config`]. Pure and fuzzable:
//! nothing here binds, spawns or touches the data plane.
//!
//! Pipeline: [`lexer`] splits lines into words, [`parser`] applies keyword
//! handlers per section (with `defaults` inheritance), [`validate`] does the
//! cross-proxy checks, then server host names are resolved.

pub mod addr;
pub mod diag;
pub mod keywords;
pub mod lexer;
pub mod model;
pub mod parser;
pub mod suggest;
pub mod units;
pub mod validate;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use diag::{Diagnostic, Level, render_report};

/// Result of loading a configuration.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `None` iff `diagnostics` holds at least one [`Level::Alert`].
    pub config: Option<model::Config>,
    /// In HAProxy's order, closing lines included; print with
    /// [`render_report`].
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    pub fn has_warnings(&self) -> bool {
        self.diagnostics.iter().any(|d| d.level == Level::Warning)
    }
}

/// One config source as given to -f: a file, or a directory whose regular,
/// non-hidden *.cfg files load in byte order.
pub fn expand_sources(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut out = Vec::new();
    for path in paths {
        let cannot = |e: std::io::Error| {
            Diagnostic::alert(
                None,
                format!(
                    "Cannot open configuration file/directory {} : {e}",
                    path.display()
                ),
            )
        };
        let meta = std::fs::metadata(path).map_err(cannot)?;
        if !meta.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut files: Vec<(Vec<u8>, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(path).map_err(cannot)? {
            let entry = entry.map_err(cannot)?;
            let name = entry.file_name();
            let bytes = name.as_encoded_bytes().to_vec();
            if bytes.starts_with(b".") || !bytes.ends_with(b".cfg") {
                continue;
            }
            let full = entry.path();
            // stat() follows symlinks, as HAProxy does.
            if std::fs::metadata(&full).is_ok_and(|m| m.is_file()) {
                files.push((bytes, full));
            }
        }
        files.sort();
        out.extend(files.into_iter().map(|(_, p)| p));
    }
    Ok(out)
}

/// Parse already-read texts (file name, content) in order, validate,
/// resolve host names. Pure apart from the `resolve` callback.
pub fn parse_texts(
    files: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
    resolve: addr::Resolver<'_>,
) -> Loaded {
    let mut st = parser::State::new(resolve);
    for (name, text) in files {
        st.parse_file(name, text, env);
    }
    let mut config = model::Config {
        global: st.global,
        proxies: st.proxies,
    };
    let mut diags = st.diags;
    validate::check(&mut config, &mut diags);
    let fatal_before_resolution = diags.iter().any(Diagnostic::is_alert);

    let mut unresolved = false;
    for p in &st.pending {
        let Some(proxy) = config.proxies.get_mut(p.proxy) else {
            continue;
        };
        let pname = proxy.name.clone();
        let Some(server) = proxy.servers.get_mut(p.server) else {
            continue;
        };
        match addr::resolve_host(&p.host, p.family, p.port, resolve) {
            Ok(ip) => server.addr = SocketAddr::new(ip, p.port),
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
    if fatal_before_resolution {
        diags.push(Diagnostic::alert(None, diag::FATAL_ERRORS));
    }
    let failed = diags.iter().any(Diagnostic::is_alert);
    Loaded {
        config: (!failed).then_some(config),
        diagnostics: diags,
    }
}

/// Convenience: expand sources, read files, use std::env and real
/// resolution (std::net::ToSocketAddrs).
pub fn load(paths: &[PathBuf]) -> Loaded {
    let failed = |d: Diagnostic| Loaded {
        config: None,
        diagnostics: vec![d],
    };
    let files = match expand_sources(paths) {
        Ok(f) => f,
        Err(d) => return failed(d),
    };
    let mut texts = Vec::with_capacity(files.len());
    for f in &files {
        match std::fs::read(f) {
            Ok(bytes) => texts.push((
                display_name(f),
                String::from_utf8_lossy(&bytes).into_owned(),
            )),
            Err(e) => {
                return failed(Diagnostic::alert(
                    None,
                    format!("Could not open configuration file {} : {e}", f.display()),
                ));
            }
        }
    }
    let env = |name: &str| std::env::var(name).ok();
    parse_texts(&texts, &env, &addr::system_resolve)
}

fn display_name(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests;
