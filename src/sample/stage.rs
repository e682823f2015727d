//! Where a fetch can work: HAProxy's "usable in" rules.
//!
//! A fetch declares the sources its value comes from ([`Src`]: the
//! connection, the request headers, the backend, the response...), and the
//! place that parses an expression says where it will be evaluated
//! ([`Stage`]: a set of check places, as a `listen` section's rule runs at
//! the frontend's place and at the backend's). An expression whose fetch
//! needs a source that none of those places has is refused with HAProxy
//! 2.6's message, as `haproxy -c` refuses `res.hdr` in `http-request`,
//! `be_name` in a frontend's `http-request` or `req.hdr` in a log format.

/// One place where samples are taken, in HAProxy's order (its messages
/// name the first place of a set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Place {
    FeConAcc,
    FeSesAcc,
    FeReqCnt,
    FeHrqHdr,
    FeHrqBdy,
    FeSetBck,
    BeReqCnt,
    BeHrqHdr,
    BeHrqBdy,
    BeSetSrv,
    BeSrvCon,
    BeResCnt,
    BeHrsHdr,
    BeHrsBdy,
    BeStoRul,
    FeResCnt,
    FeHrsHdr,
    FeHrsBdy,
    FeLogEnd,
    BeChkRul,
    CfgParser,
    CliParser,
}

const PLACE_NAMES: [&str; 22] = [
    "frontend tcp-request connection rule",
    "frontend tcp-request session rule",
    "frontend tcp-request content rule",
    "frontend http-request header rule",
    "frontend http-request body rule",
    "frontend use-backend rule",
    "backend tcp-request content rule",
    "backend http-request header rule",
    "backend http-request body rule",
    "backend use-server, balance or stick-match rule",
    "server source selection",
    "backend tcp-response content rule",
    "backend http-response header rule",
    "backend http-response body rule",
    "backend stick-store rule",
    "frontend tcp-response content rule",
    "frontend http-response header rule",
    "frontend http-response body rule",
    "logs",
    "backend tcp-check rule",
    "configuration parser",
    "CLI parser",
];

/// A set of [`Place`]s: where an expression will be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stage(u32);

impl Stage {
    /// Everywhere: for expressions whose place is not known (tests, the
    /// ACL parser until it passes its own).
    pub(crate) const ANY: Stage = Stage(u32::MAX);
    /// A log line (`log-format`, `error-log-format`).
    pub(crate) const LOG: Stage = Stage::of(Place::FeLogEnd);

    pub(crate) const fn of(p: Place) -> Stage {
        Stage(1 << p as u8)
    }

    pub(crate) const fn with(self, p: Place) -> Stage {
        Stage(self.0 | 1 << p as u8)
    }

    /// The places of a rule of a proxy that is a frontend, a backend or
    /// both (`listen`, `defaults`).
    const fn sides(fe: bool, be: bool, fe_place: Place, be_place: Place) -> Stage {
        let mut s = Stage(0);
        if fe {
            s = s.with(fe_place);
        }
        if be {
            s = s.with(be_place);
        }
        s
    }

    /// `http-request` rules (and the log-format strings of their actions).
    pub(crate) const fn http_request(fe: bool, be: bool) -> Stage {
        Stage::sides(fe, be, Place::FeHrqHdr, Place::BeHrqHdr)
    }

    /// `http-response` rules.
    pub(crate) const fn http_response(fe: bool, be: bool) -> Stage {
        Stage::sides(fe, be, Place::FeHrsHdr, Place::BeHrsHdr)
    }

    /// `tcp-request connection` rules (the ACL parser's to use: HAProxy
    /// warns there that an ACL "will never match").
    #[allow(dead_code)]
    pub(crate) const TCP_CONNECTION: Stage = Stage::of(Place::FeConAcc);

    /// HAProxy's name of the place, the first of the set (its ACL warnings
    /// say "incompatible with '<name>'", as the rules' parser does).
    pub(crate) fn name(self) -> &'static str {
        PLACE_NAMES
            .get(self.0.trailing_zeros() as usize)
            .copied()
            .unwrap_or("unknown sample check place")
    }
}

/// Where a fetch's value comes from, in HAProxy's order (its messages list
/// the sources of a fetch in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Src {
    /// Known when the configuration is read.
    Const,
    /// The process, not a connection (`nbthread`, `date`).
    Intrn,
    Listn,
    Ftend,
    /// The client's addresses.
    L4cli,
    /// The client connection past its handshake (TLS).
    L5cli,
    Track,
    /// The raw bytes of the request (`req.len`, `req.payload`).
    L6req,
    /// Request header values (what a rule can rewrite).
    Hrqhv,
    /// What stays of the request (its method, its version).
    Hrqhp,
    Hrqbo,
    Bkend,
    Servr,
    L4srv,
    L5srv,
    L6res,
    Hrshv,
    Hrshp,
    Hrsbo,
    Rqfin,
    Rsfin,
    Txfin,
    Ssfin,
}

impl Src {
    const ALL: [Src; 23] = [
        Src::Const,
        Src::Intrn,
        Src::Listn,
        Src::Ftend,
        Src::L4cli,
        Src::L5cli,
        Src::Track,
        Src::L6req,
        Src::Hrqhv,
        Src::Hrqhp,
        Src::Hrqbo,
        Src::Bkend,
        Src::Servr,
        Src::L4srv,
        Src::L5srv,
        Src::L6res,
        Src::Hrshv,
        Src::Hrshp,
        Src::Hrsbo,
        Src::Rqfin,
        Src::Rsfin,
        Src::Txfin,
        Src::Ssfin,
    ];

    /// HAProxy's name of the source, in its messages.
    fn name(self) -> &'static str {
        SRC_NAMES[self as usize]
    }
}

const SRC_NAMES: [&str; 23] = [
    "",
    "internal state",
    "listener",
    "frontend",
    "client address",
    "client-side connection",
    "track counters",
    "request buffer",
    "HTTP request headers",
    "HTTP request",
    "HTTP request body",
    "backend",
    "server",
    "server address",
    "server-side connection",
    "response buffer",
    "HTTP response headers",
    "HTTP response",
    "HTTP response body",
    "request buffer statistics",
    "response buffer statistics",
    "transaction statistics",
    "session statistics",
];

use Place as P;

/// The places each source is available at (by [`Src`] index): what is
/// known about a stream grows as it goes, and what is volatile (the raw
/// buffers, the header values) is gone by the time the line is logged.
const AVAILABLE: [&[Place]; 23] = {
    const REQ: &[Place] = &[
        P::FeReqCnt,
        P::FeHrqHdr,
        P::FeHrqBdy,
        P::FeSetBck,
        P::BeReqCnt,
        P::BeHrqHdr,
        P::BeHrqBdy,
        P::BeSetSrv,
        P::BeSrvCon,
    ];
    const ALL_STREAM: &[Place] = &[
        P::FeConAcc,
        P::FeSesAcc,
        P::FeReqCnt,
        P::FeHrqHdr,
        P::FeHrqBdy,
        P::FeSetBck,
        P::BeReqCnt,
        P::BeHrqHdr,
        P::BeHrqBdy,
        P::BeSetSrv,
        P::BeSrvCon,
        P::BeResCnt,
        P::BeHrsHdr,
        P::BeHrsBdy,
        P::BeStoRul,
        P::FeResCnt,
        P::FeHrsHdr,
        P::FeHrsBdy,
        P::FeLogEnd,
    ];
    const RES_LOG: &[Place] = &[
        P::BeResCnt,
        P::BeHrsHdr,
        P::BeHrsBdy,
        P::BeStoRul,
        P::FeResCnt,
        P::FeHrsHdr,
        P::FeHrsBdy,
        P::FeLogEnd,
        P::BeChkRul,
    ];
    const RES: &[Place] = &[
        P::BeResCnt,
        P::BeHrsHdr,
        P::BeHrsBdy,
        P::BeStoRul,
        P::FeResCnt,
        P::FeHrsHdr,
        P::FeHrsBdy,
        P::BeChkRul,
    ];
    const END: &[Place] = &[P::FeLogEnd];
    [
        // Const: everywhere, the parsers included.
        &[
            P::FeConAcc,
            P::FeSesAcc,
            P::FeReqCnt,
            P::FeHrqHdr,
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
            P::BeChkRul,
            P::CfgParser,
            P::CliParser,
        ],
        // Intrn: everywhere but the configuration parser.
        &[
            P::FeConAcc,
            P::FeSesAcc,
            P::FeReqCnt,
            P::FeHrqHdr,
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
            P::BeChkRul,
            P::CliParser,
        ],
        // Listn, Ftend: the whole stream.
        ALL_STREAM,
        ALL_STREAM,
        // L4cli: the whole stream and the checks.
        &[
            P::FeConAcc,
            P::FeSesAcc,
            P::FeReqCnt,
            P::FeHrqHdr,
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
            P::BeChkRul,
        ],
        // L5cli: once the session exists (not at accept).
        &[
            P::FeSesAcc,
            P::FeReqCnt,
            P::FeHrqHdr,
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
        ],
        // Track.
        ALL_STREAM,
        // L6req, Hrqhv: while the request is there.
        REQ,
        REQ,
        // Hrqhp: from the request on, the log included.
        &[
            P::FeReqCnt,
            P::FeHrqHdr,
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
        ],
        // Hrqbo: once the body is waited for.
        &[
            P::FeHrqBdy,
            P::FeSetBck,
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
        ],
        // Bkend: once a backend is chosen.
        &[
            P::BeReqCnt,
            P::BeHrqHdr,
            P::BeHrqBdy,
            P::BeSetSrv,
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
            P::BeChkRul,
        ],
        // Servr: once a server is chosen.
        &[
            P::BeSrvCon,
            P::BeResCnt,
            P::BeHrsHdr,
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::FeLogEnd,
            P::BeChkRul,
        ],
        // L4srv, L5srv: once connected to it.
        RES_LOG,
        RES_LOG,
        // L6res, Hrshv: while the response is there.
        RES,
        RES,
        // Hrshp: from the response on, the log included.
        RES_LOG,
        // Hrsbo.
        &[
            P::BeHrsBdy,
            P::BeStoRul,
            P::FeResCnt,
            P::FeHrsHdr,
            P::FeHrsBdy,
            P::BeChkRul,
        ],
        // Rqfin, Rsfin, Txfin, Ssfin: at the end only.
        END,
        END,
        END,
        END,
    ]
};

/// The sources of a fetch: a set of [`Src`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Uses(u32);

impl Uses {
    pub(crate) const fn of(srcs: &[Src]) -> Uses {
        let mut bits = 0;
        let mut i = 0;
        while i < srcs.len() {
            bits |= 1 << srcs[i] as u8;
            i += 1;
        }
        Uses(bits)
    }

    /// The places where at least one of the sources is available (HAProxy
    /// takes a fetch wherever one of its sources is).
    fn places(self) -> u32 {
        let mut out = 0;
        for (i, places) in AVAILABLE.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                for p in places.iter() {
                    out |= 1 << *p as u8;
                }
            }
        }
        out
    }

    /// Whether `src` is one of the sources.
    pub(crate) fn has(self, src: Src) -> bool {
        self.0 & (1 << src as u8) != 0
    }

    /// Whether every source is the request's headers or body, which
    /// HAProxy has forwarded by the time a response is handled.
    pub(crate) fn request_only(self) -> bool {
        let gone = Uses::of(&[Src::Hrqhv, Src::Hrqbo]).0;
        self.0 != 0 && self.0 & !gone == 0
    }

    /// Whether a fetch of these sources can work somewhere in `stage`.
    pub(crate) fn usable_in(self, stage: Stage) -> bool {
        self.places() & stage.0 != 0
    }

    /// The sources' names as HAProxy lists them ("backend,server").
    pub(crate) fn names(self) -> String {
        let mut out = String::new();
        for src in Src::ALL {
            if self.0 & (1 << src as u8) != 0 {
                if !out.is_empty() {
                    out.push(',');
                }
                out.push_str(src.name());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_as_haproxy() {
        let hdr = Uses::of(&[Src::Hrqhv]);
        assert!(hdr.usable_in(Stage::http_request(true, false)));
        assert!(!hdr.usable_in(Stage::LOG));
        assert!(!hdr.usable_in(Stage::http_response(true, true)));
        assert!(!hdr.usable_in(Stage::TCP_CONNECTION));
        let meth = Uses::of(&[Src::Hrqhp]);
        assert!(meth.usable_in(Stage::LOG));
        let be = Uses::of(&[Src::Bkend]);
        assert!(!be.usable_in(Stage::http_request(true, false)));
        assert!(be.usable_in(Stage::http_request(true, true)));
        assert_eq!(
            Uses::of(&[Src::L4cli, Src::L6req]).names(),
            "client address,request buffer"
        );
        assert_eq!(
            Stage::TCP_CONNECTION.name(),
            "frontend tcp-request connection rule"
        );
        assert_eq!(
            Stage::http_request(true, true).name(),
            "frontend http-request header rule"
        );
    }
}
