//! `log-format` rendering, once per logged request, of a format compiled
//! with the configuration (`config::log_format`), by HAProxy 2.6's rules:
//! runs of spaces are one separator, printed only after something was
//! printed; `+Q` quotes text values (a missing one is `""`, else `-`).

use std::fmt::Write as _;

use crate::config::log_format::{LogFormat, Node, Var};
use crate::observe::log::time::{Date, date_clf_ms, date_gmt, date_local_tz};

/// Everything a log line may show, gathered when it is emitted.
pub(crate) trait Source {
    fn var(&self, var: Var, out: &mut Value<'_>);
    /// What the `%[...]` expressions of the line are evaluated against.
    fn sample_ctx(&self) -> crate::sample::Ctx<'_>;
}

/// Where a variable writes its value.
pub(crate) struct Value<'a> {
    out: &'a mut String,
    quote: bool,
    /// `+X`: the values [`Value::id_num`] and [`Value::addr`] write are
    /// hexadecimal.
    hex: bool,
    /// Something was written.
    wrote: bool,
    /// A missing value prints `-` (see `LogFormat::mandatory`).
    mandatory: bool,
}

impl Value<'_> {
    /// A text value; `None` prints `-` (or `""` when quoted).
    pub(crate) fn text(&mut self, s: Option<&str>) {
        match (s, self.quote) {
            (Some(s), true) => {
                self.out.push('"');
                self.out.push_str(s);
                self.out.push('"');
            }
            (Some(s), false) => self.out.push_str(s),
            (None, true) => self.out.push_str("\"\""),
            (None, false) if self.mandatory => self.out.push('-'),
            (None, false) => {}
        }
        self.wrote = true;
    }
    /// A value that is never quoted (numbers, dates, flags).
    pub(crate) fn raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.wrote = true;
    }
    pub(crate) fn num(&mut self, n: i64) {
        let _ = write!(self.out, "{n}");
        self.wrote = true;
    }
    /// A port, a date in seconds, a counter or a pid: with `+X`, at least
    /// four upper-case hexadecimal digits, as HAProxy writes them.
    pub(crate) fn id_num(&mut self, n: i64) {
        if self.hex {
            let _ = write!(self.out, "{:04X}", n as u64);
            self.wrote = true;
        } else {
            self.num(n);
        }
    }
    /// An address (`text` is how it reads): with `+X`, an IPv4 address is
    /// its eight hexadecimal digits.
    pub(crate) fn addr(&mut self, ip: Option<std::net::IpAddr>, text: Option<&str>) {
        match ip {
            Some(std::net::IpAddr::V4(v4)) if self.hex => {
                for b in v4.octets() {
                    let _ = write!(self.out, "{b:02X}");
                }
                self.wrote = true;
            }
            _ => self.text(text),
        }
    }
    /// A number with HAProxy's `+` in front when `plus` (bytes of a line
    /// logged early with `option logasap`, retries that ended redispatched).
    pub(crate) fn num_marked(&mut self, plus: bool, n: i64) {
        if plus {
            self.out.push('+');
        }
        self.num(n);
    }
    pub(crate) fn date(&mut self, d: &Date, kind: Var) {
        match kind {
            Var::AcceptDateGmt | Var::RequestDateGmt => date_gmt(d, self.out),
            Var::AcceptDateLocal | Var::RequestDateLocal => date_local_tz(d, self.out),
            _ => date_clf_ms(d, self.out),
        }
        self.wrote = true;
    }
    /// Nothing (absent captures).
    #[cfg(test)]
    pub(crate) fn nothing(&mut self) {}

    /// `%hr`/`%hs` (`long`: `%hrl`/`%hsl`), HAProxy's way: `{a|b}`, or the
    /// values apart with spaces and `-` for one never captured (`""`
    /// quoted); control bytes, non-ASCII and `"#{|}` as `#XX`. Nothing
    /// without captures.
    pub(crate) fn captures(&mut self, caps: &[Option<Vec<u8>>], long: bool) {
        if caps.is_empty() {
            return;
        }
        let q = self.quote;
        if !long && q {
            self.out.push('"');
        }
        if !long {
            self.out.push('{');
        }
        for (i, c) in caps.iter().enumerate() {
            if i > 0 {
                self.out.push(if long { ' ' } else { '|' });
            }
            if long && q {
                self.out.push('"');
            }
            match c {
                Some(v) => escape_capture(v, self.out),
                None if long && !q => self.out.push('-'),
                None => {}
            }
            if long && q {
                self.out.push('"');
            }
        }
        if !long {
            self.out.push('}');
            if q {
                self.out.push('"');
            }
        }
        self.wrote = true;
    }
}

fn escape_capture(v: &[u8], out: &mut String) {
    for &b in v {
        if !(0x20..0x7f).contains(&b) || matches!(b, b'"' | b'#' | b'{' | b'|' | b'}') {
            let _ = write!(out, "#{b:02X}");
        } else {
            out.push(b as char);
        }
    }
}

impl LogFormat {
    /// Renders one line (without line feed) into `out`.
    pub(crate) fn render(&self, src: &dyn Source, out: &mut String) {
        let mut last_space = true;
        // Built at the first expression; one text buffer serves them all.
        let mut sample_cx = None;
        let mut text = Vec::new();
        for node in self.nodes() {
            match node {
                Node::Text(t) => {
                    out.push_str(t);
                    last_space = false;
                }
                Node::Sep => {
                    if !last_space {
                        out.push(' ');
                        last_space = true;
                    }
                }
                Node::Var { var, quote, hex } => {
                    let mut v = Value {
                        out,
                        quote: *quote,
                        hex: *hex,
                        wrote: false,
                        mandatory: self.mandatory,
                    };
                    src.var(*var, &mut v);
                    if v.wrote {
                        last_space = false;
                    }
                }
                Node::Sample { expr, quote } => {
                    let cx = sample_cx.get_or_insert_with(|| src.sample_ctx());
                    let mut v = Value {
                        out,
                        quote: *quote,
                        hex: false,
                        wrote: false,
                        mandatory: self.mandatory,
                    };
                    text.clear();
                    if let Some(s) = expr.eval(cx) {
                        s.write_text(&mut text);
                    }
                    // A missing or empty sample is `-` in a log line, as
                    // HAProxy prints it.
                    if text.is_empty() {
                        v.text(None);
                    } else {
                        v.text(Some(&String::from_utf8_lossy(&text)));
                    }
                    last_space = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with a `host` header, as the expressions see it.
    struct S(crate::wire::h1::Head);
    impl Source for S {
        fn var(&self, var: Var, out: &mut Value<'_>) {
            match var {
                Var::ClientIp => out.text(Some("127.0.0.1")),
                Var::ClientPort => out.num(4242),
                Var::Frontend | Var::FrontendTransport => out.text(Some("fe")),
                Var::CapturedReqCookie | Var::CapturedRespCookie => out.text(None),
                Var::CapturedReqHeaders
                | Var::CapturedRespHeaders
                | Var::CapturedReqHeadersLong
                | Var::CapturedRespHeadersLong => out.nothing(),
                Var::RequestLine => out.text(Some("GET / HTTP/1.1")),
                Var::Status => out.num(200),
                _ => out.raw("0"),
            }
        }
        fn sample_ctx(&self) -> crate::sample::Ctx<'_> {
            crate::sample::Ctx {
                src: Some([127, 0, 0, 1].into()),
                req: Some(&self.0),
                ..Default::default()
            }
        }
    }

    fn render(f: &str) -> String {
        let head = crate::wire::h1::Head::parse_request(bytes::Bytes::from_static(
            b"GET / HTTP/1.1\r\nhost: Example\r\n\r\n",
        ))
        .unwrap();
        let mut s = String::new();
        // Rendering only: where the fetches may be used is the compiler's
        // test (a log line refuses `req.hdr`, as HAProxy does).
        LogFormat::compile_in(f, crate::sample::Stage::ANY)
            .unwrap()
            .render(&S(head), &mut s);
        s
    }

    #[test]
    fn quoting_separators_and_fetches() {
        assert_eq!(
            render("%ci:%cp %ST %{+Q}r"),
            "127.0.0.1:4242 200 \"GET / HTTP/1.1\""
        );
        assert_eq!(render("%CC %hr %hs %{+Q}r"), "- \"GET / HTTP/1.1\"");
        assert_eq!(
            render("%{+Q}o %{-Q}ci - %ft %CC %CS %hrl %hsl"),
            "127.0.0.1 - \"fe\" \"\" \"\" "
        );
        assert_eq!(
            render("%{+Q}[src] %[req.hdr(host),lower] %[hdr(x)] 100%%"),
            "\"127.0.0.1\" example - 100%"
        );
    }
}
