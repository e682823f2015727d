//! Dates as HAProxy prints them in logs (local time unless the variable
//! says GMT), from one wall-clock reading.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down wall-clock time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Date {
    pub(crate) unix: i64,
    pub(crate) micros: u32,
    year: i32,
    mon: u8,
    day: u8,
    hour: u8,
    min: u8,
    sec: u8,
    /// Offset of local time from UTC, seconds.
    gmtoff: i32,
    g_year: i32,
    g_mon: u8,
    g_day: u8,
    g_hour: u8,
    g_min: u8,
    g_sec: u8,
}

impl Date {
    /// The year, local time.
    pub(crate) fn year(&self) -> i32 {
        self.year
    }

    pub(crate) fn now() -> Date {
        Date::from(SystemTime::now())
    }

    pub(crate) fn from(t: SystemTime) -> Date {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        let unix = d.as_secs() as i64;
        let tt = unix as libc::time_t;
        // SAFETY: plain C calls on stack values.
        let mut l: libc::tm = unsafe { std::mem::zeroed() };
        let mut g: libc::tm = unsafe { std::mem::zeroed() };
        unsafe {
            libc::localtime_r(&tt, &mut l);
            libc::gmtime_r(&tt, &mut g);
        }
        Date {
            unix,
            micros: d.subsec_micros(),
            year: l.tm_year + 1900,
            mon: l.tm_mon as u8,
            day: l.tm_mday as u8,
            hour: l.tm_hour as u8,
            min: l.tm_min as u8,
            sec: l.tm_sec as u8,
            gmtoff: l.tm_gmtoff as i32,
            g_year: g.tm_year + 1900,
            g_mon: g.tm_mon as u8,
            g_day: g.tm_mday as u8,
            g_hour: g.tm_hour as u8,
            g_min: g.tm_min as u8,
            g_sec: g.tm_sec as u8,
        }
    }

    pub(crate) fn millis(&self) -> u32 {
        self.micros / 1000
    }
}

/// `30/Nov/2026:03:47:35` (local time): how the CLF dates below begin.
fn clf_local(d: &Date, out: &mut String) {
    let _ = write!(
        out,
        "{:02}/{}/{:04}:{:02}:{:02}:{:02}",
        d.day,
        MONTHS[d.mon as usize % 12],
        d.year,
        d.hour,
        d.min,
        d.sec
    );
}

/// The local time's offset from UTC: sign, hours, minutes.
fn utc_offset(d: &Date) -> (char, u32, u32) {
    let sign = if d.gmtoff < 0 { '-' } else { '+' };
    let a = d.gmtoff.unsigned_abs();
    (sign, a / 3600, a % 3600 / 60)
}

/// `30/Nov/2026:03:47:35.273` (local time): `%t`, `%tr`.
pub(crate) fn date_clf_ms(d: &Date, out: &mut String) {
    clf_local(d, out);
    let _ = write!(out, ".{:03}", d.millis());
}

/// `30/Nov/2026:03:47:35 +0000` (UTC): `%T`, `%trg`.
pub(crate) fn date_gmt(d: &Date, out: &mut String) {
    let _ = write!(
        out,
        "{:02}/{}/{:04}:{:02}:{:02}:{:02} +0000",
        d.g_day,
        MONTHS[d.g_mon as usize % 12],
        d.g_year,
        d.g_hour,
        d.g_min,
        d.g_sec
    );
}

/// `30/Nov/2026:04:47:35 +0100` (local time with its offset): `%Tl`, `%trl`.
pub(crate) fn date_local_tz(d: &Date, out: &mut String) {
    clf_local(d, out);
    let (sign, h, m) = utc_offset(d);
    let _ = write!(out, " {sign}{h:02}{m:02}");
}

/// `Nov 30 03:47:35`, day space-padded (RFC 3164 header, local time).
pub(crate) fn syslog_date(d: &Date, out: &mut String) {
    let _ = write!(
        out,
        "{} {:2} {:02}:{:02}:{:02}",
        MONTHS[d.mon as usize % 12],
        d.day,
        d.hour,
        d.min,
        d.sec
    );
}

/// `2026-11-30T03:47:35.273901+00:00` (RFC 5424 and ISO headers).
pub(crate) fn iso_date(d: &Date, out: &mut String) {
    let (sign, h, m) = utc_offset(d);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{sign}{h:02}:{m:02}",
        d.year,
        d.mon + 1,
        d.day,
        d.hour,
        d.min,
        d.sec,
        d.micros,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn gmt_and_header_shapes() {
        let d = Date::from(UNIX_EPOCH + Duration::from_millis(1_796_010_455_273));
        let mut s = String::new();
        date_gmt(&d, &mut s);
        assert_eq!(s, "30/Nov/2026:03:47:35 +0000");
        let mut s = String::new();
        syslog_date(&d, &mut s);
        assert_eq!(s.len(), 15);
        let mut s = String::new();
        iso_date(&d, &mut s);
        assert_eq!(s.len(), 32);
    }

    /// The local-time forms, on a date whose offset is given (not the
    /// machine's time zone): west of UTC by 5:30, then east by 1:00.
    #[test]
    fn local_forms_with_an_offset() {
        let d = Date {
            unix: 0,
            micros: 273_901,
            year: 2026,
            mon: 10,
            day: 30,
            hour: 3,
            min: 7,
            sec: 5,
            gmtoff: -(5 * 3600 + 30 * 60),
            g_year: 2026,
            g_mon: 10,
            g_day: 30,
            g_hour: 8,
            g_min: 37,
            g_sec: 5,
        };
        let show = |f: fn(&Date, &mut String), d: &Date| {
            let mut s = String::new();
            f(d, &mut s);
            s
        };
        assert_eq!(show(date_clf_ms, &d), "30/Nov/2026:03:07:05.273");
        assert_eq!(show(date_local_tz, &d), "30/Nov/2026:03:07:05 -0530");
        assert_eq!(show(iso_date, &d), "2026-11-30T03:07:05.273901-05:30");
        let east = Date { gmtoff: 3600, ..d };
        assert_eq!(show(date_local_tz, &east), "30/Nov/2026:03:07:05 +0100");
        assert_eq!(show(iso_date, &east), "2026-11-30T03:07:05.273901+01:00");
    }
}
