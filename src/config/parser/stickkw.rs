//! Stick tables in proxies: `stick-table` (and the `table` line of a
//! `peers` section, which reads the same words), the `stick` rules, and
//! the table actions of the rule sets (`track-sc*`, `sc-inc-gpc*`,
//! `sc-set-gpt*`), with HAProxy 2.6's messages.

use super::*;
use crate::config::model::{
    GpIndex, GptValue, IncGpc, KeyType, SetGpt, SrvKey, StickKind, StickRule, Stored, TableDef,
    TrackRule,
};
use crate::config::units::parse_size;
use crate::sample::stick::{self, ArgCtx, DataType, Std, TableRef};
use crate::sample::{Expr, Stage};

/// A table declared so far: its name, where, and by what (`frontend
/// 'fe'`, `peers 'p'`), for HAProxy's name conflict message.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub(crate) name: String,
    pub(crate) loc: Loc,
    pub(crate) by: String,
}

impl State<'_> {
    /// `stick-table ...` in a proxy: the proxy's table, named after it.
    pub(super) fn kw_stick_table(&mut self, loc: &Loc, words: &[String]) {
        let Section::Proxy(i) = self.section else {
            return self.alert(loc, "'stick-table' is not supported in 'defaults' section.");
        };
        let (name, kind) = (self.proxies[i].name.clone(), self.proxies[i].kind);
        if self.table_conflict(loc, &name) {
            return;
        }
        if let Some(def) = self.parse_table(loc, words, 1, &name, None) {
            self.declared_tables.push(Declared {
                name: name.clone(),
                loc: loc.clone(),
                by: format!("{} '{name}'", cap_str(kind)),
            });
            self.global.table_order.push(name);
            self.px().table = Some(def);
        }
    }

    /// HAProxy's check that no table has the name yet; true (and
    /// reported) when one has.
    pub(super) fn table_conflict(&mut self, loc: &Loc, name: &str) -> bool {
        let Some(other) = self.declared_tables.iter().find(|d| d.name == name) else {
            return false;
        };
        let msg = format!(
            "stick-table name '{name}' conflicts with table declared in {} at {}.",
            other.by, other.loc
        );
        self.alert(loc, msg);
        true
    }

    /// HAProxy's `parse_stick_table`: the words from `start` on (after the
    /// keyword, and the table's name in a `peers` section), for a table
    /// named `name`; `peers` is the section of a `peers` table. The first
    /// error is reported and ends the line (None).
    pub(super) fn parse_table(
        &mut self,
        loc: &Loc,
        words: &[String],
        start: usize,
        name: &str,
        peers: Option<&str>,
    ) -> Option<TableDef> {
        let kw = words[0].as_str();
        let mut def = TableDef {
            name: name.to_string(),
            key: KeyType::Ip,
            size: 0,
            expire: 0,
            nopurge: false,
            peers: peers.map(str::to_string),
            srvkey: SrvKey::Name,
            store: Vec::new(),
            loc: loc.clone(),
        };
        let mut typed = false;
        let arg = |i: usize| words.get(i).map_or("", String::as_str);
        let mut i = start;
        while i < words.len() {
            match arg(i) {
                "size" => {
                    i += 1;
                    if arg(i).is_empty() {
                        self.alert(loc, format!("{kw}: missing argument after 'size'."));
                        return None;
                    }
                    match parse_size(arg(i)) {
                        Ok(n) => def.size = n,
                        Err(c) => {
                            let c = c.unwrap_or('\0');
                            self.alert(
                                loc,
                                format!("{kw}: unexpected character '{c}' in argument of 'size'."),
                            );
                            return None;
                        }
                    }
                    i += 1;
                }
                "peers" if peers.is_none() => {
                    i += 1;
                    if arg(i).is_empty() {
                        self.alert(loc, format!("{kw}: missing argument after 'peers'."));
                        return None;
                    }
                    def.peers = Some(arg(i).to_string());
                    i += 1;
                }
                "expire" => {
                    i += 1;
                    let v = arg(i);
                    if v.is_empty() {
                        self.alert(loc, format!("{kw}: missing argument after 'expire'."));
                        return None;
                    }
                    match crate::config::units::parse_time(v) {
                        Ok(d) => def.expire = d.as_millis() as u32,
                        Err(crate::config::units::TimeError::Overflow) => {
                            let m = format!(
                                "{kw}: timer overflow in argument <{v}> to <expire>, maximum value is 2147483647 ms (~24.8 days)."
                            );
                            self.tight(Level::Alert, loc, m);
                            return None;
                        }
                        Err(e) => {
                            let c = match e {
                                crate::config::units::TimeError::BadChar(c) => c,
                                _ => v.chars().next().unwrap_or('\0'),
                            };
                            self.alert(
                                loc,
                                format!(
                                    "{kw}: unexpected character '{c}' in argument of 'expire'."
                                ),
                            );
                            return None;
                        }
                    }
                    i += 1;
                }
                "nopurge" => {
                    def.nopurge = true;
                    i += 1;
                }
                "type" => {
                    i += 1;
                    let Some((key, used)) = key_type(&words[i.min(words.len())..]) else {
                        // HAProxy names the word it stopped at: the type,
                        // or a bad `len` value.
                        let at = if matches!(arg(i), "string" | "binary") && arg(i + 1) == "len" {
                            i + 2
                        } else {
                            i
                        };
                        self.alert(loc, format!("{kw}: unknown type '{}'.", arg(at)));
                        return None;
                    };
                    def.key = key;
                    typed = true;
                    i += used;
                }
                "store" => {
                    i += 1;
                    if !self.store_list(loc, kw, arg(i), &mut def.store) {
                        return None;
                    }
                    i += 1;
                }
                "srvkey" => {
                    i += 1;
                    def.srvkey = match arg(i) {
                        "name" => SrvKey::Name,
                        "addr" => SrvKey::Addr,
                        other => {
                            self.alert(loc, format!("{kw} : unknown server key type '{other}'."));
                            return None;
                        }
                    };
                    i += 1;
                }
                other => {
                    self.alert(loc, format!("{kw}: unknown argument '{other}'."));
                    return None;
                }
            }
        }
        if def.size == 0 {
            self.alert(loc, format!("{kw}: missing size."));
            return None;
        }
        if !typed {
            self.alert(loc, format!("{kw}: missing type."));
            return None;
        }
        Some(def)
    }

    /// One `store` argument: a comma-separated list of data types with
    /// their arguments (`gpc0,http_req_rate(10s),gpc_rate(2,1m)`), added
    /// to `store`; false when refused (reported).
    fn store_list(&mut self, loc: &Loc, kw: &str, list: &str, store: &mut Vec<Stored>) -> bool {
        let b = list.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let start = i;
            let mut name_end = None;
            let (mut sa, mut sa2): (Option<&str>, Option<&str>) = (None, None);
            while i < b.len() && b[i] != b',' {
                if b[i] == b'(' {
                    name_end = Some(i);
                    let open = i + 1;
                    let Some(close) = list[open..].find(')').map(|p| open + p) else {
                        self.alert(
                            loc,
                            format!(
                                "{kw}: missing closing parenthesis after store option '{}'.",
                                &list[start..i]
                            ),
                        );
                        return false;
                    };
                    let inner = &list[open..close];
                    match inner.rfind(',') {
                        Some(c) => {
                            sa = Some(&inner[..c]);
                            sa2 = Some(&inner[c + 1..]);
                        }
                        None => sa = Some(inner),
                    }
                    i = close;
                }
                i += 1;
            }
            let name = &list[start..name_end.unwrap_or(i)];
            i += 1;
            let Some(data) = DataType::from_name(name) else {
                self.alert(loc, format!("{kw}: unknown store option '{name}'."));
                return false;
            };
            let data_name = name;
            if store.iter().any(|s| s.data == data) {
                self.tight(
                    Level::Warning,
                    loc,
                    format!("{kw}: store option '{data_name}' already enabled, ignored."),
                );
                continue;
            }
            let mut count = 1;
            if data.is_array() {
                let Some(n) = sa else {
                    self.alert(
                        loc,
                        format!("{kw}: missing argument to store option '{data_name}'."),
                    );
                    return false;
                };
                count = crate::config::units::atoi(n);
                if !(1..=i64::from(stick::MAX_ARRAY)).contains(&count) {
                    self.alert(
                        loc,
                        format!(
                            "{kw}: array size is out of allowed range (1-{}) for store option '{data_name}'.",
                            stick::MAX_ARRAY
                        ),
                    );
                    return false;
                }
                sa = sa2;
            }
            let mut period = 0;
            if data.std() == Std::Freq {
                let Some(p) = sa else {
                    self.alert(
                        loc,
                        format!("{kw}: missing argument to store option '{data_name}'."),
                    );
                    return false;
                };
                match crate::config::units::parse_time(p) {
                    Ok(d) => period = d.as_millis() as u32,
                    Err(_) => {
                        self.alert(
                            loc,
                            format!("{kw}: error when processing store option '{data_name}'."),
                        );
                        return false;
                    }
                }
            } else if sa.is_some() {
                self.alert(
                    loc,
                    format!("{kw}: unexpected argument to store option '{data_name}'."),
                );
                return false;
            }
            store.push(Stored {
                data,
                count: count as u32,
                period,
            });
            store.sort_by_key(|s| s.data);
        }
        let has = |d: DataType| store.iter().any(|s| s.data == d);
        let clash = if has(DataType::Gpt) && has(DataType::Gpt0) {
            Some(("gpt", "gpt0"))
        } else if has(DataType::Gpc) && (has(DataType::Gpc0) || has(DataType::Gpc1)) {
            Some(("gpc", "gpc[0/1]"))
        } else if has(DataType::GpcRate) && (has(DataType::Gpc0Rate) || has(DataType::Gpc1Rate)) {
            Some(("gpc_rate", "gpc[0/1]_rate"))
        } else {
            None
        };
        if let Some((a, b)) = clash {
            self.alert(
                loc,
                format!("{kw}: simultaneous usage of '{a}' and '{b}' in a same table is not permitted as '{a}' overrides '{b}'."),
            );
            return false;
        }
        true
    }

    /// `stick on|match|store-request|store-response <expr> [table <t>]
    /// [if|unless <cond>]`.
    pub(super) fn kw_stick(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "stick", false, false, true) {
            return;
        }
        let kind = match words.get(1).map_or("", String::as_str) {
            "store" | "store-request" => StickKind::StoreRequest,
            "store-response" => StickKind::StoreResponse,
            "match" => StickKind::Match,
            "on" => StickKind::On,
            _ => return self.alert(loc, "'stick' expects 'on', 'match', or 'store'."),
        };
        let Some(text) = words.get(2).filter(|w| !w.is_empty()) else {
            return self.alert(loc, "'stick' expects a fetch method.");
        };
        stick::context(ArgCtx::Stick);
        let key = match Expr::parse_in(text, Stage::ANY) {
            Ok((e, used)) if used == text.len() => e,
            Ok((_, used)) => {
                let m = format!(
                    "'stick': failed to parse sample expression <{text}> : unexpected '{}'.",
                    &text[used..]
                );
                return self.alert(loc, m);
            }
            Err(e) => return self.alert(loc, format!("'stick': {e}")),
        };
        let (place, what) = if kind == StickKind::StoreResponse {
            (
                crate::sample::stage::Place::BeStoRul,
                "for 'store-response'",
            )
        } else {
            (crate::sample::stage::Place::BeSetSrv, "during request")
        };
        if !key.fetch().uses.usable_in(Stage::of(place)) {
            let m = format!(
                "'stick': fetch method '{}' extracts information from '{}', none of which is available {what}.",
                key.fetch_name(),
                key.fetch().uses.names()
            );
            return self.alert(loc, m);
        }
        let mut i = 3;
        let (table, named) = if words.get(i).map(String::as_str) == Some("table") {
            let t = words.get(i + 1).cloned().unwrap_or_default();
            i += 2;
            (t, true)
        } else {
            (self.px().name.clone(), false)
        };
        let cond = match words.get(i).map(String::as_str) {
            None => None,
            Some("if" | "unless") => match self.condition(loc, &words[i..]) {
                Ok(c) => Some(c),
                Err(e) => {
                    let m = format!(
                        "'stick': error detected while parsing sticking condition : {e}{}",
                        stop(&e)
                    );
                    return self.alert(loc, m);
                }
            },
            Some(other) => {
                let m = format!("'stick': unknown keyword '{other}'.");
                return self.alert(loc, m);
            }
        };
        let rule = StickRule {
            kind,
            key,
            table: TableRef::named(&table),
            named,
            cond,
            loc: loc.clone(),
        };
        self.px().stick_rules.push(rule);
    }
}

/// HAProxy's `proxy_cap_str` of a proxy.
fn cap_str(kind: ProxyKind) -> &'static str {
    match kind {
        ProxyKind::Frontend => "frontend",
        ProxyKind::Backend => "backend",
        ProxyKind::Listen => "proxy",
    }
}

/// `type ip|ipv6|integer|string [len <n>]|binary [len <n>]`: the key
/// type and the words it took; None where HAProxy refuses it.
fn key_type(words: &[String]) -> Option<(KeyType, usize)> {
    let custom = |default: u32, extra: u32| -> Option<(u32, usize)> {
        if words.get(1).map(String::as_str) != Some("len") {
            return Some((default, 1));
        }
        let n = crate::config::units::atoi(words.get(2).map_or("", String::as_str));
        let n = u32::try_from(n).ok().filter(|&n| n > 0)?;
        Some((n.checked_add(extra)?, 3))
    };
    Some(match words.first().map(String::as_str)? {
        "ip" => (KeyType::Ip, 1),
        "ipv6" => (KeyType::Ipv6, 1),
        "integer" => (KeyType::Integer, 1),
        "string" => {
            let (n, used) = custom(32, 1)?;
            (KeyType::String(n), used)
        }
        "binary" => {
            let (n, used) = custom(32, 0)?;
            (KeyType::Binary(n), used)
        }
        _ => return None,
    })
}

/// Where a table action runs: the rule set, for HAProxy's messages and
/// the places its expressions may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleSet {
    TcpConnection,
    TcpSession,
    TcpContent,
    HttpRequest,
    HttpResponse,
}

impl RuleSet {
    pub(crate) fn arg_ctx(self) -> ArgCtx {
        match self {
            RuleSet::TcpConnection => ArgCtx::TcpConnection,
            RuleSet::TcpSession => ArgCtx::TcpSession,
            RuleSet::TcpContent => ArgCtx::TcpContent,
            RuleSet::HttpRequest => ArgCtx::HttpRequest,
            RuleSet::HttpResponse => ArgCtx::HttpResponse,
        }
    }
}

/// The stick counter number of `track-sc<n>` (the text after `track-sc`).
fn track_number(text: &str) -> Result<u8, String> {
    let n: u32 = text
        .parse()
        .ok()
        .filter(|_| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("Wrong track-sc number '{text}'"))?;
    if n as usize >= stick::MAX_TRACKERS {
        return Err(format!(
            "{n} track-sc number exceeding {} (MAX_SESS_STKCTR-1) value",
            stick::MAX_TRACKERS - 1
        ));
    }
    Ok(n as u8)
}

/// `track-sc<n> <key> [table <table>]`: `args[0]` is the action word,
/// the condition already split off; `stage` where the key is read,
/// `proxy` the proxy's name (its table by default); `tcp` for a
/// `tcp-request` rule, which takes `table` without a name (as HAProxy: a
/// table named "" then). `Err` holds HAProxy's message, without the
/// rule's prefix; `Ok` the words it took (what follows must be a
/// condition).
pub(crate) fn track_rule(
    args: &[String],
    stage: Stage,
    (proxy, tcp): (&str, bool),
    loc: &Loc,
) -> Result<(TrackRule, usize), String> {
    let sc = track_number(&args[0]["track-sc".len()..])?;
    let Some(text) = args.get(1).filter(|t| !t.is_empty()) else {
        return Err("missing fetch method".to_string());
    };
    let key = match stick::within(ArgCtx::Track, || Expr::parse(text)) {
        Ok((e, used)) if used == text.len() => e,
        Ok((_, used)) => {
            return Err(format!(
                "failed to parse sample expression <{text}> : unexpected '{}'",
                &text[used..]
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !key.fetch().uses.usable_in(stage) {
        return Err(format!(
            "fetch method '{text}' extracts information from '{}', none of which is available here",
            key.fetch().uses.names()
        ));
    }
    let mut used = 2;
    let (table, named) = if args.get(2).map(String::as_str) == Some("table") {
        let t = match args.get(3) {
            Some(t) => t.clone(),
            None if tcp => String::new(),
            None => return Err("missing table name".to_string()),
        };
        used = 4;
        (t, true)
    } else {
        (proxy.to_string(), false)
    };
    Ok((
        TrackRule {
            sc,
            key,
            table: TableRef::named(&table),
            named,
            loc: loc.clone(),
        },
        used,
    ))
}

/// A counter number after an action's name: `(<n>)`, up to 2.
fn track_id(rest: &str, word: &str, usage: &dyn Fn() -> String, named: bool) -> Result<u8, String> {
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(usage)?;
    let n: u64 = inner.parse().map_err(|_| usage())?;
    if n as usize >= stick::MAX_TRACKERS {
        let who = if named {
            format!(" '{word}'")
        } else {
            String::new()
        };
        return Err(format!(
            "invalid stick table track ID{who}. The max allowed ID is {}",
            stick::MAX_TRACKERS - 1
        ));
    }
    Ok(n as u8)
}

/// `sc-inc-gpc(<idx>,<sc>)`, `sc-inc-gpc0[(<sc>)]`, `sc-inc-gpc1[(<sc>)]`
/// (`word` the action word).
pub(crate) fn inc_gpc(word: &str) -> Result<IncGpc, String> {
    let rest = &word["sc-inc-gpc".len()..];
    if let Some(args) = rest.strip_prefix('(') {
        let (idx, sc) = indexed(args, word, "gpc", "sc-inc-gpc(<GPC ID>,<Track ID>)")?;
        return Ok(IncGpc {
            which: GpIndex::Array(idx),
            sc,
        });
    }
    let which = match rest.as_bytes().first() {
        Some(b'0') => GpIndex::Zero,
        Some(b'1') => GpIndex::One,
        _ => {
            return Err(format!(
                "invalid gpc ID '{word}'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)"
            ));
        }
    };
    let sc = if rest.len() == 1 {
        0
    } else {
        let usage = || format!("invalid stick table track ID. Expects {word}(<Track ID>)");
        track_id(&rest[1..], word, &usage, false)?
    };
    Ok(IncGpc { which, sc })
}

/// `<idx>,<sc>)` of `sc-inc-gpc(` and `sc-set-gpt(`.
fn indexed(args: &str, word: &str, what: &str, usage: &str) -> Result<(u32, u8), String> {
    let digits = args.bytes().take_while(u8::is_ascii_digit).count();
    let missing = || format!("Missing {what} ID '{word}'. Expects {usage}");
    if args.as_bytes().get(digits) != Some(&b',') {
        return Err(missing());
    }
    let idx = if digits == 0 {
        0
    } else {
        args[..digits].parse::<u64>().map_err(|_| missing())? as u32
    };
    let sc_text = &args[digits + 1..];
    let bad_sc = || format!("invalid stick table track ID '{word}'. Expects {usage}");
    let sc_digits = sc_text
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'-')
        .count();
    if sc_text.get(sc_digits..) != Some(")") {
        return Err(bad_sc());
    }
    let sc = crate::config::units::atoi(&sc_text[..sc_digits]);
    if !(0..stick::MAX_TRACKERS as i64).contains(&sc) {
        return Err(format!(
            "invalid stick table track ID '{word}'. The max allowed ID is {}",
            stick::MAX_TRACKERS - 1
        ));
    }
    Ok((idx, sc as u8))
}

/// `sc-set-gpt(<idx>,<sc>) <value>`, `sc-set-gpt0[(<sc>)] <value>`:
/// `args[0]` the action word, the value after (an integer, else an
/// expression read at `stage`; in a `tcp-request connection` rule only an
/// integer, as HAProxy 2.6 manages).
pub(crate) fn set_gpt(
    args: &[String],
    stage: Stage,
    set: RuleSet,
) -> Result<(SetGpt, usize), String> {
    let word = args[0].as_str();
    let rest = &word["sc-set-gpt".len()..];
    let (which, sc) = if let Some(a) = rest.strip_prefix('(') {
        let (idx, sc) = indexed(a, word, "gpt", "sc-set-gpt(<GPT ID>,<Track ID>)")?;
        (GpIndex::Array(idx), sc)
    } else if let Some(r) = rest.strip_prefix('0') {
        let sc = if r.is_empty() {
            0
        } else {
            let usage = || {
                format!("invalid stick table track ID '{word}'. Expects sc-set-gpt0(<Track ID>)")
            };
            track_id(r, word, &usage, true)?
        };
        (GpIndex::Zero, sc)
    } else {
        return Err(format!(
            "invalid gpt ID '{word}'. Expects sc-set-gpt(<GPT ID>,<Track ID>)"
        ));
    };
    let text = args.get(1).map_or("", String::as_str);
    if let Some(v) = strtol_whole(text) {
        return Ok((
            SetGpt {
                which,
                sc,
                value: GptValue::Int(v),
            },
            2,
        ));
    }
    if set == RuleSet::TcpConnection {
        return Err("internal error, unexpected rule->from=0, please report this bug!".into());
    }
    let e = match Expr::parse(text) {
        Ok((e, used)) if used == text.len() => e,
        Ok((_, used)) => {
            return Err(format!(
                "failed to parse sample expression <{text}> : unexpected '{}'",
                &text[used..]
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if !e.fetch().uses.usable_in(stage) {
        return Err(format!(
            "fetch method '{text}' extracts information from '{}', none of which is available here",
            e.fetch().uses.names()
        ));
    }
    Ok((
        SetGpt {
            which,
            sc,
            value: GptValue::Expr(e),
        },
        2,
    ))
}

/// `strtol(text, &end, 10)` when it reads the whole text (an empty one
/// reads as 0, as HAProxy takes it).
fn strtol_whole(text: &str) -> Option<i64> {
    let t = text.trim_start_matches([' ', '\t']);
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if text.is_empty() {
        return Some(0);
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(crate::sample::value::str_to_int(t.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn track_numbers_as_haproxy() {
        assert_eq!(track_number("1"), Ok(1));
        assert_eq!(
            track_number("3"),
            Err("3 track-sc number exceeding 2 (MAX_SESS_STKCTR-1) value".into())
        );
        assert_eq!(track_number("x"), Err("Wrong track-sc number 'x'".into()));
    }

    #[test]
    fn gpc_actions_as_haproxy() {
        assert_eq!(
            inc_gpc("sc-inc-gpc0").unwrap(),
            IncGpc {
                which: GpIndex::Zero,
                sc: 0
            }
        );
        assert_eq!(inc_gpc("sc-inc-gpc1(2)").unwrap().sc, 2);
        assert_eq!(
            inc_gpc("sc-inc-gpc(4,1)").unwrap(),
            IncGpc {
                which: GpIndex::Array(4),
                sc: 1
            }
        );
        assert_eq!(
            inc_gpc("sc-inc-gpc0(3)").unwrap_err(),
            "invalid stick table track ID. The max allowed ID is 2"
        );
        assert_eq!(
            inc_gpc("sc-inc-gpc(1)").unwrap_err(),
            "Missing gpc ID 'sc-inc-gpc(1)'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)"
        );
        assert_eq!(
            inc_gpc("sc-inc-gpc(1,5)").unwrap_err(),
            "invalid stick table track ID 'sc-inc-gpc(1,5)'. The max allowed ID is 2"
        );
        assert_eq!(
            inc_gpc("sc-inc-gpc2").unwrap_err(),
            "invalid gpc ID 'sc-inc-gpc2'. Expects sc-inc-gpc(<GPC ID>,<Track ID>)"
        );
    }
}
