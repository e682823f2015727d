//! `default-path current|config|parent|origin <dir>` (the global
//! keyword): where the relative
//! paths of the files a configuration reads (error files, maps and ACL
//! pattern files, certificates, keys, `return file`) start from, as
//! HAProxy 2.6's temporary chdir() while it reads each file would have
//! them. The parser sets the directory of the file it reads; the places
//! that read files resolve their paths through [`resolve`]. Nothing
//! changes the process's own directory.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// A `default-path` policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum DefaultPath {
    /// Where the process started (no change).
    #[default]
    Current,
    /// The directory of the configuration file being read.
    Config,
    /// Its parent.
    Parent,
    /// The given directory.
    Origin(PathBuf),
}

impl DefaultPath {
    /// The directory relative paths start from in file `cfg` (None: the
    /// process's).
    pub(crate) fn base(&self, cfg: &str) -> Option<PathBuf> {
        let dir = cfg.rfind('/').map(|i| &cfg[..i.max(1)]);
        match self {
            DefaultPath::Current => None,
            DefaultPath::Config => dir.map(PathBuf::from),
            DefaultPath::Parent => Some(match dir {
                Some(d) => Path::new(d).join(".."),
                None => PathBuf::from(".."),
            }),
            DefaultPath::Origin(p) => Some(p.clone()),
        }
    }
}

thread_local! {
    static BASE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// Makes `base` where relative paths start from on this thread (the
/// parser's), until the next call.
pub(crate) fn set_base(base: Option<PathBuf>) {
    BASE.with(|b| *b.borrow_mut() = base);
}

/// `path` as the configuration being read means it: a relative one from
/// the `default-path` in force.
pub(crate) fn resolve(path: impl AsRef<Path>) -> PathBuf {
    let path = path.as_ref();
    if path.is_absolute() {
        return path.to_path_buf();
    }
    BASE.with(|b| match &*b.borrow() {
        Some(base) => base.join(path),
        None => path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases() {
        assert_eq!(
            DefaultPath::Config.base("/etc/lb/h.cfg"),
            Some(PathBuf::from("/etc/lb"))
        );
        assert_eq!(DefaultPath::Config.base("h.cfg"), None);
        assert_eq!(
            DefaultPath::Parent.base("/etc/lb/h.cfg"),
            Some(PathBuf::from("/etc/lb/.."))
        );
        assert_eq!(DefaultPath::Parent.base("h.cfg"), Some(PathBuf::from("..")));
        assert_eq!(DefaultPath::Current.base("/etc/lb/h.cfg"), None);
        set_base(Some(PathBuf::from("/x")));
        assert_eq!(resolve("a/b"), PathBuf::from("/x/a/b"));
        assert_eq!(resolve("/a"), PathBuf::from("/a"));
        set_base(None);
        assert_eq!(resolve("a"), PathBuf::from("a"));
    }
}
