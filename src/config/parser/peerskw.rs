//! `peers` sections: read so that configurations that have them parse,
//! their tables declared (`table <name> type ...`, named
//! `<section>/<name>`), their other lines kept for the peers layer. The
//! protocol itself is not spoken yet.

use super::*;
use crate::config::model::{PeerLine, PeersSection};
use stickkw::Declared;

impl State<'_> {
    /// `peers <name>`.
    pub(super) fn start_peers(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.alert(loc, "missing name for peers section.");
            self.section = Section::Skip;
            return;
        };
        if let Some(extra) = words.get(2) {
            self.alert(
                loc,
                format!(
                    "'{}' cannot handle unexpected argument '{extra}'.",
                    words[0]
                ),
            );
            self.section = Section::Skip;
            return;
        }
        if let Some(c) = bad_name_char(name) {
            self.alert(
                loc,
                format!("character '{c}' is not permitted in 'peers' name '{name}'."),
            );
            self.section = Section::Skip;
            return;
        }
        if let Some(other) = self.global.peers.iter().find(|p| p.name == *name) {
            let msg = format!(
                "Parsing [{loc}]: peers section '{name}' has the same name as another peers section declared at {}.",
                other.loc
            );
            self.diags.push(Diagnostic::alert(Some(loc.clone()), msg));
        }
        self.global.peers.push(PeersSection {
            name: name.clone(),
            loc: loc.clone(),
            disabled: false,
            peers: Vec::new(),
            lines: Vec::new(),
            tables: Vec::new(),
        });
        self.section = Section::Peers(self.global.peers.len() - 1);
    }

    pub(super) fn peers_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let section = self.global.peers[i].name.clone();
        match words[0].as_str() {
            "bind" | "default-bind" | "default-server" | "log" => {
                self.global.peers[i]
                    .lines
                    .push((loc.clone(), words.to_vec()));
            }
            "peer" | "server" => {
                let server = words[0] == "server";
                let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
                    return self.alert(
                        loc,
                        format!(
                            "'{}' expects <name> and <addr>[:<port>] as arguments.",
                            words[0]
                        ),
                    );
                };
                let addr = words.get(2).cloned();
                if addr.is_none() && !server {
                    return self.alert(
                        loc,
                        format!(
                            "'{}' expects <name> and <addr>[:<port>] as arguments.",
                            words[0]
                        ),
                    );
                }
                self.global.peers[i].peers.push(PeerLine {
                    name: name.clone(),
                    addr,
                    server,
                    options: words.get(3..).unwrap_or(&[]).to_vec(),
                    loc: loc.clone(),
                });
            }
            "table" => {
                let short = words.get(1).cloned().unwrap_or_default();
                if self.table_conflict(loc, &short) {
                    return;
                }
                let name = format!("{section}/{short}");
                crate::sample::stick::in_proxy(&name, false);
                if let Some(def) = self.parse_table(loc, words, 2, &name, Some(&section)) {
                    self.declared_tables.push(Declared {
                        name: name.clone(),
                        loc: loc.clone(),
                        by: format!("peers '{section}'"),
                    });
                    self.global.table_order.push(name);
                    self.global.peers[i].tables.push(def);
                }
            }
            "disabled" => self.global.peers[i].disabled = true,
            "enabled" => self.global.peers[i].disabled = false,
            other => self.alert(loc, format!("unknown keyword '{other}' in 'peers' section")),
        }
    }
}
