//! The environment as the configuration changed it (`setenv`,
//! `presetenv`, `unsetenv`, `resetenv`): an overlay on the process's own,
//! which sluice never modifies (other threads may read it at any time).
//! The parser expands `${NAME}` through the overlay being built; once a
//! configuration runs, its overlay is what the `env` fetch and `show env`
//! read.

use std::ffi::OsString;
use std::sync::{Arc, RwLock};

/// What the global section did to the environment, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EnvEdits {
    /// `resetenv [<name>...]`: only these of the process's variables
    /// remain (those set after it are kept too).
    keep: Option<Vec<String>>,
    /// Values set (`Some`) or removed (`None`), the last one of a name
    /// first found.
    set: Vec<(String, Option<String>)>,
}

impl EnvEdits {
    /// `setenv` (`overwrite`) and `presetenv` (only when `base` and the
    /// edits so far have no such variable).
    pub(crate) fn set(
        &mut self,
        name: &str,
        value: &str,
        overwrite: bool,
        base: &dyn Fn(&str) -> Option<String>,
    ) {
        if !overwrite && self.get(name, base).is_some() {
            return;
        }
        self.set.retain(|(n, _)| n != name);
        self.set.push((name.to_string(), Some(value.to_string())));
    }

    /// `unsetenv <name>`.
    pub(crate) fn unset(&mut self, name: &str) {
        self.set.retain(|(n, _)| n != name);
        self.set.push((name.to_string(), None));
    }

    /// `resetenv [<name>...]`: every variable but these goes, the ones the
    /// configuration set before included.
    pub(crate) fn reset(&mut self, keep: &[String]) {
        self.set.retain(|(n, v)| v.is_some() && keep.contains(n));
        self.keep = Some(keep.to_vec());
    }

    /// The value of `name` with the edits applied to `base`.
    pub(crate) fn get(&self, name: &str, base: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        if let Some((_, v)) = self.set.iter().find(|(n, _)| n == name) {
            return v.clone();
        }
        if self
            .keep
            .as_ref()
            .is_some_and(|k| !k.iter().any(|n| n == name))
        {
            return None;
        }
        base(name)
    }

    /// Every variable with the edits applied to the process's: its own in
    /// their order (replaced values in place), then the new ones.
    pub(crate) fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        for (k, v) in std::env::vars_os() {
            let name = k.to_string_lossy();
            match self.set.iter().find(|(n, _)| *n == name) {
                Some((_, Some(v))) => out.push((k.clone(), v.into())),
                Some((_, None)) => {}
                None if self
                    .keep
                    .as_ref()
                    .is_some_and(|keep| !keep.iter().any(|n| *n == name)) => {}
                None => out.push((k, v)),
            }
        }
        for (n, v) in &self.set {
            if let Some(v) = v
                && !out.iter().any(|(k, _)| k.to_string_lossy() == *n)
            {
                out.push((n.into(), v.into()));
            }
        }
        out
    }
}

/// The running configuration's edits: read by the `env` fetch and `show
/// env`, replaced at each start and reload (rarely: a lock is fine).
static RUNNING: RwLock<Option<Arc<EnvEdits>>> = RwLock::new(None);

pub(crate) fn publish(edits: &EnvEdits) {
    let new = (*edits != EnvEdits::default()).then(|| Arc::new(edits.clone()));
    if let Ok(mut r) = RUNNING.write() {
        *r = new;
    }
}

fn running() -> Option<Arc<EnvEdits>> {
    RUNNING.read().ok().and_then(|r| r.clone())
}

/// A variable of the environment the configuration made.
pub(crate) fn var(name: &str) -> Option<OsString> {
    match running() {
        None => std::env::var_os(name),
        Some(e) => e.get(name, &|n| std::env::var(n).ok()).map(OsString::from),
    }
}

/// Every variable of the environment the configuration made.
pub(crate) fn vars() -> Vec<(OsString, OsString)> {
    match running() {
        None => std::env::vars_os().collect(),
        Some(e) => e.vars(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order() {
        let base = |n: &str| (n == "HOME" || n == "KEEP").then(|| format!("base-{n}"));
        let mut e = EnvEdits::default();
        e.set("FOO", "bar", true, &base);
        e.set("FOO", "baz", false, &base);
        e.set("HOME", "x", false, &base);
        assert_eq!(e.get("FOO", &base).as_deref(), Some("bar"));
        assert_eq!(e.get("HOME", &base).as_deref(), Some("base-HOME"));
        e.unset("HOME");
        assert_eq!(e.get("HOME", &base), None);
        e.reset(&["KEEP".to_string()]);
        assert_eq!(e.get("FOO", &base), None);
        assert_eq!(e.get("KEEP", &base).as_deref(), Some("base-KEEP"));
        e.set("NEW", "1", true, &base);
        assert_eq!(e.get("NEW", &base).as_deref(), Some("1"));
    }
}
