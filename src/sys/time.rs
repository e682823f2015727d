//! Calendar time through the C library, where HAProxy's converters format
//! dates with `strftime` (their formats are C's).

/// `secs` since the epoch formatted by `strftime(fmt)`, in local time when
/// `local`, else UTC; `None` when the date or the format cannot be shown.
pub(crate) fn strftime(fmt: &str, secs: i64, local: bool) -> Option<String> {
    let fmt = std::ffi::CString::new(fmt).ok()?;
    let t = secs as libc::time_t;
    // SAFETY: `tm` is plain data filled by the *_r functions, which touch
    // only the pointers given; the buffer's length is passed to strftime.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = if local {
            libc::localtime_r(&t, &mut tm)
        } else {
            libc::gmtime_r(&t, &mut tm)
        };
        if ok.is_null() {
            return None;
        }
        let mut buf = [0u8; 512];
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm);
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_utc() {
        assert_eq!(
            super::strftime("%a, %d %b %Y %T", 1_000_000_000, false).as_deref(),
            Some("Sun, 09 Sep 2001 01:46:40")
        );
    }
}
