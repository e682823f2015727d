//! A syslog message a `log-forward` section received, read as HAProxy 2.6
//! reads it (RFC 5424, RFC 3164, a bare `<PRI>`, or no header at all), and
//! written again in the `format` of each target it goes to: unchanged
//! without one, its fields moved into the other formats' headers (an RFC
//! 3164 date becomes this year's RFC 3339 date with an unknown offset,
//! `-00:00`; a message without a date gets the time it arrived).

use crate::config::log::{Format, LogTarget};
use crate::observe::log::time::{Date, MONTHS, iso_date, syslog_date};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rfc5424,
    Rfc3164,
    /// `<PRI>` and the message.
    Pri,
    /// No header.
    Bare,
}

/// The parts of a received message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Received<'a> {
    kind: Kind,
    pri: Option<u32>,
    /// The date as written (RFC 3339 for RFC 5424, `Mmm dd hh:mm:ss`).
    date: Option<&'a str>,
    host: Option<&'a str>,
    tag: Option<&'a str>,
    pid: Option<&'a str>,
    msgid: Option<&'a str>,
    sd: Option<&'a str>,
    msg: &'a str,
}

/// `-` is RFC 5424's "no value".
fn field(s: &str) -> Option<&str> {
    (s != "-").then_some(s)
}

/// The first word of `s` and what follows its space.
fn word(s: &str) -> Option<(&str, &str)> {
    let (w, rest) = s.split_once(' ')?;
    (!w.is_empty()).then_some((w, rest))
}

/// RFC 5424's structured data at the start of `s`: `-` or `[...]`
/// elements (quoted values may hold `]` escaped), and the rest.
fn structured_data(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('-') {
        return Some(("-", rest));
    }
    let b = s.as_bytes();
    let mut i = 0;
    while b.get(i) == Some(&b'[') {
        let mut quoted = false;
        i += 1;
        loop {
            match b.get(i)? {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b']' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    (i > 0).then(|| s.split_at(i))
}

/// `Mmm dd hh:mm:ss` (RFC 3164's date) at the start of `s`.
fn bsd_date(s: &str) -> Option<&str> {
    let d = s.get(..15)?;
    let b = d.as_bytes();
    let ok = MONTHS.iter().any(|m| d.starts_with(m))
        && b[3] == b' '
        && (b[4] == b' ' || b[4].is_ascii_digit())
        && b[5].is_ascii_digit()
        && b[6] == b' '
        && b[9] == b':'
        && b[12] == b':'
        && [7, 8, 10, 11, 13, 14]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    ok.then_some(d)
}

impl<'a> Received<'a> {
    pub(crate) fn parse(text: &'a str) -> Received<'a> {
        let bare = Received {
            kind: Kind::Bare,
            pri: None,
            date: None,
            host: None,
            tag: None,
            pid: None,
            msgid: None,
            sd: None,
            msg: text,
        };
        let Some((pri, rest)) = text.strip_prefix('<').and_then(|r| {
            let end = r.find('>')?;
            let digits = &r[..end];
            if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|c| c.is_ascii_digit())
            {
                return None;
            }
            Some((digits.parse::<u32>().ok()?, &r[end + 1..]))
        }) else {
            return bare;
        };
        let pri_only = Received {
            kind: Kind::Pri,
            pri: Some(pri),
            msg: rest,
            ..bare
        };
        if let Some(r) = rest.strip_prefix("1 ") {
            let parsed = (|| {
                let (date, r) = word(r)?;
                let (host, r) = word(r)?;
                let (tag, r) = word(r)?;
                let (pid, r) = word(r)?;
                let (msgid, r) = word(r)?;
                let (sd, r) = structured_data(r)?;
                let msg = match r.strip_prefix(' ') {
                    Some(m) => m,
                    None if r.is_empty() => r,
                    None => return None,
                };
                Some(Received {
                    kind: Kind::Rfc5424,
                    pri: Some(pri),
                    date: field(date),
                    host: field(host),
                    tag: field(tag),
                    pid: field(pid),
                    msgid: field(msgid),
                    sd: field(sd),
                    msg,
                })
            })();
            return parsed.unwrap_or(pri_only);
        }
        let Some(date) = bsd_date(rest) else {
            return pri_only;
        };
        let Some((host, r)) = rest[15..].strip_prefix(' ').and_then(word) else {
            return pri_only;
        };
        let mut out = Received {
            kind: Kind::Rfc3164,
            date: Some(date),
            host: Some(host),
            ..pri_only
        };
        out.msg = r;
        // `tag[pid]: ` or `tag: `.
        let end = r.find(['[', ':', ' ']).unwrap_or(r.len());
        let (tag, after) = r.split_at(end);
        let (pid, after) = match after.strip_prefix('[').and_then(|a| a.split_once(']')) {
            Some((pid, a)) => (Some(pid), a),
            None => (None, after),
        };
        if !tag.is_empty()
            && let Some(msg) = after.strip_prefix(':')
        {
            out.tag = Some(tag);
            out.pid = pid;
            out.msg = msg.strip_prefix(' ').unwrap_or(msg);
        }
        out
    }

    /// The message's date in RFC 3339 (RFC 5424's), `now`'s without one.
    fn iso(&self, now: &Date, out: &mut String) {
        match (self.kind, self.date) {
            (Kind::Rfc5424, Some(d)) => out.push_str(d),
            (Kind::Rfc3164, Some(d)) => {
                let mon = MONTHS.iter().position(|m| d.starts_with(m)).unwrap_or(0) + 1;
                let day: u32 = d[4..6].trim().parse().unwrap_or(1);
                out.push_str(&format!(
                    "{}-{mon:02}-{day:02}T{}-00:00",
                    now.year(),
                    &d[7..15]
                ));
            }
            _ => iso_date(now, out),
        }
    }

    /// The message's date as RFC 3164 writes it, `now`'s without one.
    fn bsd(&self, now: &Date, out: &mut String) {
        match (self.kind, self.date) {
            (Kind::Rfc3164, Some(d)) => out.push_str(d),
            (Kind::Rfc5424, Some(d)) if d.len() >= 19 => {
                let mon: usize = d[5..7].parse().unwrap_or(1);
                let day: u32 = d[8..10].parse().unwrap_or(1);
                let name = MONTHS.get(mon.wrapping_sub(1)).unwrap_or(&"Jan");
                out.push_str(&format!("{name} {day:>2} {}", &d[11..19]));
            }
            _ => syslog_date(now, out),
        }
    }

    /// `tag[pid]: `, `tag: ` or nothing.
    fn tag_pid(&self, out: &mut String) {
        match (self.tag, self.pid) {
            (Some(t), Some(p)) => out.push_str(&format!("{t}[{p}]: ")),
            (Some(t), None) => out.push_str(&format!("{t}: ")),
            _ => {}
        }
    }

    /// The line `target` gets, or `None` when its level filters it out.
    pub(crate) fn render(&self, target: &LogTarget, now: &Date) -> Option<Vec<u8>> {
        // Without a priority: the target's facility, emergency.
        let mut pri = self.pri.unwrap_or(u32::from(target.facility) * 8);
        let sev = (pri & 7) as u8;
        let sent = target.severity(sev)?;
        pri = (pri & !7) | u32::from(sent);
        let mut h = String::with_capacity(64 + self.msg.len());
        let dash = |o: Option<&str>| o.unwrap_or("-").to_string();
        match target.format {
            Format::Default => match self.kind {
                // HAProxy writes an RFC 5424 header again only when it
                // names a host; without, the priority alone.
                Kind::Rfc5424 if self.host.is_some() => {
                    return self.render(&Self::as_format(target, Format::Rfc5424), now);
                }
                Kind::Rfc5424 => h.push_str(&format!("<{pri}>")),
                Kind::Rfc3164 => {
                    h.push_str(&format!("<{pri}>"));
                    self.bsd(now, &mut h);
                    h.push_str(&format!(" {} ", self.host.unwrap_or("localhost")));
                    self.tag_pid(&mut h);
                }
                Kind::Pri => h.push_str(&format!("<{pri}>")),
                Kind::Bare => {}
            },
            Format::Local => {
                h.push_str(&format!("<{pri}>"));
                self.bsd(now, &mut h);
                h.push(' ');
                self.tag_pid(&mut h);
            }
            Format::Rfc3164 => {
                h.push_str(&format!("<{pri}>"));
                self.bsd(now, &mut h);
                h.push_str(&format!(" {} ", self.host.unwrap_or("localhost")));
                self.tag_pid(&mut h);
            }
            Format::Rfc5424 => {
                h.push_str(&format!("<{pri}>1 "));
                self.iso(now, &mut h);
                h.push_str(&format!(
                    " {} {} {} {} {} ",
                    dash(self.host),
                    dash(self.tag),
                    dash(self.pid),
                    dash(self.msgid),
                    dash(self.sd)
                ));
            }
            Format::Priority => h.push_str(&format!("<{pri}>")),
            Format::Short => h.push_str(&format!("<{}>", pri & 7)),
            Format::Timed => {
                h.push_str(&format!("<{}>", pri & 7));
                self.iso(now, &mut h);
                h.push(' ');
            }
            Format::Iso => {
                self.iso(now, &mut h);
                h.push(' ');
            }
            Format::Raw => {}
        }
        h.push_str(self.msg);
        let mut v = h.into_bytes();
        v.truncate(target.len);
        v.push(b'\n');
        Some(v)
    }

    fn as_format(target: &LogTarget, format: Format) -> LogTarget {
        LogTarget {
            format,
            ..target.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::log::Sink;
    use std::time::{Duration, UNIX_EPOCH};

    fn target(format: Format) -> LogTarget {
        LogTarget {
            sink: Sink::Stdout,
            len: 1024,
            format,
            facility: 16,
            level: 7,
            minlevel: 0,
        }
    }

    fn show(text: &str, format: Format) -> String {
        let now = Date::from(UNIX_EPOCH + Duration::from_secs(1_796_010_455));
        let r = Received::parse(text);
        String::from_utf8(r.render(&target(format), &now).unwrap()).unwrap()
    }

    #[test]
    fn haproxys_conversions() {
        let bsd = "<30>Dec  4 23:29:50 myhost app[123]: hello world";
        assert_eq!(show(bsd, Format::Default), format!("{bsd}\n"));
        assert_eq!(
            show(bsd, Format::Local),
            "<30>Dec  4 23:29:50 app[123]: hello world\n"
        );
        assert_eq!(show(bsd, Format::Raw), "hello world\n");
        assert_eq!(
            show(bsd, Format::Rfc5424),
            "<30>1 2026-12-04T23:29:50-00:00 myhost app 123 - - hello world\n"
        );
        let rfc = "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\"] An application event";
        assert_eq!(show(rfc, Format::Default), format!("{rfc}\n"));
        assert_eq!(
            show(rfc, Format::Rfc3164),
            "<165>Oct 11 22:14:15 mymachine.example.com evntslog: An application event\n"
        );
        assert_eq!(show(rfc, Format::Short), "<5>An application event\n");
        assert_eq!(show("plain", Format::Priority), "<128>plain\n");
        assert_eq!(
            show(
                "<14>1 2003-10-11T22:14:15.003Z - - - - - dashes",
                Format::Default
            ),
            "<14>dashes\n"
        );
        assert_eq!(show("plain", Format::Default), "plain\n");
        assert_eq!(show("<13>app: short", Format::Default), "<13>app: short\n");
        assert_eq!(show("<999>bad pri", Format::Priority), "<999>bad pri\n");
    }
}
