//! HTTP dates (RFC 9110 5.6.7) read as HAProxy's `parse_http_date` reads
//! them: the IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
//! RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime's
//! (`Sun Nov  6 08:49:37 1994`), to Unix seconds.

const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Unix seconds of the date in `v`, if it is one of the three forms.
pub(crate) fn parse(v: &[u8]) -> Option<i64> {
    let v = crate::wire::h1::trim(v);
    let comma = v.iter().position(|&b| b == b',');
    match comma {
        Some(3) => imf(&v[4..]),
        Some(_) => rfc850(&v[comma? + 1..]),
        None => asctime(v),
    }
}

fn num(v: &[u8]) -> Option<i64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn month(v: &[u8]) -> Option<i64> {
    MONTHS.iter().position(|m| *m == v).map(|i| i as i64 + 1)
}

/// `hh:mm:ss`.
fn clock(v: &[u8]) -> Option<i64> {
    if v.len() != 8 || v[2] != b':' || v[5] != b':' {
        return None;
    }
    let (h, m, s) = (num(&v[..2])?, num(&v[3..5])?, num(&v[6..])?);
    (h < 24 && m < 60 && s < 61).then_some(h * 3600 + m * 60 + s)
}

/// ` 06 Nov 1994 08:49:37 GMT`.
fn imf(v: &[u8]) -> Option<i64> {
    let w: Vec<&[u8]> = v.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    let [d, mo, y, t, gmt] = w[..] else {
        return None;
    };
    (gmt == b"GMT").then_some(())?;
    Some(days(num(y)?, month(mo)?, num(d)?)? * 86400 + clock(t)?)
}

/// ` 06-Nov-94 08:49:37 GMT`.
fn rfc850(v: &[u8]) -> Option<i64> {
    let w: Vec<&[u8]> = v.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    let [date, t, gmt] = w[..] else {
        return None;
    };
    (gmt == b"GMT").then_some(())?;
    let p: Vec<&[u8]> = date.split(|&b| b == b'-').collect();
    let [d, mo, y] = p[..] else {
        return None;
    };
    let y = num(y)?;
    let y = if y < 70 { 2000 + y } else { 1900 + y };
    Some(days(y, month(mo)?, num(d)?)? * 86400 + clock(t)?)
}

/// `Sun Nov  6 08:49:37 1994`.
fn asctime(v: &[u8]) -> Option<i64> {
    let w: Vec<&[u8]> = v.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    let [_, mo, d, t, y] = w[..] else {
        return None;
    };
    Some(days(num(y)?, month(mo)?, num(d)?)? * 86400 + clock(t)?)
}

/// Days from 1970-01-01 to the date (the proleptic Gregorian calendar).
fn days(y: i64, m: i64, d: i64) -> Option<i64> {
    if !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146097 + doe - 719468)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_three_forms() {
        for v in [
            &b"Sun, 06 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                super::parse(v),
                Some(784111777),
                "{}",
                String::from_utf8_lossy(v)
            );
        }
        assert_eq!(super::parse(b"yesterday"), None);
    }
}
