//! Bytes on the wire, no policy: the HTTP/1 codec and where a refused
//! message went wrong, HTTP/2 <-> HTTP/1 message mapping, HAProxy's error
//! pages, the PROXY protocol, buffered connection halves and relaying,
//! kernel splicing. Everything above it reads and writes through here.

pub(crate) mod client_hello;
pub(crate) mod deadline;
pub(crate) mod error_pages;
pub(crate) mod error_spot;
pub(crate) mod fcgi;
pub mod h1;
pub(crate) mod h2_convert;
pub(crate) mod h2_pipe;
pub(crate) mod h2_stream;
pub(crate) mod http_date;
pub(crate) mod io;
pub(crate) mod logged_size;
pub mod proxy_proto;
pub(crate) mod relay;
pub(crate) mod spares;
pub(crate) mod splice;
pub(crate) mod spop;
