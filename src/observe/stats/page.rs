//! The HTTP stats page (`stats uri`, reference §1.9). The data plane matches
//! the URI prefix, calls [`respond`] with what follows it and adds
//! `cache-control: no-cache`.

use std::fmt::Write as _;

use crate::config::model::StatsPage;
use crate::snapshot::runtime::Runtime;

use crate::observe::stats::admin::StCode;
use crate::observe::stats::csv::{self, CsvOptions, Row};
use crate::observe::stats::info;

/// `suffix` is the request target after the `stats uri` prefix, e.g.
/// `;csv`, `;up`, `` or `?x=1`. Returns status, content type and body.
/// `admin`: a `stats admin` condition holds for the request (the HTML then
/// has the server checkboxes and action forms).
pub(crate) fn respond(
    suffix: &str,
    rt: &Runtime,
    page: &StatsPage,
    admin: bool,
) -> (u16, &'static str, String) {
    // HAProxy looks for `;option` anywhere after the prefix.
    let opts: Vec<&str> = suffix.split(';').skip(1).map(option_name).collect();
    let csv_opts = CsvOptions {
        show_legends: page.show_legends,
        only_up: opts.contains(&"up"),
        no_maint: opts.contains(&"no-maint"),
        ..CsvOptions::default()
    };
    let snap = rt.snapshot();
    let scope = scope(suffix);
    let mut rows = csv::rows(rt, &snap, csv_opts);
    if let Some(sc) = scope {
        rows.retain(|r| in_scope(r.get("pxname"), sc));
    }
    if opts.contains(&"csv") {
        // Same text as the CLI, without the CLI's terminating empty line.
        let mut out = String::from(csv::HEADER);
        for r in &rows {
            out.push_str(&r.to_csv());
        }
        return (200, "text/plain", out);
    }
    if opts.contains(&"json") {
        return (200, "application/json", csv::render_json(&rows));
    }
    let view = HtmlView {
        page,
        admin,
        st: StCode::from_suffix(suffix),
        uri_opts: uri_options(page, suffix),
        scope,
    };
    (200, "text/html", html(rt, &snap, &rows, &view))
}

/// HAProxy's longest `scope=` text (`STAT_SCOPE_TXT_MAXLEN`).
const SCOPE_MAX: usize = 20;

/// The `scope=<text>` of the page's URI (`;scope=be`, or `?scope=be` as
/// the page's scope box submits it), as HAProxy 2.6 reads it: the first
/// `scope=` after the prefix with at least two bytes after it, the text up
/// to `;`, `&` or a space, cut at 20 bytes; none when the text holds a
/// byte outside letters, digits, `.`, `:`, `_` and `-`.
fn scope(suffix: &str) -> Option<&str> {
    let b = suffix.as_bytes();
    let at = (0..(b.len() + 1).saturating_sub(8)).find(|&i| b[i..].starts_with(b"scope="))?;
    let text = &suffix[at + 6..];
    let end = text.find([';', '&', ' ']).unwrap_or(text.len());
    let mut text = &text[..end];
    if text.len() > SCOPE_MAX {
        // ASCII checked below: a cut inside a multi-byte char is refused.
        text = text.get(..SCOPE_MAX)?;
    }
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '_' | '-');
    (!text.is_empty() && text.chars().all(valid)).then_some(text)
}

/// A proxy is shown when its name contains the scope, in any case.
fn in_scope(pxname: &str, scope: &str) -> bool {
    pxname
        .to_ascii_lowercase()
        .contains(&scope.to_ascii_lowercase())
}

/// `?scope=<text>` as HAProxy appends it to its links and redirects.
fn scope_query(scope: Option<&str>) -> String {
    scope.map(|s| format!("?scope={s}")).unwrap_or_default()
}

/// Where a POST sends the browser (HAProxy's 303): the page with the
/// result in `;st=`, keeping `;up` and `;norefresh`.
pub(crate) fn redirect_location(page: &StatsPage, suffix: &str, code: StCode) -> String {
    format!(
        "{}{}{}{}",
        page.uri,
        format_args!(";st={}", code.as_str()),
        uri_options(page, suffix),
        scope_query(scope(suffix))
    )
}

/// `;up` and `;norefresh` (this one only with `stats refresh`) as
/// HAProxy carries them over in its links and redirects.
fn uri_options(page: &StatsPage, suffix: &str) -> &'static str {
    match (
        suffix.contains(";up"),
        page.refresh.is_some() && suffix.contains(";norefresh"),
    ) {
        (false, false) => "",
        (true, false) => ";up",
        (false, true) => ";norefresh",
        (true, true) => ";up;norefresh",
    }
}

/// What the HTML depends on besides the rows.
struct HtmlView<'a> {
    page: &'a StatsPage,
    admin: bool,
    /// The `;st=` of a redirect after a POST.
    st: Option<StCode>,
    uri_opts: &'static str,
    /// The `scope=` filter, kept in the links.
    scope: Option<&'a str>,
}

/// Whether the request's `Authorization` header value carries one of the
/// page's `stats auth` accounts (always true without accounts).
pub(crate) fn authorized(page: &StatsPage, authorization: Option<&[u8]>) -> bool {
    if page.auth.is_empty() {
        return true;
    }
    let Some(value) = authorization else {
        return false;
    };
    let value = String::from_utf8_lossy(value);
    let value = value.trim();
    let Some((scheme, creds)) = value.split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let creds = creds.trim();
    page.auth.iter().any(|a| base64(a.as_bytes()) == creds)
}

/// The `www-authenticate` value of the 401.
pub(crate) fn challenge(page: &StatsPage) -> String {
    let realm = page.realm.as_deref().unwrap_or(StatsPage::DEFAULT_REALM);
    format!("Basic realm=\"{}\"", realm.replace('"', "\\\""))
}

/// HAProxy's 401 page, byte for byte (112 bytes).
pub(crate) const UNAUTHORIZED_BODY: &str = "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n";

/// Standard base64 with padding.
pub(crate) fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `csv`, `up`... from one `;`-separated piece (stops at `&`, `?`, `/`, `=`
/// so `;csv?x` or `;st=...` still name their option).
fn option_name(piece: &str) -> &str {
    let end = piece.find(['&', '?', '/', '=', ';']).unwrap_or(piece.len());
    &piece[..end]
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A compact duration for `lastchg`: `8s`, `3m12s`, `2h05m`, `4d3h`.
fn human(secs: &str) -> String {
    let Ok(s) = secs.parse::<u64>() else {
        return secs.to_string();
    };
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
        _ => format!("{}d{}h", s / 86400, (s / 3600) % 24),
    }
}

fn status_class(status: &str) -> &'static str {
    if status.starts_with("UP") || status == "OPEN" || status == "no check" {
        "up"
    } else if status.starts_with("DOWN") {
        "down"
    } else if status.starts_with("MAINT") {
        "maint"
    } else if status.starts_with("DRAIN") || status.starts_with("NOLB") {
        "drain"
    } else {
        "other"
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:0.5em;color:#222;background:#fafafa}\
h1{font-size:1.3em;margin:0.2em 0}h2{font-size:1.1em;margin:1em 0 0.3em}\
.info{font-size:0.9em;color:#555}.wrap{overflow-x:auto}\
table{border-collapse:collapse;font-size:0.85em;white-space:nowrap}\
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}\
th{background:#eee}td.name{text-align:left;font-weight:bold}\
tr.fe td,tr.be td{background:#f0f0f8}\
td.up{background:#c8f0c8}td.down{background:#f4b8b8}td.drain{background:#a8c8f4}td.maint{background:#c8a8e8}td.other{background:#f4e4a0}\
td.check{text-align:left}\
.msg{padding:4px 8px;margin:0.5em 0;border:1px solid #ccc}.msg.ok{background:#c8f0c8}\
.msg.warn{background:#f4e4a0}.msg.err{background:#f4b8b8}.msg.other{background:#eee}\
.act{margin:0.3em 0;font-size:0.9em}";

const COLUMNS: &[&str] = &[
    "Name",
    "Status",
    "LastChg",
    "Wght",
    "Queue",
    "Sess cur",
    "Max",
    "Limit",
    "Total",
    "Bytes in",
    "Bytes out",
    "1xx",
    "2xx",
    "3xx",
    "4xx",
    "5xx",
    "other",
    "Check",
];

fn html(rt: &Runtime, snap: &crate::snapshot::Snapshot, rows: &[Row], view: &HtmlView) -> String {
    let page = view.page;
    let mut out = String::new();
    let p = &rt.process;
    let on_node = match &page.show_node {
        Some(name) => format!(
            " on {}",
            name.clone().unwrap_or_else(|| info::node_name(snap))
        ),
        None => String::new(),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Statistics Report for sluice{on_node}</title><style>{CSS}</style></head><body>\n\
         <h1>Statistics Report for sluice{ver}</h1>\n{report}\
         <p class=info>pid {pid}, uptime {up}, {thr} threads, current conns {cur}, maxconn {max}, total requests {req}</p>\n",
        ver = if page.hide_version {
            String::new()
        } else {
            format!(" {}", esc(info::VERSION))
        },
        pid = p.pid,
        up = info::format_uptime(rt.uptime_secs()),
        thr = rt.nbthread,
        cur = p.conns.cur(),
        max = snap
            .global
            .maxconn
            .unwrap_or(crate::snapshot::DEFAULT_MAXCONN),
        req = p.counts.sum(|s| &s.cum_req),
        on_node = esc(&on_node),
        report = report_line(page, p.pid, &on_node),
    );
    // HAProxy's scope box: its form GETs `?scope=<text>`.
    let _ = writeln!(
        out,
        "<form method=\"GET\">Scope : <input value=\"{}\" name=\"scope\" size=\"8\" maxlength=\"{SCOPE_MAX}\" tabindex=\"1\"/></form>",
        view.scope.unwrap_or("")
    );
    if let Some(st) = view.st {
        let (class, msg) = st.message();
        let _ = writeln!(
            out,
            "<div class=\"msg {class}\"><a href=\"{uri}{opts}{scope}\" title=\"Remove this message\">[X]</a> {msg}</div>",
            uri = esc(&page.uri),
            opts = view.uri_opts,
            scope = scope_query(view.scope),
        );
    }
    // The backend whose table is open, when it has an admin form.
    let mut current: Option<&str> = None;
    let mut form: Option<u32> = None;
    for r in rows {
        let px = r.get("pxname");
        if current != Some(px) {
            if current.is_some() {
                close_table(&mut out, form);
            }
            current = Some(px);
            form = snap
                .backend(px)
                .filter(|b| view.admin && !b.servers.is_empty())
                .map(|b| b.iid);
            let _ = writeln!(out, "<h2>{}</h2>", esc(px));
            if let Some(d) = snap
                .proxies
                .iter()
                .find(|p| p.name == px)
                .and_then(|p| p.description.as_deref())
            {
                let _ = writeln!(out, "<p class=desc>{}</p>", esc(d));
            }
            if form.is_some() {
                out.push_str("<form method=\"post\">");
            }
            out.push_str("<div class=wrap><table class=px><tr>");
            if form.is_some() {
                // HAProxy's select-all box.
                let _ = write!(
                    out,
                    "<th><input type=\"checkbox\" onclick=\"for(c in document.getElementsByClassName('{p}-checkbox')) document.getElementsByClassName('{p}-checkbox').item(c).checked = this.checked\"></th>",
                    p = esc(px)
                );
            } else if view.admin {
                out.push_str("<th></th>");
            }
            for c in COLUMNS {
                let _ = write!(out, "<th>{c}</th>");
            }
            if page.show_modules {
                for (m, _) in MODULES {
                    let _ = write!(out, "<th>{m}</th>");
                }
            }
            out.push_str("</tr>\n");
        }
        row_html(&mut out, r, view.admin, page.show_modules);
    }
    if current.is_some() {
        close_table(&mut out, form);
    }
    out.push_str("</body></html>\n");
    out
}

/// Ends a proxy's table, with HAProxy's action form for a backend when
/// the request may administer it (`b=#<id>`, as HAProxy's form posts).
fn close_table(out: &mut String, form: Option<u32>) {
    out.push_str("</table></div>\n");
    if let Some(iid) = form {
        let _ = writeln!(
            out,
            "<div class=act>Choose the action to perform on the checked servers : <select name=action>{ACTIONS}</select><input type=\"hidden\" name=\"b\" value=\"#{iid}\">&nbsp;<input type=\"submit\" value=\"Apply\"></div></form>"
        );
    }
}

/// HAProxy 2.6's action list, less the agent actions (sluice has no agent
/// checks).
const ACTIONS: &str = "<option value=\"\"></option>\
<option value=\"ready\">Set state to READY</option>\
<option value=\"drain\">Set state to DRAIN</option>\
<option value=\"maint\">Set state to MAINT</option>\
<option value=\"dhlth\">Health: disable checks</option>\
<option value=\"ehlth\">Health: enable checks</option>\
<option value=\"hrunn\">Health: force UP</option>\
<option value=\"hnolb\">Health: force NOLB</option>\
<option value=\"hdown\">Health: force DOWN</option>\
<option value=\"shutdown\">Kill Sessions</option>";

fn row_html(out: &mut String, r: &Row, admin: bool, modules: bool) {
    let class = match r.kind() {
        "0" => " class=fe",
        "1" => " class=be",
        _ => "",
    };
    let status = r.get("status");
    let queue = if r.get("qcur").is_empty() {
        String::new()
    } else {
        format!("{}/{}", r.get("qcur"), r.get("qmax"))
    };
    let check = match (
        r.get("check_status"),
        r.get("check_code"),
        r.get("last_chk"),
    ) {
        ("", _, _) => String::new(),
        (s, "", "") => s.to_string(),
        (s, code, "") => format!("{s} {code}"),
        (s, "", d) => format!("{s}: {d}"),
        (s, code, d) => format!("{s} {code}: {d}"),
    };
    let lastchg = human(r.get("lastchg"));
    let _ = write!(out, "<tr{class}>");
    if admin {
        if r.kind() == "2" {
            let _ = write!(
                out,
                "<td><input class='{}-checkbox' type=\"checkbox\" name=\"s\" value=\"{}\"></td>",
                esc(r.get("pxname")),
                esc(r.get("svname"))
            );
        } else {
            out.push_str("<td></td>");
        }
    }
    let _ = write!(
        out,
        "<td class=name>{name}</td><td class={sc}>{status}</td><td>{lastchg}</td><td>{w}</td><td>{queue}</td>",
        name = esc(r.get("svname")),
        sc = status_class(status),
        status = esc(status),
        w = r.get("weight"),
    );
    for f in [
        "scur",
        "smax",
        "slim",
        "stot",
        "bin",
        "bout",
        "hrsp_1xx",
        "hrsp_2xx",
        "hrsp_3xx",
        "hrsp_4xx",
        "hrsp_5xx",
        "hrsp_other",
    ] {
        let _ = write!(out, "<td>{}</td>", esc(r.get(f)));
    }
    let _ = write!(out, "<td class=check>{}</td>", esc(&check));
    if modules {
        for (m, fields) in MODULES {
            // The module's counters, as HAProxy's tooltip lists them;
            // a row a module does not count has none.
            let tip: Vec<String> = fields
                .iter()
                .filter(|f| !r.get(f).is_empty())
                .map(|f| format!("{f}: {}", r.get(f)))
                .collect();
            let _ = write!(out, "<td title=\"{}\">{m}</td>", esc(&tip.join(", ")));
        }
    }
    out.push_str("</tr>\n");
}

/// The modules' counters `stats show-modules` shows, by module, as
/// HAProxy 2.6 orders its extra columns (`ssl`, `h2`, `h1`).
const MODULES: &[(&str, &[&str])] = &[
    (
        "ssl",
        &["ssl_sess", "ssl_reused_sess", "ssl_failed_handshake"],
    ),
    (
        "h2",
        &[
            "h2_headers_rcvd",
            "h2_data_rcvd",
            "h2_settings_rcvd",
            "h2_rst_stream_rcvd",
            "h2_goaway_rcvd",
            "h2_detected_conn_protocol_errors",
            "h2_detected_strm_protocol_errors",
            "h2_rst_stream_resp",
            "h2_goaway_resp",
            "h2_open_connections",
            "h2_backend_open_streams",
            "h2_total_connections",
            "h2_backend_total_streams",
        ],
    ),
    (
        "h1",
        &[
            "h1_open_connections",
            "h1_open_streams",
            "h1_total_connections",
            "h1_total_streams",
            "h1_bytes_in",
            "h1_bytes_out",
            "h1_spliced_bytes_in",
            "h1_spliced_bytes_out",
        ],
    ),
];

/// HAProxy's `Statistics Report for pid <pid>[ on <node>][: <desc>]` line,
/// when `stats show-node` or `stats show-desc` asks for it.
fn report_line(page: &StatsPage, pid: u32, on_node: &str) -> String {
    if page.show_node.is_none() && page.show_desc.is_none() {
        return String::new();
    }
    let desc = page
        .show_desc
        .as_deref()
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    format!(
        "<p class=node>Statistics Report for pid {pid}{}{}</p>\n",
        esc(on_node),
        esc(&desc)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::stats::fixture;

    #[test]
    fn csv_page_is_the_cli_csv_without_legends_or_empty_line() {
        let rt = fixture::runtime();
        let (status, ctype, body) = respond(";csv", &rt, &StatsPage::enabled(), false);
        assert_eq!((status, ctype), (200, "text/plain"));
        assert!(body.starts_with(csv::HEADER));
        assert!(body.ends_with(",\n") && !body.ends_with("\n\n"));
        assert!(!body.contains("127.0.0.1") && !body.contains("roundrobin"));
        assert_eq!(
            respond(";csv;norefresh", &rt, &StatsPage::enabled(), false).2,
            body
        );
    }

    #[test]
    fn html_page_has_a_table_per_proxy() {
        let rt = fixture::runtime();
        let (status, ctype, body) = respond("", &rt, &StatsPage::enabled(), false);
        assert_eq!((status, ctype), (200, "text/html"));
        assert_eq!(body.matches("<table class=px>").count(), 3);
        assert!(!body.contains("checkbox"));
        assert!(body.contains("<h2>web_be</h2>"));
        assert!(body.contains("<td class=up>UP 1/3</td>"));
        assert!(body.contains("<td class=up>OPEN</td>"));
        assert!(body.contains("name=\"viewport\""));
    }

    #[test]
    fn admin_form_and_result_message() {
        let rt = fixture::runtime();
        let iid = rt.snapshot().backend("web_be").expect("web_be").iid;
        let (_, _, html) = respond(";st=DONE", &rt, &StatsPage::enabled(), true);
        assert!(html.contains("<div class=\"msg ok\"><a href=\"/haproxy?stats\" title=\"Remove this message\">[X]</a> Action processed successfully.</div>"), "{html}");
        assert!(html.contains(
            "<td><input class='web_be-checkbox' type=\"checkbox\" name=\"s\" value=\"s2\"></td>"
        ));
        assert!(html.contains(&format!(
            "<input type=\"hidden\" name=\"b\" value=\"#{iid}\">"
        )));
        // One form: the frontend and the server-less `stats` have none
        // (the other one is the scope box).
        assert_eq!(html.matches("<form method=\"post\">").count(), 1);
        assert_eq!(html.matches("<form method=\"GET\">").count(), 1);
        assert_eq!(html.matches("</form>").count(), 2);
        let page = StatsPage {
            refresh: Some(5),
            ..StatsPage::enabled()
        };
        let (_, _, html) = respond(";up;norefresh;st=DENY", &rt, &page, false);
        assert!(html.contains("<div class=\"msg err\"><a href=\"/haproxy?stats;up;norefresh\" title=\"Remove this message\">[X]</a> <b>Action denied.</b></div>"));
        assert!(!html.contains("<form method=\"post\""));
        assert_eq!(
            redirect_location(&page, ";up;norefresh", StCode::Part),
            "/haproxy?stats;st=PART;up;norefresh"
        );
        // The scope is kept as HAProxy keeps it, last.
        assert_eq!(
            redirect_location(&page, ";up;scope=web", StCode::Done),
            "/haproxy?stats;st=DONE;up?scope=web"
        );
        let (_, _, html) = respond(";st=DONE;scope=web", &rt, &page, false);
        assert!(
            html.contains("<a href=\"/haproxy?stats?scope=web\" title=\"Remove this message\">"),
            "{html}"
        );
        assert_eq!(
            redirect_location(&StatsPage::enabled(), ";norefresh;st=DONE", StCode::Excd),
            "/haproxy?stats;st=EXCD"
        );
    }

    #[test]
    fn scope_is_read_as_haproxy_reads_it() {
        assert_eq!(scope(";scope=web"), Some("web"));
        assert_eq!(scope("?scope=web;csv"), Some("web"));
        assert_eq!(scope(";csv;scope=a.b:c_d-e&x=1"), Some("a.b:c_d-e"));
        // Cut at 20 bytes.
        assert_eq!(
            scope(";scope=abcdefghijklmnopqrstuvwxyz"),
            Some("abcdefghijklmnopqrst")
        );
        // HAProxy's loop stops 8 bytes before the end: one byte of text
        // at the end is not seen.
        assert_eq!(scope(";scope=w"), None);
        assert_eq!(scope(";scope=w;"), Some("w"));
        for bad in [";scope=we*", ";scope=a%20b", ";scope=", ";csv"] {
            assert_eq!(scope(bad), None, "{bad}");
        }
        assert!(in_scope("Web_BE", "web") && !in_scope("stats", "web"));
    }

    #[test]
    fn legends_json_and_hidden_version() {
        let rt = fixture::runtime();
        let page = StatsPage {
            show_legends: true,
            hide_version: true,
            ..StatsPage::enabled()
        };
        let (_, _, csv) = respond(";csv", &rt, &page, false);
        assert!(csv.contains("127.0.0.1:17001") && csv.contains("roundrobin"));
        let (status, ctype, json) = respond(";json", &rt, &page, false);
        assert_eq!((status, ctype), (200, "application/json"));
        assert!(
            json.starts_with("[[{\"objType\":\"Frontend\""),
            "{json:.80}"
        );
        let (_, _, html) = respond("", &rt, &page, false);
        assert!(html.contains("<h1>Statistics Report for sluice</h1>"));
        let (_, _, html) = respond("", &rt, &StatsPage::enabled(), false);
        assert!(html.contains(&format!("Statistics Report for sluice {}<", info::VERSION)));
    }

    #[test]
    fn basic_auth() {
        assert_eq!(base64(b"admin:secret"), "YWRtaW46c2VjcmV0");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        let page = StatsPage {
            auth: vec!["admin:secret".into(), "bob:pw".into()],
            ..StatsPage::enabled()
        };
        assert!(authorized(&StatsPage::enabled(), None));
        assert!(!authorized(&page, None));
        assert!(authorized(&page, Some(b"Basic YWRtaW46c2VjcmV0")));
        assert!(authorized(&page, Some(b"basic Ym9iOnB3")));
        assert!(!authorized(&page, Some(b"Basic YWRtaW46d3Jvbmc=")));
        assert!(!authorized(&page, Some(b"Bearer YWRtaW46c2VjcmV0")));
        assert_eq!(challenge(&page), "Basic realm=\"HAProxy Statistics\"");
        assert_eq!(UNAUTHORIZED_BODY.len(), 112);
    }

    #[test]
    fn html_escapes_and_durations() {
        assert_eq!(esc("<a&\"b'>"), "&lt;a&amp;&quot;b&#39;&gt;");
        assert_eq!(human("8"), "8s");
        assert_eq!(human("192"), "3m12s");
        assert_eq!(human("7500"), "2h05m");
        assert_eq!(human("356400"), "4d3h");
        assert_eq!(human(""), "");
        assert_eq!(status_class("DOWN 1/2"), "down");
        assert_eq!(status_class("MAINT"), "maint");
        assert_eq!(status_class("MAINT (resolution)"), "maint");
        assert_eq!(status_class("DRAIN"), "drain");
        assert_eq!(status_class("NOLB"), "drain");
        assert_eq!(status_class("UNKNOWN"), "other");
    }
}
