//! `userlist <name>` sections: `group <name> [users <user>,...]` and
//! `user <name> [password <hash>|insecure-password <pw>] [groups
//! <group>,...]`, with HAProxy 2.6's messages. The cross-references
//! (a group's users, a user's groups) are checked when the section ends.

use super::*;
use crate::sample::auth::{self, Password, User, Userlist};

impl State<'_> {
    /// `userlist <name>`: a new list (a second one of a name is ignored,
    /// as HAProxy does, with its warning).
    pub(super) fn start_userlist(&mut self, loc: &Loc, words: &[String]) {
        let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
            self.tight(Level::Alert, loc, "'userlist' expects <name> as arguments.");
            self.section = Section::Skip;
            return;
        };
        if self.global.userlists.iter().any(|l| l.name == *name) {
            self.tight(
                Level::Warning,
                loc,
                format!("ignoring duplicated userlist '{name}'."),
            );
            self.section = Section::Skip;
            return;
        }
        self.global.userlists.push(Userlist {
            name: name.clone(),
            groups: Vec::new(),
            users: Vec::new(),
        });
        self.userlist_groups.push(Vec::new());
        self.section = Section::Userlist(self.global.userlists.len() - 1);
    }

    pub(super) fn userlist_line(&mut self, i: usize, loc: &Loc, words: &[String]) {
        let list = self.global.userlists[i].name.clone();
        match words[0].as_str() {
            "group" => {
                let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
                    return self.tight(Level::Alert, loc, "'group' expects <name> as arguments.");
                };
                if self.global.userlists[i].groups.contains(name) {
                    return self.tight(
                        Level::Warning,
                        loc,
                        format!("ignoring duplicated group '{name}' in userlist '{list}'."),
                    );
                }
                let mut users = Vec::new();
                let mut k = 2;
                while let Some(w) = words.get(k) {
                    match (w.as_str(), words.get(k + 1)) {
                        ("users", Some(u)) => {
                            users.extend(u.split(',').filter(|u| !u.is_empty()).map(String::from));
                            k += 2;
                        }
                        _ => {
                            return self.tight(
                                Level::Alert,
                                loc,
                                "'group' only supports 'users' option.",
                            );
                        }
                    }
                }
                self.global.userlists[i].groups.push(name.clone());
                self.userlist_groups[i].push((name.clone(), users));
            }
            "user" => {
                let Some(name) = words.get(1).filter(|n| !n.is_empty()) else {
                    return self.tight(Level::Alert, loc, "'user' expects <name> as arguments.");
                };
                if self.global.userlists[i]
                    .users
                    .iter()
                    .any(|u| u.name == *name)
                {
                    return self.tight(
                        Level::Warning,
                        loc,
                        format!("ignoring duplicated user '{name}' in userlist '{list}'."),
                    );
                }
                let mut password = Password::None;
                let mut groups = Vec::new();
                let mut k = 2;
                while let Some(w) = words.get(k) {
                    let v = words.get(k + 1).cloned().unwrap_or_default();
                    match w.as_str() {
                        "password" => {
                            if let Err(e) = auth::check_hash(&v) {
                                return self.tight(
                                    Level::Alert,
                                    loc,
                                    format!("user '{name}' in userlist '{list}': {e}."),
                                );
                            }
                            password = Password::Hash(v);
                        }
                        "insecure-password" => password = Password::Clear(v),
                        "groups" => {
                            groups.extend(v.split(',').filter(|g| !g.is_empty()).map(String::from))
                        }
                        _ => {
                            return self.tight(
                                Level::Alert,
                                loc,
                                "'user' only supports 'password', 'insecure-password' and 'groups' options.",
                            );
                        }
                    }
                    k += 2;
                }
                self.global.userlists[i].users.push(User {
                    name: name.clone(),
                    password,
                    groups,
                });
            }
            other => self.tight(
                Level::Alert,
                loc,
                format!("unknown keyword '{other}' in 'users' section"),
            ),
        }
    }

    /// At the end of the configuration: each group's `users` and each
    /// user's `groups` must name what the list has (HAProxy's messages);
    /// a user then knows all its groups.
    pub(super) fn finish_userlists(&mut self) {
        for (i, groups) in std::mem::take(&mut self.userlist_groups)
            .into_iter()
            .enumerate()
        {
            let list = &mut self.global.userlists[i];
            let name = list.name.clone();
            for u in &list.users {
                if let Some(g) = u.groups.iter().find(|g| !list.groups.contains(g)) {
                    self.diags.push(Diagnostic::alert(
                        None,
                        format!(
                            "userlist '{name}': no such group '{g}' specified in user '{}'",
                            u.name
                        ),
                    ));
                }
            }
            for (g, users) in groups {
                for u in users {
                    match list.users.iter_mut().find(|x| x.name == u) {
                        Some(x) => {
                            if !x.groups.contains(&g) {
                                x.groups.push(g.clone());
                            }
                        }
                        None => self.diags.push(Diagnostic::alert(
                            None,
                            format!(
                                "userlist '{name}': no such user '{u}' specified in group '{g}'"
                            ),
                        )),
                    }
                }
            }
        }
    }
}
