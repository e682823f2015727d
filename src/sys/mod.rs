//! The operating system: process life cycle (daemon, signals, privileges,
//! limits, affinity, systemd notifications) and the worker threads.

pub(crate) mod abns;
pub(crate) mod cfgdir;
pub(crate) mod env;
pub(crate) mod peer;
pub(crate) mod process;
pub(crate) mod slab;
pub(crate) mod sockmarks;
pub(crate) mod time;
pub(crate) mod unix;
pub(crate) mod workers;

/// The C library's text for an OS error, as HAProxy prints it
/// ("Connection refused"): Rust's own display appends " (os error N)".
/// EPERM and EACCES share an `ErrorKind` but not a text, hence the errno.
pub(crate) fn strerror(e: &std::io::Error) -> String {
    if e.raw_os_error().is_some() {
        let text = e.to_string();
        if let Some(cut) = text.find(" (os error ") {
            return text[..cut].to_string();
        }
    }
    match e.kind() {
        std::io::ErrorKind::AddrInUse => "Address already in use".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        std::io::ErrorKind::AddrNotAvailable => "Cannot assign requested address".to_string(),
        std::io::ErrorKind::ConnectionRefused => "Connection refused".to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn strerror_is_the_c_library_text() {
        let reset = std::io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(super::strerror(&reset), "Connection reset by peer");
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(super::strerror(&refused), "Connection refused");
    }
}
