//! The byte layer under the SSE parser: UTF-8 checked across chunk
//! boundaries (the SSE parser would turn a bad byte into U+FFFD, silently),
//! and a JSON error body told apart from an event stream.

use serde_json::Value;

use crate::error::DecodeError;

/// The largest error body kept to be read (an HTTP error is small).
const MAX_ERROR_BODY: usize = 1 << 20;

/// Checks that a body cut in arbitrary chunks is UTF-8, holding the bytes
/// of a character a chunk boundary cut until the rest arrives.
#[derive(Debug, Default)]
pub(crate) struct Utf8Check {
    pending: [u8; 4],
    len: usize,
    /// Offset in the body of the chunk being checked.
    offset: u64,
}

impl Utf8Check {
    pub(crate) fn check(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        // The bytes of a cut character that came in earlier chunks.
        let carried = self.len as u64;
        let mut rest = bytes;
        while self.len > 0 {
            let Some((&b, tail)) = rest.split_first() else {
                break;
            };
            self.pending[self.len] = b;
            self.len += 1;
            rest = tail;
            match std::str::from_utf8(&self.pending[..self.len]) {
                Ok(_) => self.len = 0,
                Err(e) if e.error_len().is_some() => {
                    return Err(DecodeError::InvalidUtf8 {
                        offset: self.offset - carried,
                    });
                }
                Err(_) => {}
            }
        }
        let start = bytes.len() - rest.len();
        if let Err(e) = std::str::from_utf8(rest) {
            let valid = e.valid_up_to();
            if e.error_len().is_some() {
                return Err(DecodeError::InvalidUtf8 {
                    offset: self.offset + (start + valid) as u64,
                });
            }
            self.len = rest.len() - valid;
            self.pending[..self.len].copy_from_slice(&rest[valid..]);
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// The body ended: a character it began must have ended too.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        match self.len {
            0 => Ok(()),
            n => Err(DecodeError::InvalidUtf8 {
                offset: self.offset - n as u64,
            }),
        }
    }
}

/// Where the event stream stands between bytes: whether an event has
/// begun (a field line since the last blank line, or the start of one)
/// that its blank line has not ended. Lines as the SSE grammar ends them
/// (`\n`, `\r\n`, `\r`); comment lines (`:`) begin no event.
#[derive(Debug, Default)]
pub(crate) struct Boundary {
    /// The current line has bytes.
    in_line: bool,
    /// The current line is a comment.
    comment: bool,
    /// A field line ended since the last blank line.
    in_event: bool,
    /// The last byte was a CR: an LF now ends no second line.
    after_cr: bool,
}

impl Boundary {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    match (self.in_line, self.comment) {
                        (false, _) => self.in_event = false,
                        (true, false) => self.in_event = true,
                        (true, true) => {}
                    }
                    self.in_line = false;
                    self.after_cr = b == b'\r';
                }
                _ if !self.in_line => {
                    self.in_line = true;
                    self.comment = b == b':';
                }
                _ => {}
            }
        }
    }

    /// Whether a body ending here ends inside an event.
    pub(crate) fn mid_event(&self) -> bool {
        self.in_event || (self.in_line && !self.comment)
    }
}

/// What the body turned out to be, decided by its first byte that is not
/// whitespace: `{` or `[` is a JSON body, anything else an event stream.
#[derive(Debug, Default)]
pub(crate) enum Sniff {
    #[default]
    Undecided,
    Stream,
    Json(Vec<u8>),
}

impl Sniff {
    /// Takes a chunk; returns the part of it the SSE parser should get.
    pub(crate) fn take<'b>(&mut self, bytes: &'b [u8]) -> Result<&'b [u8], DecodeError> {
        if let Sniff::Undecided = self {
            match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
                None => return Ok(bytes),
                Some(b'{' | b'[') => *self = Sniff::Json(Vec::new()),
                Some(_) => *self = Sniff::Stream,
            }
        }
        match self {
            Sniff::Json(body) => {
                if body.len() + bytes.len() > MAX_ERROR_BODY {
                    return Err(DecodeError::NotAStream {
                        detail: format!("a JSON body of more than {MAX_ERROR_BODY} bytes"),
                    });
                }
                body.extend_from_slice(bytes);
                Ok(&[])
            }
            _ => Ok(bytes),
        }
    }

    /// The body ended: a JSON body is the provider's error.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        let Sniff::Json(body) = self else {
            return Ok(());
        };
        let value: Value = serde_json::from_slice(body).map_err(|e| DecodeError::NotAStream {
            detail: format!("it starts like JSON but is not: {e}"),
        })?;
        Err(DecodeError::ErrorBody {
            message: error_message(&value).unwrap_or_else(|| value.to_string()),
            status: error_status(&value),
        })
    }
}

/// The message of a provider's JSON error, in the shapes providers use:
/// `{"error":{"message":..}}` (OpenAI, Anthropic, llama.cpp),
/// `{"error":".."}` (Ollama), `{"message":..}` (vLLM).
pub(crate) fn error_message(value: &Value) -> Option<String> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match value.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(err) => err.get("message").and_then(text),
        None => value.get("message").and_then(text),
    }
}

/// The HTTP status a provider's JSON error stands for: a numeric `code`
/// (vLLM), else the code or type the provider documents with one
/// (Anthropic's error types; OpenAI's codes and types).
pub(crate) fn error_status(value: &Value) -> Option<u16> {
    let error = value
        .get("error")
        .filter(|e| e.is_object())
        .unwrap_or(value);
    let number = |v: &Value| v.get("code").and_then(Value::as_u64);
    if let Some(code) = number(error).or_else(|| number(value)) {
        return u16::try_from(code).ok().filter(|c| (400..600).contains(c));
    }
    let word = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("");
    let status = match (word("code"), word("type")) {
        ("rate_limit_exceeded" | "insufficient_quota", _) => 429,
        ("invalid_api_key", _) => 401,
        ("model_not_found", _) => 404,
        (_, "invalid_request_error") => 400,
        (_, "authentication_error") => 401,
        (_, "billing_error") => 402,
        (_, "permission_error") => 403,
        (_, "not_found_error") => 404,
        (_, "request_too_large") => 413,
        (_, "rate_limit_error" | "tokens" | "requests") => 429,
        (_, "api_error" | "server_error") => 500,
        (_, "timeout_error") => 504,
        (_, "overloaded_error") => 529,
        _ => return None,
    };
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_cut(bytes: &[u8], cut: usize) -> Result<(), DecodeError> {
        let mut check = Utf8Check::default();
        check.check(&bytes[..cut])?;
        check.check(&bytes[cut..])?;
        check.finish()
    }

    #[test]
    fn characters_cut_anywhere_are_whole() {
        let text = "a€😀中\r\nb".as_bytes();
        for cut in 0..=text.len() {
            assert_eq!(check_cut(text, cut), Ok(()), "cut at {cut}");
        }
    }

    #[test]
    fn a_bad_byte_is_located_however_cut() {
        // A 3-byte lead followed by an ASCII byte: bad at its lead, 2.
        let bytes = b"ab\xe2\x82x";
        for cut in 0..=bytes.len() {
            assert_eq!(
                check_cut(bytes, cut),
                Err(DecodeError::InvalidUtf8 { offset: 2 }),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_cut_is_mid_event_until_the_blank_line_whatever_the_line_ends() {
        let cases: &[(&str, bool)] = &[
            ("", false),
            ("data: {}\n\n", false),
            ("data: {}\r\n\r\n", false),
            ("data: {}\r\r", false),
            ("data: {}\n\n: keep-alive\n", false),
            ("data: {}\n\n: keep-al", false),
            ("data: {}\n\nda", true),
            ("data: {}\n\nevent: x\n", true),
            ("data: {}\r\n", true),
            ("data: {}\r", true),
            ("event: x\ndata: {}", true),
        ];
        for (body, mid) in cases {
            let bytes = body.as_bytes();
            for cut in 0..=bytes.len() {
                let mut b = Boundary::default();
                b.feed(&bytes[..cut]);
                b.feed(&bytes[cut..]);
                assert_eq!(b.mid_event(), *mid, "{body:?} fed in two at {cut}");
            }
        }
    }

    #[test]
    fn error_messages_in_every_shape() {
        let msg = |s: &str| error_message(&serde_json::from_str(s).unwrap());
        assert_eq!(msg(r#"{"error":{"message":"m"}}"#).as_deref(), Some("m"));
        assert_eq!(msg(r#"{"error":"m"}"#).as_deref(), Some("m"));
        assert_eq!(msg(r#"{"message":"m"}"#).as_deref(), Some("m"));
        assert_eq!(msg(r#"{"detail":"m"}"#), None);
    }

    #[test]
    fn a_json_body_is_an_error_and_a_stream_is_not() {
        let mut sniff = Sniff::default();
        assert_eq!(sniff.take(b"  \n"), Ok(&b"  \n"[..]));
        assert_eq!(sniff.take(b"{\"error\":\"no\"}"), Ok(&[][..]));
        assert_eq!(
            sniff.finish(),
            Err(DecodeError::ErrorBody {
                message: "no".to_owned(),
                status: None
            })
        );
        let mut sniff = Sniff::default();
        assert_eq!(sniff.take(b"data: {}"), Ok(&b"data: {}"[..]));
        assert_eq!(sniff.take(b"{"), Ok(&b"{"[..]));
        assert_eq!(sniff.finish(), Ok(()));
    }
}
