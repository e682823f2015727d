//! The keyword matrix of docs/configuration.md: every keyword HAProxy
//! 2.6's manual documents (`haproxy26_keywords.tsv`) with what sluice does
//! with it. Each state is found by parsing a line that uses the keyword,
//! so the table says what `sluice -c` says: implemented, accepted with a
//! notice saying why it has no effect, or refused as "not supported by
//! sluice yet". `tests::the_docs_matrix_is_the_parsers` keeps the page
//! true (`SLUICE_WRITE_DOCS=1` rewrites it).

use crate::config::diag::Level;
use crate::haproxy26::Kind;
use crate::sample::docs::matches as name_matches;

/// What sluice's parser does with a keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    Implemented,
    /// Accepted; the notice says why it changes nothing.
    Noticed(String),
    Refused,
}

/// What to use instead of a keyword sluice refuses, by name (a `*` stands
/// for any run of characters); the first match wins. A refused keyword no
/// line names gets the fallback of its kind (`instead`).
const INSTEAD: &[(&str, &str)] = &[
    (
        "issuers-chain-path",
        "the issuer chain in the `crt` file after the certificate (sluice sends the file's chain as it is)",
    ),
    (
        "ssl-skip-self-issued-ca",
        "the `crt` file without its self-issued CA (sluice sends the chain as it is)",
    ),
    (
        "maxsslconn",
        "`maxconn` on the TLS `bind` lines, which bounds their connections",
    ),
    (
        "maxsslrate",
        "`maxconnrate`, or `rate-limit sessions` on the TLS frontend",
    ),
    (
        "error-log-format",
        "HAProxy's default line for connection errors, which sluice logs",
    ),
    ("transparent", "`option transparent`"),
    (
        "idle-close-on-response",
        "leave it out: idle client connections close at `timeout client`, and at once on a soft stop",
    ),
    (
        "*netscaler-cip",
        "`accept-proxy`: the PROXY protocol, which NetScaler sends too",
    ),
    (
        "expose-fd",
        "leave it out: sluice's reloads hand the listeners to the new process themselves (`-sf`, master-worker)",
    ),
    (
        "*socks4",
        "the server reached directly, or through a `mode tcp` relay beside it",
    ),
    (
        "*proxy-v2-*",
        "`send-proxy-v2`: the addresses, without the TLS TLVs",
    ),
    (
        "tcp-ut",
        "`timeout server`, and `srvtcpka-*` for dead peers",
    ),
    ("track", "the same `check` on both servers"),
    (
        "do-resolve",
        "`http-request do-resolve` in an HTTP frontend",
    ),
    (
        "switch-mode",
        "a `mode http` frontend from the start (it takes HTTP/1 and HTTP/2 alike)",
    ),
    (
        "program",
        "the service manager (systemd units) for the side programs",
    ),
    ("ssl-engine", "rustls has no engines: nothing to configure"),
    (
        "force-sslv3",
        "`force-tlsv12`: rustls has no version below TLS 1.2",
    ),
    (
        "force-tlsv10",
        "`force-tlsv12`: rustls has no version below TLS 1.2",
    ),
    (
        "force-tlsv11",
        "`force-tlsv12`: rustls has no version below TLS 1.2",
    ),
    (
        "namespace",
        "start sluice inside the namespace (`ip netns exec`)",
    ),
    ("51degrees-*", "a device detection service behind a backend"),
    (
        "deviceatlas-*",
        "a device detection service behind a backend",
    ),
    ("wurfl-*", "a device detection service behind a backend"),
];

/// What to use instead of `name` of `kind`, which sluice refuses.
fn instead(kind: Kind, name: &str) -> &'static str {
    if let Some((_, advice)) = INSTEAD.iter().find(|(p, _)| name_matches(p, name)) {
        return advice;
    }
    match kind {
        Kind::Bind | Kind::Server => "leave the option out (not built yet, #22)",
        _ => "not built yet (#22)",
    }
}

/// A configuration whose line 4 uses `name` of `kind` (`place`: where
/// the manual says it goes, for `tcp-request`), and the line's number.
fn probe_text(kind: Kind, name: &str, place: &str) -> String {
    const HEAD: &str = "defaults\n    mode http\n";
    match kind {
        Kind::Section => format!("{HEAD}# probe\n{name} probe\n"),
        Kind::Global => format!("# probe\n# probe\nglobal\n    {name}\n"),
        Kind::Proxy => format!("{HEAD}listen probe\n    {name}\n"),
        Kind::Option => format!("{HEAD}listen probe\n    option {name}\n"),
        Kind::Bind => format!("{HEAD}listen probe\n    bind 127.0.0.1:8080 {name}\n"),
        Kind::Server => format!("{HEAD}listen probe\n    server s 127.0.0.1:1 {name}\n"),
        Kind::HttpRequest => format!("{HEAD}listen probe\n    http-request {name}\n"),
        Kind::HttpResponse => format!("{HEAD}listen probe\n    http-response {name}\n"),
        Kind::HttpAfterResponse => {
            format!("{HEAD}listen probe\n    http-after-response {name}\n")
        }
        Kind::TcpRequest => format!("{HEAD}listen probe\n    tcp-request {place} {name}\n"),
        Kind::TcpResponse => format!("{HEAD}listen probe\n    tcp-response content {name}\n"),
        Kind::Fetch | Kind::Converter => String::new(),
    }
}

/// What `sluice -c` says of `name` of `kind`.
pub(crate) fn state(kind: Kind, name: &str, place: &str) -> State {
    let text = probe_text(kind, name, place);
    let loaded = crate::config::parse_texts(
        &[("probe.cfg".to_string(), text)],
        &|_| None,
        &|_: &str, _: u16| Err("no resolution here".to_string()),
    );
    let on_line =
        |d: &&crate::config::diag::Diagnostic| d.loc.as_ref().is_some_and(|l| l.line == 4);
    let said = loaded.diagnostics.iter().filter(on_line);
    let mut state = State::Implemented;
    for d in said {
        if d.message.contains("not supported by sluice yet")
            || d.message.contains("are not supported by sluice")
        {
            return State::Refused;
        }
        if d.level != Level::Alert
            && let Some((_, why)) = d.message.split_once("accepted and ignored: ")
        {
            state = State::Noticed(why.trim_end_matches('.').to_string());
        }
    }
    state
}

/// The rows of one kind: each keyword once, in name order.
fn rows(kind: Kind, title: &str, out: &mut String) {
    let mut names: Vec<(&str, &str)> = crate::haproxy26::entries(kind).collect();
    names.sort_unstable();
    names.dedup_by(|a, b| a.0 == b.0);
    out.push_str(&format!("\n| {title} | In sluice |\n|---|---|\n"));
    for (name, place) in names {
        // The first place the manual gives (`tcp-request` rules).
        let place = place.split(',').next().unwrap_or(place);
        let cell = match state(kind, name, place) {
            State::Implemented => "implemented".to_string(),
            State::Noticed(why) => format!("accepted, no effect: {why}"),
            State::Refused => format!("refused (not supported yet): {}", instead(kind, name)),
        };
        out.push_str(&format!("| `{name}` | {cell} |\n"));
    }
}

/// The matrix, as docs/configuration.md has it.
pub(crate) fn table() -> String {
    let mut out = String::new();
    for (kind, title) in [
        (Kind::Section, "Section"),
        (Kind::Global, "Global keyword"),
        (Kind::Proxy, "Proxy keyword"),
        (Kind::Option, "Option"),
        (Kind::Bind, "Bind option"),
        (Kind::Server, "Server option"),
        (Kind::HttpRequest, "http-request action"),
        (Kind::HttpResponse, "http-response action"),
        (Kind::HttpAfterResponse, "http-after-response action"),
        (Kind::TcpRequest, "tcp-request action"),
        (Kind::TcpResponse, "tcp-response action"),
    ] {
        rows(kind, title, &mut out);
    }
    out
}

/// The counts of each state over every keyword of the matrix: for the
/// page's summary line.
pub(crate) fn counts(table: &str) -> (usize, usize, usize) {
    let cells = table
        .lines()
        .filter_map(|l| l.rsplit_once(" | ").map(|(_, c)| c));
    let mut n = (0, 0, 0);
    for c in cells {
        if c.starts_with("implemented") {
            n.0 += 1;
        } else if c.starts_with("accepted") {
            n.1 += 1;
        } else if c.starts_with("refused") {
            n.2 += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_tell_the_three_states_apart() {
        assert_eq!(state(Kind::Proxy, "balance", ""), State::Implemented);
        assert_eq!(state(Kind::Section, "fcgi-app", ""), State::Implemented);
        assert_eq!(state(Kind::Global, "ssl-engine", ""), State::Refused);
        assert!(matches!(
            state(Kind::Global, "nopoll", ""),
            State::Noticed(_)
        ));
        assert_eq!(
            state(Kind::HttpRequest, "set-var(txn.x)", ""),
            State::Implemented
        );
    }

    /// The page's matrix is what the parser says (`SLUICE_WRITE_DOCS=1`
    /// rewrites it), and every line of [`INSTEAD`] still advises on some
    /// refused keyword.
    #[test]
    fn the_docs_matrix_is_the_parsers() {
        const BEGIN: &str =
            "<!-- keyword-matrix: generated from src/config/matrix.rs, do not edit -->\n";
        const END: &str = "<!-- keyword-matrix end -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
        let doc = std::fs::read_to_string(path).expect("docs/configuration.md");
        let start = doc.find(BEGIN).expect("the matrix's start marker") + BEGIN.len();
        let end = start + doc[start..].find(END).expect("the matrix's end marker");
        let table = table();
        let (i, a, r) = counts(&table);
        let want = format!(
            "Of HAProxy 2.6's {} keywords below, sluice implements {i}, accepts {a} with a notice saying why they have no effect, and refuses {r}.\n{table}",
            i + a + r
        );
        if doc[start..end] != want && std::env::var_os("SLUICE_WRITE_DOCS").is_some() {
            let new = format!("{}{want}{}", &doc[..start], &doc[end..]);
            std::fs::write(path, new).expect("write docs/configuration.md");
            return;
        }
        assert!(
            doc[start..end] == want,
            "docs/configuration.md's keyword matrix is not what the parser says: run the test with SLUICE_WRITE_DOCS=1 and commit the page"
        );
        let stale: Vec<&str> = INSTEAD
            .iter()
            .filter(|(p, _)| {
                !want
                    .lines()
                    .filter(|l| l.contains("| refused"))
                    .any(|l| l.split('`').nth(1).is_some_and(|n| name_matches(p, n)))
            })
            .map(|(p, _)| *p)
            .collect();
        assert!(
            stale.is_empty(),
            "advice no refused keyword needs: {stale:?}"
        );
    }
}
