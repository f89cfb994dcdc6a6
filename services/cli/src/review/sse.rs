//! A server-sent events parser (the WHATWG event-stream format) for bytes
//! that arrive in arbitrary chunks: lines end with LF, CRLF or CR; a blank
//! line dispatches the event gathered so far; `:` lines are comments;
//! `data:` lines join with LF; one space after the colon is dropped.
//!
//! What a server can make the reader buffer is bounded: a line is cut at
//! [`MAX_LINE_BYTES`], and an event whose fields pass [`MAX_EVENT_BYTES`]
//! stops the parser ([`SseParser::too_large`]). Without the second bound,
//! `data:` lines that never meet a blank line would be joined without end.

/// The largest event kept: its `data` (the lines joined with LF), `id` and
/// `event` values together, in bytes. A planshare server's events are small
/// JSON (a few hundred bytes); a stream that passes this is not one.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The longest line kept; the rest of a longer line is dropped. The room
/// past [`MAX_EVENT_BYTES`] is for the field name, so a `data`, `id` or
/// `event` line that was cut holds a value past the event limit and stops
/// the parser; a cut comment or unknown field is ignored, as before.
pub const MAX_LINE_BYTES: usize = MAX_EVENT_BYTES + 16;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` of this frame, if it had one.
    pub id: Option<String>,
    /// The `event:` type (`message` when none was given).
    pub event: String,
    /// The `data:` lines joined with LF.
    pub data: String,
}

/// The parser's state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF opening this one belongs to it.
    after_cr: bool,
    id: Option<String>,
    event: String,
    data: String,
    has_data: bool,
    /// The last comment line seen (without its leading `:`).
    last_comment: Option<String>,
    /// An event passed [`MAX_EVENT_BYTES`]: nothing more is read.
    too_large: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feeds a chunk; returns the events it completed, in order. Once an
    /// event passes [`MAX_EVENT_BYTES`] the parser stops: the events this
    /// chunk completed before it are returned, every later byte is ignored,
    /// and [`SseParser::too_large`] says so.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.too_large {
                break;
            }
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ if self.line.len() < MAX_LINE_BYTES => self.line.push(byte),
                _ => {}
            }
        }
        events
    }

    /// The last comment line seen (`keep-alive`, the server's shutdown
    /// notice, …).
    pub fn last_comment(&self) -> Option<&str> {
        self.last_comment.as_deref()
    }

    /// Whether an event passed [`MAX_EVENT_BYTES`] (the stream is not a
    /// planshare server's; the parser has stopped).
    pub fn too_large(&self) -> bool {
        self.too_large
    }

    /// The bytes of the event gathered so far.
    fn event_bytes(&self) -> usize {
        self.data.len() + self.event.len() + self.id.as_ref().map_or(0, String::len)
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(line);
        if let Some(comment) = line.strip_prefix(':') {
            self.last_comment = Some(comment.trim_start().to_owned());
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            // `retry:` and unknown fields: the watcher keeps its own backoff.
            _ => {}
        }
        if self.event_bytes() > MAX_EVENT_BYTES {
            // Stop, and let go of what was gathered.
            self.too_large = true;
            self.data = String::new();
            self.event = String::new();
            self.id = None;
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let id = self.id.take();
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            id,
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: Option<&str>, kind: &str, data: &str) -> SseEvent {
        SseEvent {
            id: id.map(str::to_owned),
            event: kind.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn frames_split_anywhere_parse_the_same() {
        let stream = b"retry: 2000\n\nid: 3\nevent: version\ndata: {\"n\":2}\n\n: keep-alive\n\nid: 4\nevent: comments\ndata: {\"writer\":\"abcdefgh\"}\n\n";
        let expected = vec![
            event(Some("3"), "version", "{\"n\":2}"),
            event(Some("4"), "comments", "{\"writer\":\"abcdefgh\"}"),
        ];
        for split in 0..stream.len() {
            let mut parser = SseParser::new();
            let mut got = parser.feed(&stream[..split]);
            got.extend(parser.feed(&stream[split..]));
            assert_eq!(got, expected, "split at {split}");
            assert_eq!(parser.last_comment(), Some("keep-alive"));
        }
        // One byte at a time.
        let mut parser = SseParser::new();
        let got: Vec<_> = stream.iter().flat_map(|b| parser.feed(&[*b])).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn comments_multi_line_data_and_line_endings() {
        let mut parser = SseParser::new();
        let got = parser.feed(
            b": the server is shutting down; reconnect\r\n\r\nevent: closed\r\ndata: a\rdata:b\r\ndata\n\nid: 9\ndata: x\n",
        );
        assert_eq!(got, vec![event(None, "closed", "a\nb\n")]);
        assert_eq!(
            parser.last_comment(),
            Some("the server is shutting down; reconnect")
        );
        // The frame with id 9 is not complete until its blank line.
        assert_eq!(parser.feed(b"\n"), vec![event(Some("9"), "message", "x")]);
        // A CR at a chunk's end, its LF in the next chunk: one line end.
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: y\r").is_empty());
        assert!(parser.feed(b"\n").is_empty());
        assert_eq!(parser.feed(b"\r\n"), vec![event(None, "message", "y")]);
        // A frame without data dispatches nothing.
        assert!(SseParser::new().feed(b"id: 5\nevent: x\n\n").is_empty());
    }

    #[test]
    fn data_lines_without_a_blank_line_stop_at_the_event_limit() {
        // A hostile stream: `data:` lines, each under the line limit, never
        // followed by a blank line.
        let line = format!("data: {}\n", "x".repeat(4090));
        let mut parser = SseParser::new();
        let mut fed = 0;
        while !parser.too_large() {
            assert!(parser.feed(line.as_bytes()).is_empty());
            fed += line.len();
            assert!(
                fed < 2 * MAX_EVENT_BYTES,
                "fed {fed} bytes and still reading"
            );
        }
        assert_eq!(parser.event_bytes(), 0, "the gathered event is let go");
        // Stopped for good: not even a complete frame comes out any more.
        assert!(parser.feed(b"\ndata: x\n\n").is_empty());
        assert!(parser.too_large());
    }

    #[test]
    fn the_event_limit_counts_data_id_and_event_and_one_long_line() {
        let full = "x".repeat(MAX_EVENT_BYTES);
        // Exactly at the limit: dispatched whole.
        let mut parser = SseParser::new();
        let got = parser.feed(format!("data: {full}\n\n").as_bytes());
        assert_eq!(got, vec![event(None, "message", &full)]);
        assert!(!parser.too_large());
        // One byte more, in the `event` or the `id` field, or in the data.
        for frame in [
            format!("event: e\ndata: {full}\n\n"),
            format!("data: {full}\nid: 7\n\n"),
            format!("data: {}\ndata: {}\n\n", &full[1..], "x"),
        ] {
            let mut parser = SseParser::new();
            assert!(parser.feed(frame.as_bytes()).is_empty());
            assert!(parser.too_large());
        }
        // One line past the line limit (cut there) is an event past the
        // event limit…
        let long = format!("data: {full}{}\n\n", "y".repeat(64));
        let mut parser = SseParser::new();
        assert!(parser.feed(long.as_bytes()).is_empty());
        assert!(parser.too_large());
        // …but a long comment is only cut, and events before the overflow
        // in the same chunk still come out.
        let mut parser = SseParser::new();
        let stream = format!(": {full}{full}\n\nid: 1\ndata: a\n\ndata: {full}\ndata: b\n");
        assert_eq!(
            parser.feed(stream.as_bytes()),
            vec![event(Some("1"), "message", "a")]
        );
        assert!(parser.too_large());
        assert_eq!(
            parser.last_comment().map(str::len),
            Some(MAX_LINE_BYTES - 2)
        );
    }
}
