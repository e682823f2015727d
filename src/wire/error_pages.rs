//! HAProxy's built-in error responses, byte for byte (reference §2.13).
//!
//! The 400 and 408 that HAProxy's H1 parser emits keep their capitalised
//! headers and close the connection; the others go through its HTX layer
//! and have lower-case headers.

use std::sync::OnceLock;

const CODES: [(u16, &str, &str); 19] = [
    // `monitor-uri`'s answer.
    (200, "OK", "Service ready."),
    (400, "Bad request", "Your browser sent an invalid request."),
    (
        401,
        "Unauthorized",
        "You need a valid user and password to access this content.",
    ),
    (404, "Not Found", "The resource could not be found."),
    // HAProxy's 407 page says "Unauthorized" too.
    (
        407,
        "Unauthorized",
        "You need a valid user and password to access this content.",
    ),
    (
        410,
        "Gone",
        "The resource is no longer available and will not be available again.",
    ),
    (
        413,
        "Payload Too Large",
        "The request entity exceeds the maximum allowed.",
    ),
    (
        421,
        "Misdirected Request",
        "Request sent to a non-authoritative server.",
    ),
    (425, "Too Early", "Your browser sent early data."),
    (
        429,
        "Too Many Requests",
        "You have sent too many requests in a given amount of time.",
    ),
    // The leading dot is HAProxy 2.6's, byte for byte.
    (
        501,
        "Not Implemented",
        ".The server does not support the functionality required to fulfill the request.",
    ),
    (
        403,
        "Forbidden",
        "Request forbidden by administrative rules.",
    ),
    (
        405,
        "Method Not Allowed",
        "A request was made of a resource using a request method not supported by that resource",
    ),
    (
        408,
        "Request Time-out",
        "Your browser didn't send a complete request in time.",
    ),
    (
        422,
        "Unprocessable Content",
        "The server cannot process the contained instructions.",
    ),
    (
        500,
        "Internal Server Error",
        "An internal server error occurred.",
    ),
    (
        502,
        "Bad Gateway",
        "The server returned an invalid or incomplete response.",
    ),
    (
        503,
        "Service Unavailable",
        "No server is available to handle this request.",
    ),
    (
        504,
        "Gateway Time-out",
        "The server didn't respond in time.",
    ),
];

/// Whether the response closes the client connection.
pub(crate) fn closes(code: u16) -> bool {
    matches!(code, 400 | 408 | 422)
}

/// Whether HAProxy's H1 parser emits the page itself (capitalised header
/// names): 400, 408, and 422 for a transfer coding it does not handle
/// (which closes without a `Connection: close` header).
fn from_h1_parser(code: u16) -> bool {
    matches!(code, 400 | 408 | 422)
}

/// The full response bytes for `code`.
pub(crate) fn response(code: u16) -> &'static [u8] {
    static PAGES: OnceLock<Vec<(u16, Vec<u8>)>> = OnceLock::new();
    let pages = PAGES.get_or_init(|| {
        CODES
            .iter()
            .map(|&(c, r, t)| (c, render(c, r, t)))
            .collect()
    });
    pages
        .iter()
        .find(|(c, _)| *c == code)
        .or_else(|| pages.iter().find(|(c, _)| *c == 500))
        .map(|(_, b)| b.as_slice())
        .unwrap_or(b"")
}

/// The page of `code` when HAProxy's stream answers it (a rule's
/// `deny_status 400`, a request its H1 parser passed), not its H1 parser:
/// the 400 goes through the HTX layer, header names in lower case and its
/// `Connection: close` written last; the other codes are [`response`]'s.
pub(crate) fn stream_response(code: u16) -> &'static [u8] {
    static PAGE: OnceLock<Vec<u8>> = OnceLock::new();
    if code != 400 {
        return response(code);
    }
    PAGE.get_or_init(|| {
        let (c, r, t) = CODES
            .iter()
            .find(|(c, _, _)| *c == 400)
            .copied()
            .unwrap_or((400, "Bad request", ""));
        render_htx(c, r, t, "connection: close\r\n")
    })
}

/// A reply without samples (`http-error status <code> [content-type
/// <t>] [string|file <x>] [hdr <name> <value>]...`) as HAProxy sends it,
/// the bytes `http::reply::render` makes at run time for one with
/// samples, without its `connection` line but for the codes that always
/// close (the error page's path adds it to the others): the status line, the `hdr` fields, the length, the type of a
/// non-empty body.
pub(crate) fn static_reply(
    status: u16,
    headers: &[(String, String)],
    content_type: Option<&str>,
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", http_reason(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n", body.len()));
    if let Some(t) = content_type.filter(|_| !body.is_empty()) {
        out.push_str(&format!("content-type: {t}\r\n"));
    }
    // The codes that always close are sent as loaded: their line is the
    // reply's own.
    if closes(status) {
        out.push_str("connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// The 413 HAProxy's H1 parser answers to an HTTP/1.0 GET, HEAD or
/// DELETE with a body: its capitalised header names, and no `Connection`
/// line though it closes (as its 422).
pub(crate) fn parser_413() -> &'static [u8] {
    static PAGE: OnceLock<Vec<u8>> = OnceLock::new();
    PAGE.get_or_init(|| {
        let (c, r, t) = CODES
            .iter()
            .find(|(c, _, _)| *c == 413)
            .copied()
            .unwrap_or((413, "Payload Too Large", ""));
        let body = page_body(c, r, t);
        let mut page = format!(
            "HTTP/1.1 {c} {r}\r\nContent-length: {}\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n",
            body.len()
        )
        .into_bytes();
        page.extend_from_slice(body.as_bytes());
        page
    })
}

/// The 408 HAProxy's stream answers when a body it waits for
/// (`option http-buffer-request`, `wait-for-body`) does not come in time:
/// through the HTX layer, as [`stream_response`]'s 400.
pub(crate) fn stream_408() -> &'static [u8] {
    static PAGE: OnceLock<Vec<u8>> = OnceLock::new();
    PAGE.get_or_init(|| {
        let (c, r, t) = CODES
            .iter()
            .find(|(c, _, _)| *c == 408)
            .copied()
            .unwrap_or((408, "Request Time-out", ""));
        render_htx(c, r, t, "connection: close\r\n")
    })
}

/// An `errorfile`: the file is a complete HTTP response. HAProxy parses
/// it when loading the configuration and emits it through its HTX layer,
/// so header names go out in lower case; the status line and the body are
/// kept as written. None when the file does not start with a response head.
pub(crate) fn load_errorfile(file: &[u8]) -> Option<bytes::Bytes> {
    let end = crate::wire::h1::head_end(file)?;
    let mut hdrs = [httparse::EMPTY_HEADER; crate::wire::h1::MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut hdrs);
    if !resp.parse(&file[..end]).ok()?.is_complete() {
        return None;
    }
    let first_end = memchr::memchr(b'\n', file)?;
    let first = file[..first_end]
        .strip_suffix(b"\r")
        .unwrap_or(&file[..first_end]);
    let mut out = Vec::with_capacity(file.len());
    out.extend_from_slice(first);
    out.extend_from_slice(b"\r\n");
    for h in resp.headers.iter() {
        out.extend(h.name.bytes().map(|b| b.to_ascii_lowercase()));
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&file[end..]);
    Some(out.into())
}

fn render(code: u16, reason: &str, text: &str) -> Vec<u8> {
    let body = page_body(code, reason, text);
    let head = if from_h1_parser(code) {
        let connection = if code == 422 {
            ""
        } else {
            "Connection: close\r\n"
        };
        format!(
            "HTTP/1.1 {code} {reason}\r\nContent-length: {}\r\nCache-Control: no-cache\r\n{connection}Content-Type: text/html\r\n\r\n",
            body.len()
        )
    } else {
        return render_htx(code, reason, text, "");
    };
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// The body of the page of `code`.
fn page_body(code: u16, reason: &str, text: &str) -> String {
    format!("<html><body><h1>{code} {reason}</h1>\n{text}\n</body></html>\n")
}

/// The page as HAProxy's HTX layer writes it (lower-case names), `extra`
/// header lines last.
fn render_htx(code: u16, reason: &str, text: &str, extra: &str) -> Vec<u8> {
    let body = page_body(code, reason, text);
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-length: {}\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// The standard reason phrase for a status code.
pub(crate) fn reason(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        422 => "Unprocessable Content",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Other",
    }
}

/// The reason phrase HAProxy 2.6 puts on the answers it composes from a
/// status alone (`http_get_reason()`: `http-request return`, `deny` with a
/// reply); it differs from [`reason`] in places ("Moved Temporarily",
/// "Request Time-out", ...), which is what HAProxy users see.
pub(crate) fn http_reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Moved Temporarily",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Time-out",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested range unsatisfiable",
        417 => "Expectation failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Method failure",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        450 => "Blocked by Windows Parental Controls",
        451 => "Unavailable For Legal Reasons",
        499 => "client has closed connection",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway or Proxy Error",
        503 => "Service Unavailable",
        504 => "Gateway Time-out",
        505 => "HTTP Version not supported",
        506 => "Variant also negotiate",
        507 => "Insufficient storage",
        508 => "Loop detected",
        509 => "Bandwidth Limit Exceeded",
        510 => "Not extended",
        511 => "Network authentication required",
        520 => "Web server is returning an unknown error",
        _ => match code / 100 {
            2 => "Success",
            3 => "Redirection",
            4 => "Client Error",
            _ => "Server Error",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_503_and_403() {
        let r = std::str::from_utf8(response(503)).unwrap();
        assert_eq!(
            r,
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n"
        );
        assert!(
            std::str::from_utf8(response(403))
                .unwrap()
                .contains("content-length: 93\r\n")
        );
        assert_eq!(
            response(422),
            b"HTTP/1.1 422 Unprocessable Content\r\nContent-length: 116\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\n\r\n<html><body><h1>422 Unprocessable Content</h1>\nThe server cannot process the contained instructions.\n</body></html>\n"
        );
        assert_eq!(
            response(405),
            b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 146\r\ncache-control: no-cache\r\ncontent-type: text/html\r\n\r\n<html><body><h1>405 Method Not Allowed</h1>\nA request was made of a resource using a request method not supported by that resource\n</body></html>\n"
        );
        let bad = std::str::from_utf8(response(400)).unwrap();
        assert!(bad.starts_with("HTTP/1.1 400 Bad request\r\nContent-length: 90\r\nCache-Control: no-cache\r\nConnection: close\r\n"));
    }
}
