//! The tables of a configuration: by name in the runtime registry (a
//! reload keeps a table whose definition is unchanged, entries and all),
//! and by the number of their name in a snapshot, for the fetches and
//! actions that name them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::Table;
use crate::sample::stick::TableRef;

/// Every table of the running configuration, by name. Only touched when a
/// snapshot is compiled or applied, and by the CLI.
#[derive(Debug, Default)]
pub(crate) struct TableRegistry {
    tables: Mutex<HashMap<String, Arc<Table>>>,
}

impl TableRegistry {
    pub(crate) fn find(&self, name: &str) -> Option<Arc<Table>> {
        super::lock(&self.tables).get(name).cloned()
    }

    /// Keeps `t` under its name, in place of any table of that name.
    pub(crate) fn insert(&self, t: Arc<Table>) {
        super::lock(&self.tables).insert(t.name().to_string(), t);
    }

    pub(crate) fn remove(&self, name: &str) {
        super::lock(&self.tables).remove(name);
    }

    /// The names held.
    pub(crate) fn names(&self) -> Vec<String> {
        super::lock(&self.tables).keys().cloned().collect()
    }
}

/// A snapshot's tables: by the number of their names (see
/// [`TableRef`]), and in the order `show table` lists them (HAProxy's:
/// the last declared first).
#[derive(Debug, Default)]
pub(crate) struct Tables {
    by_id: Vec<Option<Arc<Table>>>,
    listed: Vec<Arc<Table>>,
}

impl Tables {
    /// `tables` in declaration order.
    pub(crate) fn new(tables: Vec<Arc<Table>>) -> Tables {
        let mut by_id: Vec<Option<Arc<Table>>> = Vec::new();
        for t in &tables {
            let id = TableRef::named(t.name()).id as usize;
            if by_id.len() <= id {
                by_id.resize(id + 1, None);
            }
            by_id[id] = Some(t.clone());
        }
        let mut listed = tables;
        listed.reverse();
        Tables { by_id, listed }
    }

    /// The table `r` names, if this configuration has it.
    #[inline]
    pub(crate) fn get(&self, r: &TableRef) -> Option<&Arc<Table>> {
        self.by_id.get(r.id as usize)?.as_ref()
    }

    pub(crate) fn by_name(&self, name: &str) -> Option<&Arc<Table>> {
        self.listed.iter().find(|t| t.name() == name)
    }

    /// In `show table` order.
    pub(crate) fn listed(&self) -> &[Arc<Table>] {
        &self.listed
    }
}
