//! gRPC through sluice to a `proto h2` server: a real gRPC server (tonic's
//! gRPC handling on hyper's HTTP/2 server, as tonic's transport runs it)
//! and a real gRPC client (tonic's, over HTTP/2 with prior knowledge). A
//! unary call, a server-streaming call, and calls that end with a non-zero
//! `grpc-status`, both trailers-only and after messages: the statuses,
//! messages, response metadata and trailers the client gets are those the
//! server sent. The same calls go through haproxy 2.6 on the same
//! configuration (where it is installed; under CI it must be), which gives
//! the same answers.
//!
//! Messages are raw bytes (a codec of our own, no protobuf), so nothing is
//! generated at build time.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status};

use support::haproxy::{self, Haproxy};
use support::*;

/// Messages as they are: bytes.
#[derive(Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// `/t.Echo/Unary`: the request's bytes back, upper-cased, with response
/// metadata; `/t.Echo/Fail`: NOT_FOUND at once (a trailers-only answer)
/// with metadata of its own.
#[derive(Clone)]
struct Unary;

impl tonic::codegen::Service<Request<Bytes>> for Unary {
    type Response = Response<Bytes>;
    type Error = Status;
    type Future = std::future::Ready<Result<Response<Bytes>, Status>>;
    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Status>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let fail = req.metadata().get("x-fail").is_some();
        if fail {
            let mut st = Status::new(Code::NotFound, "no such thing");
            st.metadata_mut()
                .insert("x-why", MetadataValue::from_static("gone"));
            return std::future::ready(Err(st));
        }
        let mut resp = Response::new(Bytes::from(req.into_inner().to_ascii_uppercase()));
        resp.metadata_mut()
            .insert("x-unary", MetadataValue::from_static("yes"));
        std::future::ready(Ok(resp))
    }
}

type Messages = tonic::codegen::tokio_stream::Iter<std::vec::IntoIter<Result<Bytes, Status>>>;

/// `/t.Echo/Stream`: three messages then OK; with `x-fail`, two messages
/// then ABORTED, with metadata, in the trailers.
#[derive(Clone)]
struct Streamed;

impl tonic::codegen::Service<Request<Bytes>> for Streamed {
    type Response = Response<Messages>;
    type Error = Status;
    type Future = std::future::Ready<Result<Response<Messages>, Status>>;
    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Status>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let fail = req.metadata().get("x-fail").is_some();
        let word = req.into_inner();
        let mut items: Vec<Result<Bytes, Status>> = (1..=if fail { 2 } else { 3 })
            .map(|i| {
                Ok(Bytes::from(format!(
                    "{}-{i}",
                    String::from_utf8_lossy(&word)
                )))
            })
            .collect();
        if fail {
            let mut st = Status::new(Code::Aborted, "cut short");
            st.metadata_mut()
                .insert("x-where", MetadataValue::from_static("mid-stream"));
            items.push(Err(st));
        }
        std::future::ready(Ok(Response::new(tonic::codegen::tokio_stream::iter(items))))
    }
}

/// The gRPC server on 127.0.0.1, HTTP/2 only, as tonic serves.
async fn grpc_server() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        let mut grpc = tonic::server::Grpc::new(Raw);
                        let resp = match req.uri().path() {
                            "/t.Echo/Unary" => grpc.unary(Unary, req).await,
                            "/t.Echo/Stream" => grpc.server_streaming(Streamed, req).await,
                            _ => Status::unimplemented("no such method").into_http(),
                        };
                        Ok::<_, Infallible>(resp)
                    },
                );
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                        .await;
            });
        }
    });
    addr
}

fn config(fe: &Listen, server: SocketAddr) -> String {
    format!(
        "defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind {fe}
    default_backend be
backend be
    server grpc {server} proto h2
"
    )
}

/// What a client sees of each call, made through `port`.
async fn calls(port: u16) -> Vec<String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    let mut seen = Vec::new();
    let status = |s: &Status| {
        format!(
            "status {:?} {:?} x-why={:?} x-where={:?}",
            s.code(),
            s.message(),
            s.metadata()
                .get("x-why")
                .map(|v| v.to_str().unwrap_or("?").to_string()),
            s.metadata()
                .get("x-where")
                .map(|v| v.to_str().unwrap_or("?").to_string()),
        )
    };

    // Unary.
    grpc.ready().await.unwrap();
    let r = grpc
        .unary(
            Request::new(Bytes::from_static(b"hello")),
            http::uri::PathAndQuery::from_static("/t.Echo/Unary"),
            Raw,
        )
        .await;
    seen.push(match r {
        Ok(r) => format!(
            "unary {:?} x-unary={:?}",
            r.get_ref(),
            r.metadata()
                .get("x-unary")
                .map(|v| v.to_str().unwrap_or("?").to_string())
        ),
        Err(s) => status(&s),
    });

    // Unary, failing at once (trailers-only).
    grpc.ready().await.unwrap();
    let mut req = Request::new(Bytes::from_static(b"x"));
    req.metadata_mut()
        .insert("x-fail", MetadataValue::from_static("1"));
    let r = grpc
        .unary(
            req,
            http::uri::PathAndQuery::from_static("/t.Echo/Unary"),
            Raw,
        )
        .await;
    seen.push(match r {
        Ok(r) => format!("unary {:?}", r.get_ref()),
        Err(s) => status(&s),
    });

    // Server streaming, to its end and its trailers.
    for fail in [false, true] {
        grpc.ready().await.unwrap();
        let mut req = Request::new(Bytes::from_static(b"tick"));
        if fail {
            req.metadata_mut()
                .insert("x-fail", MetadataValue::from_static("1"));
        }
        let r = grpc
            .server_streaming(
                req,
                http::uri::PathAndQuery::from_static("/t.Echo/Stream"),
                Raw,
            )
            .await;
        let mut stream = match r {
            Ok(r) => r.into_inner(),
            Err(s) => {
                seen.push(status(&s));
                continue;
            }
        };
        loop {
            match stream.message().await {
                Ok(Some(m)) => seen.push(format!("message {m:?}")),
                Ok(None) => {
                    let t = stream.trailers().await;
                    let t = t.map(|t| {
                        t.map(|m| {
                            let m = m.into_headers();
                            m.iter()
                                .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap_or("?")))
                                .collect::<Vec<_>>()
                        })
                    });
                    seen.push(format!("end, trailers {t:?}"));
                    break;
                }
                Err(s) => {
                    seen.push(status(&s));
                    break;
                }
            }
        }
    }
    seen
}

#[tokio::test]
async fn grpc_calls_through_an_h2_server() {
    let server = grpc_server().await;
    let fe = Listen::new();
    let _s = Sluice::start(&config(&fe, server));
    let got = calls(fe.port()).await;
    let want = [
        r#"unary b"HELLO" x-unary=Some("yes")"#,
        r#"status NotFound "no such thing" x-why=Some("gone") x-where=None"#,
        r#"message b"tick-1""#,
        r#"message b"tick-2""#,
        r#"message b"tick-3""#,
        r#"end, trailers Ok(Some(["grpc-status: 0"]))"#,
        r#"message b"tick-1""#,
        r#"message b"tick-2""#,
        r#"status Aborted "cut short" x-why=None x-where=Some("mid-stream")"#,
    ];
    assert_eq!(got, want);
    // haproxy 2.6 on the same configuration: the same calls, the same
    // answers.
    if !haproxy::available() {
        return;
    }
    let hfe = Listen::new();
    let _h = Haproxy::start("grpc", &config(&hfe, server), &[&hfe]);
    assert_eq!(calls(hfe.port()).await, got, "haproxy, then sluice");
}
