//! A review event stream as the runner reads it: the `GET …/events` request
//! written by hand and its answer decoded incrementally ([`StreamDecoder`]:
//! the HTTP/1.1 head, chunked transfer coding, then server-sent event
//! frames). Thousands of these are open at once in `reviews`, so each is a
//! bare `TcpStream` and a few hundred bytes of state — no hyper connection,
//! no task per frame. Pure code, apart from nothing: the socket is the
//! caller's.

use anyhow::{Context as _, bail};

/// The longest response head accepted (a server's `431`-sized answers are
/// far smaller; anything longer is not the server under test).
const MAX_HEAD: usize = 16 * 1024;

/// The longest SSE line or chunk-size line accepted.
const MAX_LINE: usize = 64 * 1024;

/// `GET /api/v1/reviews/{review}/events` with a bearer token, as bytes to
/// write on a fresh connection to `host` (`127.0.0.1:port`).
pub fn events_request(host: &str, review: &str, token: &str) -> Vec<u8> {
    format!(
        "GET /api/v1/reviews/{review}/events HTTP/1.1\r\nHost: {host}\r\n\
         Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .into_bytes()
}

/// What the decoder found in the bytes fed to it, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// The response head was complete: its status code.
    Head(u16),
    /// A `retry:` field (milliseconds).
    Retry(u64),
    /// A comment line (`: keep-alive`), without the colon and leading space.
    Comment(String),
    /// An event frame (complete at its blank line).
    Event {
        /// The `id:` field, when there was one and it was a number.
        id: Option<u64>,
        /// The `event:` field (`message` when missing, as in the SSE spec).
        kind: String,
        /// The `data:` lines joined with `\n`.
        data: String,
    },
    /// The body ended (the last chunk of a chunked body).
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the response head.
    Head,
    /// Reading a chunk-size line.
    ChunkSize,
    /// Inside a chunk: this many data bytes left.
    ChunkData(usize),
    /// After a chunk's data: its CRLF.
    ChunkEnd,
    /// A body without chunked coding: everything until the connection ends.
    Raw,
    /// After the last chunk: nothing more is decoded.
    Done,
}

/// Incremental decoder of one event stream's answer. Feed it what the
/// socket gives ([`StreamDecoder::feed`]); it returns the items completed.
#[derive(Debug)]
pub struct StreamDecoder {
    state: State,
    /// Undecoded bytes of the head or of a chunk-size line.
    pending: Vec<u8>,
    /// The SSE line being read (body bytes after de-chunking).
    line: Vec<u8>,
    /// Fields of the frame being read.
    id: Option<u64>,
    kind: Option<String>,
    data: Option<String>,
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamDecoder {
    /// A decoder at the start of a response.
    pub fn new() -> Self {
        Self {
            state: State::Head,
            pending: Vec::new(),
            line: Vec::new(),
            id: None,
            kind: None,
            data: None,
        }
    }

    /// Decodes `bytes`, appending the items completed by them to `out`.
    /// Fails on a malformed head or chunk, or a line past the bounds.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Item>) -> anyhow::Result<()> {
        while !bytes.is_empty() {
            match self.state {
                State::Head => {
                    self.pending.extend_from_slice(bytes);
                    bytes = &[];
                    let Some(end) = find(&self.pending, b"\r\n\r\n") else {
                        if self.pending.len() > MAX_HEAD {
                            bail!("response head longer than {MAX_HEAD} bytes");
                        }
                        continue;
                    };
                    let (status, chunked) = parse_head(&self.pending[..end])?;
                    out.push(Item::Head(status));
                    let rest = self.pending.split_off(end + 4);
                    self.pending.clear();
                    self.state = if chunked {
                        State::ChunkSize
                    } else {
                        State::Raw
                    };
                    // Whatever followed the head in the same read.
                    self.feed(&rest, out)?;
                }
                State::ChunkSize => {
                    let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
                        self.pending.extend_from_slice(bytes);
                        if self.pending.len() > MAX_LINE {
                            bail!("chunk-size line longer than {MAX_LINE} bytes");
                        }
                        return Ok(());
                    };
                    self.pending.extend_from_slice(&bytes[..nl]);
                    bytes = &bytes[nl + 1..];
                    let size = parse_chunk_size(&self.pending)?;
                    self.pending.clear();
                    if size == 0 {
                        self.state = State::Done;
                        out.push(Item::End);
                        return Ok(());
                    }
                    self.state = State::ChunkData(size);
                }
                State::ChunkData(left) => {
                    let n = left.min(bytes.len());
                    self.body(&bytes[..n], out)?;
                    bytes = &bytes[n..];
                    self.state = if n == left {
                        State::ChunkEnd
                    } else {
                        State::ChunkData(left - n)
                    };
                }
                State::ChunkEnd => {
                    // The CRLF after a chunk's data (a bare LF is tolerated).
                    match bytes[0] {
                        b'\r' => bytes = &bytes[1..],
                        b'\n' => {
                            bytes = &bytes[1..];
                            self.state = State::ChunkSize;
                        }
                        other => bail!("expected CRLF after a chunk, got byte {other:#04x}"),
                    }
                }
                State::Raw => {
                    self.body(bytes, out)?;
                    bytes = &[];
                }
                State::Done => return Ok(()),
            }
        }
        Ok(())
    }

    /// De-chunked body bytes: split into lines, each line applied.
    fn body(&mut self, mut bytes: &[u8], out: &mut Vec<Item>) -> anyhow::Result<()> {
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&bytes[..nl]);
            bytes = &bytes[nl + 1..];
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            let line = std::mem::take(&mut self.line);
            self.apply(&line, out);
        }
        self.line.extend_from_slice(bytes);
        if self.line.len() > MAX_LINE {
            bail!("event-stream line longer than {MAX_LINE} bytes");
        }
        Ok(())
    }

    /// One SSE line (without its line break).
    fn apply(&mut self, line: &[u8], out: &mut Vec<Item>) {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            // The blank line ends a frame; one with no event fields is nothing.
            if self.kind.is_some() || self.data.is_some() || self.id.is_some() {
                out.push(Item::Event {
                    id: self.id.take(),
                    kind: self.kind.take().unwrap_or_else(|| "message".to_owned()),
                    data: self.data.take().unwrap_or_default(),
                });
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            out.push(Item::Comment(
                comment.strip_prefix(' ').unwrap_or(comment).to_owned(),
            ));
            return;
        }
        let (field, value) = line.split_once(':').unwrap_or((&line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "retry" => {
                if let Ok(ms) = value.parse() {
                    out.push(Item::Retry(ms));
                }
            }
            "id" => self.id = value.parse().ok(),
            "event" => self.kind = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            // Unknown fields are ignored, as the SSE spec says.
            _ => {}
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The status code and whether the body is chunked, from a response head
/// (without its final blank line).
fn parse_head(head: &[u8]) -> anyhow::Result<(u16, bool)> {
    let head = std::str::from_utf8(head).context("response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        bail!("bad status line {status_line:?}");
    };
    if !version.starts_with("HTTP/1.") {
        bail!("not an HTTP/1.x answer: {status_line:?}");
    }
    let status = code
        .parse::<u16>()
        .with_context(|| format!("bad status code in {status_line:?}"))?;
    let chunked = lines.any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("transfer-encoding")
                && value.to_ascii_lowercase().contains("chunked")
        })
    });
    Ok((status, chunked))
}

/// The size of a chunk from its size line (hex, extensions and CR ignored).
fn parse_chunk_size(line: &[u8]) -> anyhow::Result<usize> {
    let text = std::str::from_utf8(line).context("chunk-size line is not UTF-8")?;
    let hex = text.split(';').next().unwrap_or_default().trim();
    usize::from_str_radix(hex, 16).with_context(|| format!("bad chunk size {hex:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        cache-control: no-store\r\ntransfer-encoding: chunked\r\n\
        date: Thu, 03 Dec 2026 10:00:00 GMT\r\n\r\n";

    fn chunk(text: &str) -> String {
        format!("{:x}\r\n{text}\r\n", text.len())
    }

    fn decode_all(parts: &[&[u8]]) -> anyhow::Result<Vec<Item>> {
        let mut decoder = StreamDecoder::new();
        let mut out = Vec::new();
        for part in parts {
            decoder.feed(part, &mut out)?;
        }
        Ok(out)
    }

    fn expected() -> Vec<Item> {
        vec![
            Item::Head(200),
            Item::Retry(2000),
            Item::Event {
                id: Some(1),
                kind: "created".to_owned(),
                data: "{\"version\":1}".to_owned(),
            },
            Item::Comment("keep-alive".to_owned()),
            Item::Event {
                id: Some(3),
                kind: "comments".to_owned(),
                data: "{\"writer\":\"owner\"}".to_owned(),
            },
            Item::End,
        ]
    }

    fn whole_answer() -> String {
        format!(
            "{HEAD}{}{}{}{}0\r\n\r\n",
            chunk("retry: 2000\n\n"),
            chunk("id: 1\nevent: created\ndata: {\"version\":1}\n\n"),
            chunk(": keep-alive\n\n"),
            chunk("id: 3\nevent: comments\ndata: {\"writer\":\"owner\"}\n\n"),
        )
    }

    #[test]
    fn decodes_a_chunked_event_stream_in_one_piece() -> anyhow::Result<()> {
        assert_eq!(decode_all(&[whole_answer().as_bytes()])?, expected());
        Ok(())
    }

    #[test]
    fn decodes_the_same_stream_byte_by_byte_and_in_odd_splits() -> anyhow::Result<()> {
        let answer = whole_answer();
        let bytes = answer.as_bytes();
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_all(&singles)?, expected());
        for size in [2, 3, 7, 13, 64] {
            let parts: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(decode_all(&parts)?, expected(), "split every {size}");
        }
        Ok(())
    }

    #[test]
    fn frames_may_span_chunks_and_chunks_may_hold_several_frames() -> anyhow::Result<()> {
        let answer = format!(
            "{HEAD}{}{}{}",
            chunk("retry: 2000\n\nid: 1\nevent: crea"),
            chunk("ted\ndata: {\"version\":1}\n\n: keep-alive\n\nid: 3\n"),
            chunk("event: comments\ndata: {\"writer\":\"owner\"}\n\n"),
        );
        let mut want = expected();
        want.pop(); // no last chunk yet
        assert_eq!(decode_all(&[answer.as_bytes()])?, want);
        Ok(())
    }

    #[test]
    fn an_error_answer_shows_its_status() -> anyhow::Result<()> {
        let answer = "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
                      content-length: 2\r\n\r\n{}";
        let items = decode_all(&[answer.as_bytes()])?;
        assert_eq!(items.first(), Some(&Item::Head(429)));
        Ok(())
    }

    #[test]
    fn multi_line_data_and_crlf_lines_and_defaults() -> anyhow::Result<()> {
        let answer = format!(
            "{HEAD}{}",
            chunk("data: a\r\ndata: b\r\n\r\nid: x\nevent: e\n\n\n")
        );
        let items = decode_all(&[answer.as_bytes()])?;
        assert_eq!(
            items,
            [
                Item::Head(200),
                Item::Event {
                    id: None,
                    kind: "message".to_owned(),
                    data: "a\nb".to_owned(),
                },
                Item::Event {
                    id: None,
                    kind: "e".to_owned(),
                    data: String::new(),
                },
            ]
        );
        Ok(())
    }

    #[test]
    fn malformed_answers_fail() {
        assert!(decode_all(&[b"SSH-2.0-OpenSSH\r\n\r\n"]).is_err());
        assert!(decode_all(&[b"HTTP/1.1 abc OK\r\n\r\n"]).is_err());
        let bad_chunk = format!("{HEAD}zz\r\nhello\r\n");
        assert!(decode_all(&[bad_chunk.as_bytes()]).is_err());
        let no_crlf = format!("{HEAD}2\r\nabX");
        assert!(decode_all(&[no_crlf.as_bytes()]).is_err());
        let endless = vec![b'a'; MAX_HEAD + 10];
        assert!(decode_all(&[&endless]).is_err());
    }

    #[test]
    fn the_request_names_the_review_and_the_token() {
        let request =
            String::from_utf8(events_request("127.0.0.1:9", "AbC123", "tok")).unwrap_or_default();
        assert!(request.starts_with("GET /api/v1/reviews/AbC123/events HTTP/1.1\r\n"));
        assert!(request.contains("\r\nHost: 127.0.0.1:9\r\n"));
        assert!(request.contains("\r\nAuthorization: Bearer tok\r\n"));
        assert!(request.ends_with("\r\n\r\n"));
    }
}
