//! The compression settings of a proxy as the response filters read
//! them (`http/compress.rs`): compiled once per snapshot, so a response
//! never looks at configuration text.

use crate::config::model::{CompAlgo, Compression};

/// `compression algo|type|offload` of a frontend or a backend, with the
/// process's `tune.comp.maxlevel`.
#[derive(Debug, Clone)]
pub(crate) struct CompRt {
    /// In HAProxy's order (the last one written first).
    pub(crate) algos: Vec<CompAlgo>,
    /// `Content-Type` prefixes compared without case (none: any type).
    pub(crate) types: Vec<Box<[u8]>>,
    pub(crate) offload: bool,
    /// The encoders' level, 1 to 9.
    pub(crate) level: u32,
}

impl CompRt {
    pub(crate) fn compile(c: &Compression, level: u32) -> CompRt {
        CompRt {
            algos: c.algos.clone(),
            types: c
                .types
                .iter()
                .map(|t| t.as_bytes().to_vec().into_boxed_slice())
                .collect(),
            offload: c.offload,
            level,
        }
    }
}
