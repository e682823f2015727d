//! UNIX stream sockets bound HAProxy's way: under a temporary name
//! beside the path, given their owner and mode, then renamed into place,
//! so a stale socket from an earlier run is replaced atomically and
//! clients never see a missing path.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Binds a UNIX stream socket at `path` as HAProxy does: at
/// `<path>.<pid>.tmp`, owner then `mode` applied, renamed over `path`
/// (`None` keeps the creator's uid, gid or mode).
pub fn bind_unix_at(
    path: &Path,
    mode: Option<u32>,
    (uid, gid): (Option<u32>, Option<u32>),
) -> io::Result<std::os::unix::net::UnixListener> {
    // Only ever replace a socket: a regular file at that path is someone
    // else's data (most likely a typo in the config).
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.file_type().is_socket()
    {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    let tmp = tmp_path(path);
    let _ = std::fs::remove_file(&tmp);
    let listener = std::os::unix::net::UnixListener::bind(&tmp)?;
    let finish = || -> io::Result<()> {
        // As HAProxy: owner, then mode, on the temporary name, so the
        // socket appears at `path` with its final permissions.
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::chown(&tmp, uid, gid)
                .map_err(|e| io::Error::new(e.kind(), SocketOwnershipError(e)))?;
        }
        if let Some(mode) = mode {
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        }
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = finish() {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The owner given by `uid`/`gid`/`user`/`group` could not be set (as a
/// non-root process giving the socket to another user). Carried inside the
/// `io::Error` of [`bind_unix_at`] so the start-up alert can say so as
/// HAProxy does.
#[derive(Debug, thiserror::Error)]
#[error("cannot change UNIX socket ownership")]
pub struct SocketOwnershipError(#[source] pub io::Error);

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{}.tmp", std::process::id()));
    PathBuf::from(s)
}
