//! Bounded line framing in front of the SSE parser (`eventsource-stream`), for the `sse` protocol
//! and the A2A stream.
//!
//! The parser re-scans its whole buffer whenever a chunk ends inside a line, so one long line
//! costs time quadratic in its length, and it checks no size until an event is complete. Here the
//! bytes are split into complete lines as they arrive (each byte looked at once) and handed to the
//! parser one line per item, so it parses each line once; a line, or an event's non-comment lines
//! together, longer than the limit fails at once with [`LineError::TooLarge`], after reading at
//! most the limit plus one chunk.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};

/// Room for field names and line ends on top of an event's data limit: an event whose `data` is
/// exactly at the limit still fits.
pub const FRAMING_SLACK: usize = 4096;

/// Why the framed stream stopped.
#[derive(Debug)]
pub enum LineError<E> {
    /// The underlying stream failed.
    Transport(E),
    /// A line or an event exceeded the limit (bytes on the wire).
    TooLarge,
}

impl<E: std::fmt::Display> std::fmt::Display for LineError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "{e}"),
            Self::TooLarge => f.write_str("line or event too large"),
        }
    }
}

/// A line or an event passed the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversized;

/// Splits bytes into complete SSE lines (terminator included: LF, CRLF or a lone CR), enforcing
/// `max` bytes per line and per event (an event's lines up to its blank line, comment lines not
/// counted). Linear in its input.
#[derive(Debug)]
pub struct LineSplitter {
    max: usize,
    /// The unfinished line (a trailing CR stays here until the next byte says whether LF follows).
    line: BytesMut,
    /// Bytes of the current event's non-comment lines so far.
    event: usize,
}

impl LineSplitter {
    /// A splitter with a limit of `max` bytes per line and per event.
    pub fn new(max: usize) -> Self {
        Self { max, line: BytesMut::new(), event: 0 }
    }

    /// Feeds `chunk`, appending the lines it completes to `out`.
    ///
    /// # Errors
    /// [`Oversized`] once a line or an event is longer than the limit.
    pub fn push(&mut self, chunk: &[u8], out: &mut VecDeque<Bytes>) -> Result<(), Oversized> {
        let mut start = 0;
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            // A CR left over from the previous chunk ends its line here: with this LF, or alone.
            if self.line.last() == Some(&b'\r') && start == i {
                if b == b'\n' {
                    self.line.extend_from_slice(b"\n");
                    i += 1;
                    start = i;
                }
                self.finish_line(out)?;
                continue;
            }
            match b {
                b'\n' => {
                    self.line.extend_from_slice(&chunk[start..=i]);
                    i += 1;
                    start = i;
                    self.finish_line(out)?;
                }
                b'\r' if i + 1 < chunk.len() => {
                    let end = if chunk[i + 1] == b'\n' { i + 2 } else { i + 1 };
                    self.line.extend_from_slice(&chunk[start..end]);
                    i = end;
                    start = i;
                    self.finish_line(out)?;
                }
                b'\r' => {
                    // Last byte of the chunk: wait for the next one.
                    self.line.extend_from_slice(&chunk[start..=i]);
                    i += 1;
                    start = i;
                    self.check()?;
                }
                _ => i += 1,
            }
        }
        self.line.extend_from_slice(&chunk[start..]);
        self.check()
    }

    /// At the end of the stream: the unfinished line, if any.
    pub fn finish(&mut self) -> Option<Bytes> {
        (!self.line.is_empty()).then(|| self.line.split().freeze())
    }

    fn check(&self) -> Result<(), Oversized> {
        let line = self.line.len();
        let counted = if self.line.first() == Some(&b':') { 0 } else { line };
        if line > self.max || self.event + counted > self.max {
            Err(Oversized)
        } else {
            Ok(())
        }
    }

    fn finish_line(&mut self, out: &mut VecDeque<Bytes>) -> Result<(), Oversized> {
        self.check()?;
        let line = self.line.split().freeze();
        let content = line.iter().take_while(|&&b| b != b'\r' && b != b'\n').count();
        if content == 0 {
            self.event = 0;
        } else if line[0] != b':' {
            self.event += line.len();
        }
        out.push_back(line);
        Ok(())
    }
}

/// `bytes` as a stream of complete lines, at most `max` bytes per line and per event.
pub fn bounded_lines<S, E>(bytes: S, max: usize) -> impl Stream<Item = Result<Bytes, LineError<E>>>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    struct State<S> {
        inner: S,
        splitter: LineSplitter,
        ready: VecDeque<Bytes>,
        done: bool,
    }
    let state = State { inner: bytes, splitter: LineSplitter::new(max), ready: VecDeque::new(), done: false };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(line) = s.ready.pop_front() {
                return Some((Ok(line), s));
            }
            if s.done {
                return None;
            }
            match s.inner.next().await {
                Some(Ok(chunk)) => {
                    if s.splitter.push(&chunk, &mut s.ready).is_err() {
                        s.done = true;
                        s.ready.clear();
                        return Some((Err(LineError::TooLarge), s));
                    }
                }
                Some(Err(e)) => {
                    s.done = true;
                    s.ready.clear();
                    return Some((Err(LineError::Transport(e)), s));
                }
                None => {
                    s.done = true;
                    if let Some(rest) = s.splitter.finish() {
                        s.ready.push_back(rest);
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> Result<Vec<String>, Oversized> {
        let mut s = LineSplitter::new(max);
        let mut out = VecDeque::new();
        for c in chunks {
            s.push(c, &mut out)?;
        }
        out.extend(s.finish());
        Ok(out.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect())
    }

    #[test]
    fn lines_keep_their_terminators_across_chunk_borders() {
        let cases: &[(&[&[u8]], &[&str])] = &[
            (&[b"data: a\n\n"], &["data: a\n", "\n"]),
            (&[b"data: a\r\n\r\n"], &["data: a\r\n", "\r\n"]),
            (&[b"data: a\r", b"\n\r\n"], &["data: a\r\n", "\r\n"]),
            (&[b"data: a\r", b"data: b\r"], &["data: a\r", "data: b\r"]),
            (&[b"da", b"ta: ", b"a", b"\n"], &["data: a\n"]),
            (&[b"data: a\rdata: b\n"], &["data: a\r", "data: b\n"]),
            (&[b": ping\n", b"event: x\ndata: 1\n\nrest"], &[": ping\n", "event: x\n", "data: 1\n", "\n", "rest"]),
        ];
        for (chunks, want) in cases {
            assert_eq!(split(64, chunks).unwrap(), *want, "{chunks:?}");
        }
    }

    #[test]
    fn a_line_or_an_event_over_the_limit_fails() {
        assert!(split(10, &[b"data: 12345\n"]).is_err(), "a complete line");
        assert!(split(10, &[b"data: 1234", b"5"]).is_err(), "an unfinished line");
        assert!(split(16, &[b"data: 1234\n", b"data: 1234\n"]).is_err(), "an event's lines together");
        assert!(split(16, &[b"data: 1234\n\n", b"data: 1234\n\n"]).is_ok(), "two events");
        assert!(split(16, &[b": 12345678\n", b": 12345678\n", b"data: 1\n"]).is_ok(), "comments are not counted");
        assert!(split(16, &[b"data: 1234\r", b"\n"]).is_ok());
    }

    #[test]
    fn a_long_line_fails_after_reading_about_the_limit_once() {
        // A 10 MB line in 8 KiB chunks: the error comes at the chunk that crosses the 1 MiB limit,
        // and each byte is looked at once (no re-scan of what is buffered).
        let mut s = LineSplitter::new(1024 * 1024);
        let mut out = VecDeque::new();
        let chunk = vec![b'a'; 8192];
        let mut fed = 0usize;
        let failed = (0..1280).any(|_| {
            fed += chunk.len();
            s.push(&chunk, &mut out).is_err()
        });
        assert!(failed);
        assert!(fed <= 1024 * 1024 + 8192, "{fed}");
        assert!(out.is_empty());
    }
}
