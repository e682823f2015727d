//! Where each stored data type sits in an entry: a table's entries are
//! rows of 64-bit words, two of header, the key's, then one word per
//! integer (two per frequency counter) of the data types the table
//! stores, arrays element after element.

use crate::config::model::{Stored, TableDef};
use crate::sample::stick::{DataType, Std};

/// The header words of an entry: [`H_EXPIRE`] holds the expiration date
/// (low half) and the entry's last update sequence (high half);
/// [`H_REFS`] the streams that track the entry (low half) and the date it
/// was last queued for expiration under (high half, 0 for a free slot).
pub(crate) const H_EXPIRE: usize = 0;
pub(crate) const H_REFS: usize = 1;
pub(crate) const HEADER: usize = 2;

/// One stored data type's place.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// First word, from the start of the entry.
    pub(crate) at: usize,
    /// Elements (1 but for the arrays).
    pub(crate) count: u32,
    /// The period of a rate, in milliseconds.
    pub(crate) period: u32,
}

impl Field {
    /// The words of element `idx` (one, or two for a frequency counter).
    pub(crate) fn element(&self, data: DataType, idx: u32) -> Option<(usize, usize)> {
        if idx >= self.count {
            return None;
        }
        let w = words_of(data);
        Some((self.at + idx as usize * w, w))
    }
}

fn words_of(data: DataType) -> usize {
    if data.std() == Std::Freq { 2 } else { 1 }
}

/// The layout of a table's entries.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    fields: [Option<Field>; 25],
    pub(crate) key_words: usize,
    /// Words per entry.
    pub(crate) stride: usize,
}

impl Schema {
    pub(crate) fn of(def: &TableDef) -> Schema {
        let key_words = super::key::word_count(def.key);
        let mut at = HEADER + key_words;
        let mut fields = [None; 25];
        for &Stored {
            data,
            count,
            period,
        } in &def.store
        {
            fields[data as usize] = Some(Field { at, count, period });
            at += words_of(data) * count as usize;
        }
        Schema {
            fields,
            key_words,
            stride: at,
        }
    }

    pub(crate) fn field(&self, data: DataType) -> Option<Field> {
        self.fields[data as usize]
    }

    /// The data types stored, in HAProxy's order, with their places.
    pub(crate) fn stored(&self) -> impl Iterator<Item = (DataType, Field)> + '_ {
        DataType::ALL
            .into_iter()
            .filter_map(|d| self.field(d).map(|f| (d, f)))
    }
}

/// The server names and addresses `server_key` entries hold, numbered
/// from 1 (0: none) for the whole process, as HAProxy's dictionary shares
/// them between tables.
pub(crate) mod dict {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, RwLock};

    #[derive(Default)]
    struct Words {
        texts: Vec<Arc<str>>,
        numbers: HashMap<Arc<str>, u64>,
    }

    static WORDS: LazyLock<RwLock<Words>> = LazyLock::new(Default::default);

    /// The number of `text`, given it if new. Known texts (the usual case:
    /// the few servers' names) take only the shared side of the lock.
    pub(crate) fn intern(text: &str) -> u64 {
        if let Some(&n) = WORDS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .numbers
            .get(text)
        {
            return n;
        }
        let mut w = WORDS.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&n) = w.numbers.get(text) {
            return n;
        }
        let t: Arc<str> = Arc::from(text);
        w.texts.push(t.clone());
        let n = w.texts.len() as u64;
        w.numbers.insert(t, n);
        n
    }

    /// The text numbered `n` (None for 0 or an unknown number).
    pub(crate) fn get(n: u64) -> Option<Arc<str>> {
        let i = usize::try_from(n.checked_sub(1)?).ok()?;
        WORDS.read().ok()?.texts.get(i).cloned()
    }
}
