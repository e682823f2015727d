//! `cookie <name> [options]`: cookie-based persistence (HAProxy's
//! `cfg_parse_listen` "cookie" branch, with its messages), and
//! `option persist`.

use super::*;

impl State<'_> {
    pub(super) fn kw_cookie(&mut self, loc: &Loc, words: &[String]) {
        if !self.cap(loc, "cookie", true, false, true) {
            return;
        }
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            return self.alert(loc, "'cookie' expects <cookie_name> as argument.");
        };
        let mut ck = CookiePersist {
            name: name.clone(),
            ..CookiePersist::default()
        };
        let (mut rewrite, mut insert, mut prefix) = (false, false, false);
        let mut i = 2;
        while let Some(w) = words.get(i) {
            let arg = words.get(i + 1).filter(|a| !a.is_empty());
            match w.as_str() {
                "rewrite" => rewrite = true,
                "insert" => insert = true,
                "prefix" => prefix = true,
                "indirect" => ck.indirect = true,
                "nocache" => ck.nocache = true,
                "postonly" => ck.postonly = true,
                "preserve" => ck.preserve = true,
                "httponly" => ck.httponly = true,
                "secure" => ck.secure = true,
                "domain" => {
                    let Some(d) = arg else {
                        let msg = "'domain' expects <domain> as argument.";
                        return self.tight(Level::Alert, loc, msg);
                    };
                    if !d.contains('.') {
                        let msg = format!(
                            "domain '{d}' contains no embedded dot, this configuration may not work properly (see RFC6265#5.2.3)."
                        );
                        self.tight(Level::Warning, loc, msg);
                    }
                    if let Some(c) = d
                        .chars()
                        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
                    {
                        let msg = format!("character '{c}' is not permitted in domain name '{d}'.");
                        return self.tight(Level::Alert, loc, msg);
                    }
                    ck.domains.push(d.clone());
                    i += 1;
                }
                "attr" => {
                    let Some(a) = arg else {
                        let msg = "'attr' expects <value> as argument.";
                        return self.tight(Level::Alert, loc, msg);
                    };
                    if let Some(c) = a.bytes().find(|c| c.is_ascii_control() || *c == b';') {
                        let msg =
                            format!("character '%x{c:02X}' is not permitted in attribute value.");
                        return self.tight(Level::Alert, loc, msg);
                    }
                    ck.attrs.push(a.clone());
                    i += 1;
                }
                // Cookie dates and generated values: refused rather than
                // silently ignored, persistence would not expire as asked.
                "maxidle" | "maxlife" | "dynamic" => {
                    return self.unsupported(loc, &format!("cookie {w}"));
                }
                _ => {
                    return self.alert(
                        loc,
                        "'cookie' supports 'rewrite', 'insert', 'prefix', 'indirect', 'nocache', 'postonly', 'domain', 'maxidle', 'dynamic', 'maxlife' and 'attr' options.",
                    );
                }
            }
            i += 1;
        }
        let mut ok = true;
        if rewrite && ck.indirect {
            self.alert(
                loc,
                "cookie 'rewrite' and 'indirect' modes are incompatible.",
            );
            ok = false;
        }
        if [rewrite, insert, prefix].iter().filter(|&&m| m).count() > 1 {
            self.alert(
                loc,
                "cookie 'rewrite', 'insert' and 'prefix' modes are incompatible.",
            );
            ok = false;
        }
        if ck.preserve && !insert && !ck.indirect {
            self.alert(
                loc,
                "cookie 'preserve' requires at least 'insert' or 'indirect'.",
            );
            ok = false;
        }
        ck.mode = if insert {
            CookieMode::Insert
        } else if rewrite {
            CookieMode::Rewrite
        } else if prefix {
            CookieMode::Prefix
        } else {
            CookieMode::Passive
        };
        if ok {
            self.px().cookie = Some(Arc::new(ck));
        }
    }

    /// `[no] option persist`.
    pub(super) fn persist_option(&mut self, loc: &Loc, words: &[String], neg: bool) {
        if let Some(extra) = words.get(2) {
            return self.alert(
                loc,
                format!("'option persist' cannot handle unexpected argument '{extra}'."),
            );
        }
        if self.cap(loc, "option persist", true, false, true) {
            self.px().persist = !neg;
        }
    }
}
