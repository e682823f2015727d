//! Numbers and time values as HAProxy writes them.

use std::time::Duration;

/// HAProxy's timers are signed 32-bit milliseconds.
const MAX_MS: u64 = i32::MAX as u64;

/// Why a time value was refused; the caller words the message (it names the
/// keyword).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TimeError {
    Empty,
    /// First character that is neither a digit nor part of a known unit.
    BadChar(char),
    Overflow,
}

/// Parse `<digits>[us|ms|s|m|h|d]`; a bare number is milliseconds. The
/// result is rounded up to whole milliseconds, so a non-zero value never
/// turns into 0 (= infinite) by accident.
pub(crate) fn parse_time(text: &str) -> Result<Duration, TimeError> {
    if text.is_empty() {
        return Err(TimeError::Empty);
    }
    let digits_end = text
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(text.len(), |(i, _)| i);
    let (digits, unit) = text.split_at(digits_end);
    if digits.is_empty() {
        // `ms` alone or `abc`: point at the first character.
        return Err(TimeError::BadChar(text.chars().next().unwrap_or(' ')));
    }
    let value: u64 = digits.parse().map_err(|_| TimeError::Overflow)?;
    // (numerator, denominator) turning `value` into milliseconds.
    let (mul, div): (u64, u64) = match unit {
        "" | "ms" => (1, 1),
        "us" => (1, 1000),
        "s" => (1000, 1),
        "m" => (60_000, 1),
        "h" => (3_600_000, 1),
        "d" => (86_400_000, 1),
        other => {
            // Report the first character that cannot belong to a unit.
            let bad = first_bad_unit_char(other);
            return Err(TimeError::BadChar(bad));
        }
    };
    let ms = value
        .checked_mul(mul)
        .ok_or(TimeError::Overflow)?
        .div_ceil(div);
    if ms > MAX_MS {
        return Err(TimeError::Overflow);
    }
    Ok(Duration::from_millis(ms))
}

fn first_bad_unit_char(unit: &str) -> char {
    // Accept a valid unit prefix (e.g. "ms" in "msx") then point past it.
    for prefix in ["us", "ms", "s", "m", "h", "d"] {
        if let Some(rest) = unit.strip_prefix(prefix)
            && let Some(c) = rest.chars().next()
        {
            return c;
        }
    }
    unit.chars().next().unwrap_or(' ')
}

/// HAProxy-like message for a bad time argument of `kw` (e.g. `timeout client`).
pub(crate) fn time_error_message(kw: &str, arg: &str, err: &TimeError) -> String {
    match err {
        TimeError::Empty => format!("'{kw}' expects an integer value (in milliseconds)"),
        TimeError::BadChar(c) => format!("unexpected character '{c}' in '{kw}'"),
        TimeError::Overflow => format!(
            "timer overflow in argument '{arg}' to '{kw}' (maximum value is 2147483647 ms or ~24.8 days)"
        ),
    }
}

/// A strict unsigned decimal integer (HAProxy's atol() would silently accept
/// `10abc`; a proxy config deserves better).
pub(crate) fn parse_uint(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `parse_uint` limited to u32.
pub(crate) fn parse_u32(text: &str) -> Option<u32> {
    parse_uint(text).and_then(|v| u32::try_from(v).ok())
}

/// C `atoi`: leading sign and digits, 0 when there are none.
pub(crate) fn atoi(s: &str) -> i64 {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = digits
        .chars()
        .take_while(char::is_ascii_digit)
        .fold(0i64, |acc, c| {
            acc.saturating_mul(10)
                .saturating_add(i64::from(c as u8 - b'0'))
        });
    if neg { -n } else { n }
}

/// HAProxy's `parse_size_err`: digits, then `k`, `m` or `g` (powers of
/// 1024), nothing after, within 32 bits. `Err` holds the character it
/// stops at (None: the end of the text).
pub(crate) fn parse_size(text: &str) -> Result<u32, Option<char>> {
    let b = text.as_bytes();
    let at = |i: usize| text[i..].chars().next();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return Err(at(0));
    }
    let mut v: u32 = 0;
    let mut i = 0;
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u32::from(d - b'0')))
            .ok_or(at(i))?;
        i += 1;
    }
    let shift = match b.get(i) {
        None => return Ok(v),
        Some(b'k' | b'K') => 10,
        Some(b'm' | b'M') => 20,
        Some(b'g' | b'G') => 30,
        Some(_) => return Err(at(i)),
    };
    if v > u32::MAX >> shift {
        return Err(at(i));
    }
    if b.len() > i + 1 {
        return Err(at(i + 1));
    }
    Ok(v << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("150000"), Ok(Duration::from_millis(150_000)));
        assert_eq!(parse_time("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_time("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("1d"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_time("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_time("1500us"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_time("0"), Ok(Duration::ZERO));
        assert_eq!(parse_time(""), Err(TimeError::Empty));
        assert_eq!(parse_time("abc"), Err(TimeError::BadChar('a')));
        assert_eq!(parse_time("5x"), Err(TimeError::BadChar('x')));
        assert_eq!(parse_time("5msx"), Err(TimeError::BadChar('x')));
        assert_eq!(parse_time("25d"), Err(TimeError::Overflow));
        assert_eq!(
            parse_time("99999999999999999999999"),
            Err(TimeError::Overflow)
        );
        assert_eq!(parse_time("10us"), Ok(Duration::from_millis(1)));
        assert_eq!(parse_time("-5"), Err(TimeError::BadChar('-')));
    }

    #[test]
    fn ints() {
        assert_eq!(parse_u32("4096"), Some(4096));
        assert_eq!(parse_u32("10abc"), None);
        assert_eq!(parse_u32(""), None);
        assert_eq!(parse_u32("-1"), None);
        assert_eq!(parse_u32("4294967296"), None);
    }
}
