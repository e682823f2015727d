//! Pipes between an HTTP/2 stream and the HTTP/1 pipeline: a stream's
//! body written into a pipe (re-chunked when it goes chunked), an HTTP/1
//! message read back from a pipe and sent as HEADERS and DATA frames, with
//! flow control following what each side takes. Both the client side
//! (`http::h2`) and the server side (`upstream::h2`) bridge through these.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use h2::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::wire::h1::{self, BodyKind};
use crate::wire::h2_convert::Dechunker;
use crate::wire::io::with_timeout;

/// Bytes the pipe holds each way: one relay buffer.
pub(crate) const PIPE_BUF: usize = 16 * 1024;

/// Copies a body from a stream into a pipe (as chunks when it goes
/// chunked), releasing flow-control window for each frame as it is taken
/// from the stream, and taking the next only once the pipe has the last:
/// a slow reader slows the sender down, at most one frame beyond the
/// stream's window piles up. (A client's request body here; a server's response
/// body for `upstream`.)
pub(crate) async fn upload(
    mut body: RecvStream,
    mut pipe: impl AsyncWrite + Unpin,
    chunked: bool,
    data_frames: Option<&AtomicU64>,
    timeout: Option<Duration>,
) {
    let mut ok = true;
    if !body.is_end_stream() {
        loop {
            let Some(data) = with_timeout(timeout, body.data()).await else {
                ok = false;
                break;
            };
            let data = match data {
                None => break,
                Some(Ok(d)) => d,
                // Reset by the client, or a broken length.
                Some(Err(_)) => {
                    ok = false;
                    break;
                }
            };
            if let Some(c) = data_frames {
                c.fetch_add(1, Relaxed);
            }
            if data.is_empty() {
                continue;
            }
            let n = data.len();
            // The frame is in sluice's hands: its window goes back at
            // once (one frame more than the stream's window is held at
            // most), as HAProxy gives it back.
            let _ = body.flow_control().release_capacity(n);
            let written = if chunked {
                let size = format!("{n:x}\r\n");
                pipe.write_all(size.as_bytes()).await.is_ok()
                    && pipe.write_all(&data).await.is_ok()
                    && pipe.write_all(b"\r\n").await.is_ok()
            } else {
                pipe.write_all(&data).await.is_ok()
            };
            if !written {
                // The pipeline is done with the request.
                return;
            }
        }
    }
    if ok && chunked {
        // The last chunk, with the stream's trailers as its fields.
        let mut end = bytes::BytesMut::from(&b"0\r\n"[..]);
        match with_timeout(timeout, body.trailers()).await {
            Some(Ok(Some(t))) => crate::wire::h2_convert::put_fields(&mut end, &t),
            Some(Ok(None)) => {}
            _ => ok = false,
        }
        end.put_slice(b"\r\n");
        if ok {
            let _ = pipe.write_all(&end).await;
        }
    }
    if !ok {
        // A cut body: the pipeline reads the end of its stream.
        let _ = pipe.shutdown().await;
    }
}

/// Why the response relay stopped early.
pub(crate) enum Cut {
    /// The pipeline ended before a complete response (the client aborted,
    /// the server failed mid-body): the stream is reset.
    Pipeline,
    /// The client is gone or reset the stream.
    Client,
}

/// Reads until a whole head is in `buf` and splits it off; None when the
/// pipe closed first.
pub(crate) async fn read_head(
    pipe: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
) -> Option<Bytes> {
    loop {
        if let Some(end) = h1::head_end(buf) {
            return Some(buf.split_to(end).freeze());
        }
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(PIPE_BUF);
        }
        match pipe.read_buf(buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// The body, as the pipeline frames it, to DATA frames, and the end of
/// the stream: on the last DATA frame when the length is known, else on an
/// empty one.
pub(crate) async fn relay_body(
    pipe: &mut (impl AsyncRead + Unpin),
    buf: &mut BytesMut,
    send: &mut SendStream<Bytes>,
    body: BodyKind,
    timeout: Option<Duration>,
) -> Result<(), Cut> {
    let mut left = match body {
        BodyKind::Length(n) => n,
        _ => u64::MAX,
    };
    let mut dechunk = (body == BodyKind::Chunked).then(Dechunker::default);
    loop {
        if let Some(d) = &mut dechunk {
            while let Some(data) = d.next(buf).map_err(|_| Cut::Pipeline)? {
                send_data(send, data, timeout, false).await?;
            }
            if d.is_done() {
                let trailers = d.trailers();
                if trailers.is_empty() {
                    return end_stream(send);
                }
                return send.send_trailers(trailers).map_err(|_| Cut::Client);
            }
        } else if !buf.is_empty() {
            let n = (buf.len() as u64).min(left) as usize;
            let data = buf.split_to(n).freeze();
            left -= n as u64;
            send_data(send, data, timeout, left == 0).await?;
        }
        if left == 0 {
            return Ok(());
        }
        buf.reserve(PIPE_BUF);
        let read = tokio::select! {
            r = pipe.read_buf(buf) => r,
            _ = poll_fn(|cx| send.poll_reset(cx)) => return Err(Cut::Client),
        };
        match read {
            Ok(0) if body == BodyKind::UntilClose => return end_stream(send),
            Ok(0) | Err(_) => return Err(Cut::Pipeline),
            Ok(_) => {}
        }
    }
}

fn end_stream(send: &mut SendStream<Bytes>) -> Result<(), Cut> {
    send.send_data(Bytes::new(), true).map_err(|_| Cut::Client)
}

/// Sends `data` as the peer's window allows, waiting at most `timeout`
/// for each grant; `end`: the last piece ends the stream.
async fn send_data(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    timeout: Option<Duration>,
    end: bool,
) -> Result<(), Cut> {
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = with_timeout(timeout, poll_fn(|cx| send.poll_capacity(cx))).await;
        let n = match granted {
            Some(Some(Ok(n))) => n,
            _ => return Err(Cut::Client),
        };
        if n == 0 {
            continue;
        }
        let chunk = data.split_to(n.min(data.len()));
        send.send_data(chunk, end && data.is_empty())
            .map_err(|_| Cut::Client)?;
    }
    Ok(())
}
