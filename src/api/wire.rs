//! The connection under the HTTP server: [`read_start`] bounds how long a client may take to show
//! which protocol it speaks, [`Replay`] hands those bytes on, and [`JsonParseErrors`] gives the
//! answers hyper's HTTP/1 parser writes itself the API's JSON error shape (docs/http-api.md,
//! "Errors").
//!
//! A request hyper cannot parse never reaches the router: past its header limits (more than the
//! `max_headers` it is built with, or a head over its buffer, ~400 KiB) it answers 431, for a
//! malformed request line or header 400, for an overlong URI 414 — each with an empty body, then
//! it closes the connection. Those answers are recognized on the way out (a head only, with
//! `connection: close` and `content-length: 0`, no `content-type`: the router never writes an
//! error without its JSON `content-type`) and replaced by the same status with the
//! [`ApiError`] body.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use super::error::ApiError;

/// What an HTTP/2 connection starts with (RFC 9113, section 3.4).
pub const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads the start of a connection within `timeout`: until the bytes are the whole HTTP/2
/// preface or cannot be its start any more (an HTTP/1 request). The server detects the protocol
/// from them and has no timeout of its own for that (neither has HTTP/2 before its handshake), so
/// a client that sends nothing, or its first bytes one at a time, is let go here. `None` when the
/// time is up or the client closed without sending anything.
pub async fn read_start<T: AsyncRead + Unpin>(io: &mut T, timeout: std::time::Duration) -> Option<Vec<u8>> {
    let mut start = Vec::with_capacity(H2_PREFACE.len());
    let read = async {
        let mut buf = [0u8; 1024];
        while start.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(&start) {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => start.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(timeout, read).await.ok()?;
    (!start.is_empty()).then_some(start)
}

/// A connection whose first bytes were already read: they are read again first.
#[derive(Debug)]
pub struct Replay<T> {
    start: Vec<u8>,
    /// How much of `start` was read again.
    at: usize,
    inner: T,
}

impl<T> Replay<T> {
    /// `inner`, from which `start` was read.
    pub fn new(start: Vec<u8>, inner: T) -> Self {
        Self { start, at: 0, inner }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Replay<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.at < self.start.len() {
            let n = buf.remaining().min(self.start.len() - self.at);
            buf.put_slice(&self.start[self.at..self.at + n]);
            self.at += n;
            if self.at == self.start.len() {
                self.start = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Replay<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A client connection whose parse-error answers are rewritten to the JSON error shape.
#[derive(Debug)]
pub struct JsonParseErrors<T> {
    inner: T,
    /// The replacement answer being written (and how much of it is), once one was recognized.
    /// Everything written after it is dropped: the connection is closing.
    replaced: Option<(Vec<u8>, usize)>,
}

impl<T> JsonParseErrors<T> {
    /// Wraps a client connection.
    pub fn new(inner: T) -> Self {
        Self { inner, replaced: None }
    }
}

/// The JSON answer to write instead of `head` when `head` is a parse-error answer of the HTTP
/// parser (see the module doc); `None` for everything else.
pub fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ").or_else(|| text.strip_prefix("HTTP/1.0 "))?;
    let status: u16 = rest.get(..3)?.parse().ok()?;
    let head_only = text.find("\r\n\r\n").is_some_and(|end| end + 4 == text.len());
    let lower = text.to_ascii_lowercase();
    let lines: Vec<&str> = lower.split("\r\n").collect();
    let bare = lines.contains(&"connection: close")
        && lines.contains(&"content-length: 0")
        && !lines.iter().any(|l| l.starts_with("content-type:"));
    let error = match StatusCode::from_u16(status).ok()? {
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ApiError::HeadersTooLarge,
        StatusCode::URI_TOO_LONG => ApiError::UriTooLong,
        StatusCode::BAD_REQUEST => ApiError::bad_request("bad_request", "the request is not valid HTTP/1.1"),
        _ => return None,
    };
    if !(head_only && bare) {
        return None;
    }
    let (_, body) = error.status_and_body();
    let body = body.to_string();
    let mut out = String::new();
    // The status line and the other headers (`date`) as the parser wrote them.
    for line in text.trim_end_matches("\r\n").split("\r\n") {
        if !line.to_ascii_lowercase().starts_with("content-length:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    Some(out.into_bytes())
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonParseErrors<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> JsonParseErrors<T> {
    /// Takes a write of `len` bytes starting with `first`: `Some(len)` when it is (or follows) a
    /// replaced answer, so it is not passed on.
    fn claim(&mut self, first: &[u8], len: usize) -> Option<usize> {
        if self.replaced.is_none() {
            self.replaced = Some((replacement(first)?, 0));
        }
        Some(len)
    }

    /// Writes what is left of the replacement answer, if any.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((out, written)) = self.replaced.as_mut().filter(|(out, written)| *written < out.len()) {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &out[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonParseErrors<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.claim(buf, buf.len()) {
            Some(n) => Poll::Ready(Ok(n)),
            None => Pin::new(&mut self.inner).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        let len = bufs.iter().map(|b| b.len()).sum();
        match self.claim(first, len) {
            Some(n) => Poll::Ready(Ok(n)),
            None => Pin::new(&mut self.inner).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::{read_start, replacement, Replay, H2_PREFACE};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_start_is_read_until_it_shows_the_protocol_and_then_read_again() {
        let timeout = std::time::Duration::from_secs(5);
        // HTTP/1: `P` could start the preface, `PO` cannot.
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(b"P").await.unwrap();
        let pending = tokio::spawn(async move {
            let start = read_start(&mut server, timeout).await;
            (start, server)
        });
        client.write_all(b"OST / HTTP/1.1\r\n").await.unwrap();
        let (start, server) = pending.await.unwrap();
        let start = start.expect("read");
        assert!(start.starts_with(b"PO"), "{start:?}");
        let mut replay = Replay::new(start, server);
        drop(client);
        let mut all = Vec::new();
        replay.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"POST / HTTP/1.1\r\n");
        // HTTP/2: the whole preface.
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&H2_PREFACE[..10]).await.unwrap();
        client.write_all(&H2_PREFACE[10..]).await.unwrap();
        assert_eq!(read_start(&mut server, timeout).await.unwrap(), H2_PREFACE);
        // Nothing, or part of the preface only: none within the time.
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&H2_PREFACE[..5]).await.unwrap();
        assert_eq!(read_start(&mut server, std::time::Duration::from_millis(50)).await, None);
        drop(client);
        let (client, mut server) = tokio::io::duplex(64);
        drop(client);
        assert_eq!(read_start(&mut server, timeout).await, None, "closed without a byte");
    }

    #[test]
    fn only_the_parsers_bare_error_heads_are_replaced() {
        let bare = "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: \
                    Mon, 23 Nov 2026 14:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(replacement(bare.as_bytes()).expect("replaced")).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n"), "{head}");
        assert!(head.contains("date: Mon, 23 Nov 2026") && head.contains("content-type: application/json"), "{head}");
        assert!(head.ends_with(&format!("content-length: {}", body.len())), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "headers_too_large");
        for (status, code) in [("400 Bad Request", "bad_request"), ("414 URI Too Long", "uri_too_long")] {
            let head = format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
            let out = String::from_utf8(replacement(head.as_bytes()).expect("replaced")).unwrap();
            assert!(out.contains(&format!(r#""code":"{code}""#)), "{out}");
        }
        let kept = [
            // The router's own errors carry their JSON content type.
            "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\nconnection: \
             close\r\ncontent-length: 0\r\n\r\n",
            // A response with a body, a keep-alive one, other statuses, body bytes.
            "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n{}",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            "data: {\"stage\": \"answer\"}\n\n",
        ];
        for head in kept {
            assert!(replacement(head.as_bytes()).is_none(), "{head}");
        }
    }
}
