//! The metrics endpoint's request heads, parsed: bytes in, a [`Parsed`] head or a
//! [`RequestError`] out, and the [`Status`] the endpoint answers to either. Pure (no I/O, no
//! allocation but the error's text) and bounded: it reads at most [`MAX_HEAD_BYTES`] bytes and
//! [`MAX_HEADERS`] header fields (`httparse` does the HTTP/1.x syntax). Not here: the sockets and
//! deadlines ([`super::server`]).

/// The longest request head read: a head not complete within this many bytes is answered 431.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// The most header fields a request head may have (more: 431).
pub const MAX_HEADERS: usize = 32;

/// The only path served.
pub const METRICS_PATH: &str = "/metrics";

/// A request's method, as far as the endpoint cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET`: the exposition.
    Get,
    /// `HEAD`: the exposition's head, without its body.
    Head,
    /// Anything else (answered 405).
    Other,
}

/// A complete, well-formed request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// Whether the target is [`METRICS_PATH`] (a query string is ignored; the absolute form
    /// `http://HOST/metrics` counts too).
    pub metrics: bool,
    /// Whether a body follows (a `Content-Length` above 0, or any `Transfer-Encoding`). Bodies
    /// are never read: such a request is answered 405 or 413.
    pub has_body: bool,
    /// The head's length in bytes (through its blank line), at most [`MAX_HEAD_BYTES`].
    pub head_len: usize,
}

/// What the bytes received so far hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A complete head (bytes after it are not looked at).
    Complete(Request),
    /// The start of a head, shorter than [`MAX_HEAD_BYTES`]: more bytes may complete it.
    Partial,
}

/// Why a request head is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// No complete head within [`MAX_HEAD_BYTES`].
    #[error("request head longer than {MAX_HEAD_BYTES} bytes")]
    TooLarge,
    /// More than [`MAX_HEADERS`] header fields.
    #[error("more than {MAX_HEADERS} header fields")]
    TooManyHeaders,
    /// Not HTTP/1.x syntax.
    #[error("malformed request head: {0}")]
    Malformed(httparse::Error),
    /// A `Content-Length` that is not a decimal number.
    #[error("malformed Content-Length")]
    BadContentLength,
}

/// What the endpoint answers (always with `Connection: close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 200: the exposition.
    Ok,
    /// 400: a malformed head.
    BadRequest,
    /// 404: not [`METRICS_PATH`].
    NotFound,
    /// 405: not GET or HEAD.
    MethodNotAllowed,
    /// 413: a GET or HEAD with a body.
    ContentTooLarge,
    /// 431: a head over [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`].
    HeaderFieldsTooLarge,
    /// 503: the exposition could not be had.
    Unavailable,
}

impl Status {
    /// The status code.
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::ContentTooLarge => 413,
            Status::HeaderFieldsTooLarge => 431,
            Status::Unavailable => 503,
        }
    }

    /// The reason phrase.
    pub fn reason(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::BadRequest => "Bad Request",
            Status::NotFound => "Not Found",
            Status::MethodNotAllowed => "Method Not Allowed",
            Status::ContentTooLarge => "Content Too Large",
            Status::HeaderFieldsTooLarge => "Request Header Fields Too Large",
            Status::Unavailable => "Service Unavailable",
        }
    }

    /// The short plain-text body of an error status (empty for 200).
    pub fn error_body(self) -> &'static str {
        match self {
            Status::Ok => "",
            Status::BadRequest => "malformed request\n",
            Status::NotFound => "roce serves /metrics only\n",
            Status::MethodNotAllowed => "GET or HEAD /metrics\n",
            Status::ContentTooLarge => "request bodies are not read\n",
            Status::HeaderFieldsTooLarge => "request head too large\n",
            Status::Unavailable => "metrics unavailable\n",
        }
    }
}

impl Request {
    /// The answer: 404 off [`METRICS_PATH`], 405 for other methods, 413 with a body, else 200.
    pub fn status(&self) -> Status {
        if !self.metrics {
            Status::NotFound
        } else if self.method == Method::Other {
            Status::MethodNotAllowed
        } else if self.has_body {
            Status::ContentTooLarge
        } else {
            Status::Ok
        }
    }
}

impl RequestError {
    /// The answer: 431 for a head too large, else 400.
    pub fn status(&self) -> Status {
        match self {
            RequestError::TooLarge | RequestError::TooManyHeaders => Status::HeaderFieldsTooLarge,
            RequestError::Malformed(_) | RequestError::BadContentLength => Status::BadRequest,
        }
    }
}

/// Parses the start of what a client sent: a complete head, a partial one, or an error. Looks
/// at no more than the first [`MAX_HEAD_BYTES`] bytes.
pub fn parse(bytes: &[u8]) -> Result<Parsed, RequestError> {
    let bytes = bytes.get(..MAX_HEAD_BYTES).unwrap_or(bytes);
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if bytes.len() >= MAX_HEAD_BYTES => {
            return Err(RequestError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::TooManyHeaders),
        Err(e) => return Err(RequestError::Malformed(e)),
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        _ => Method::Other,
    };
    let metrics = req.path.is_some_and(is_metrics_target);
    let mut has_body = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = h.value.trim_ascii();
            if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
                return Err(RequestError::BadContentLength);
            }
            has_body |= v.iter().any(|&d| d != b'0');
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            has_body = true;
        }
    }
    Ok(Parsed::Complete(Request {
        method,
        metrics,
        has_body,
        head_len,
    }))
}

/// `/metrics`, `/metrics?QUERY` or `http://AUTHORITY/metrics[?QUERY]`.
fn is_metrics_target(target: &str) -> bool {
    let path = match target.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => {
            let rest = target.get(7..).unwrap_or("");
            rest.find('/').map_or("", |i| &rest[i..])
        }
        _ => target,
    };
    path.split('?').next() == Some(METRICS_PATH)
}

/// The head of a response: status line, `Content-Type`, `Content-Length`, `Connection: close`
/// (and `Allow` on a 405).
pub fn response_head(status: Status, content_type: &str, content_length: usize) -> Vec<u8> {
    let allow = if status == Status::MethodNotAllowed {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {content_type}\r\nContent-Length: {content_length}\r\n{allow}Connection: close\r\n\r\n",
        status.code(),
        status.reason()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(bytes: &[u8]) -> Request {
        match parse(bytes) {
            Ok(Parsed::Complete(r)) => r,
            other => panic!("{other:?} for {:?}", String::from_utf8_lossy(bytes)),
        }
    }

    #[test]
    fn get_metrics_is_200_with_its_head_length() {
        let head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nGET /other";
        let r = complete(head);
        assert_eq!(
            r,
            Request {
                method: Method::Get,
                metrics: true,
                has_body: false,
                head_len: head.len() - "GET /other".len(),
            }
        );
        assert_eq!(r.status(), Status::Ok);
        assert_eq!(
            complete(b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n").status(),
            Status::Ok
        );
        assert_eq!(
            complete(b"GET http://h:9/metrics HTTP/1.1\r\nContent-Length: 000\r\n\r\n").status(),
            Status::Ok
        );
    }

    #[test]
    fn paths_methods_and_bodies_have_their_statuses() {
        let status = |b: &[u8]| complete(b).status();
        assert_eq!(status(b"GET / HTTP/1.1\r\n\r\n"), Status::NotFound);
        assert_eq!(status(b"GET /metricsx HTTP/1.1\r\n\r\n"), Status::NotFound);
        assert_eq!(status(b"GET http://h HTTP/1.1\r\n\r\n"), Status::NotFound);
        assert_eq!(
            status(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Status::MethodNotAllowed
        );
        assert_eq!(
            status(b"get /metrics HTTP/1.1\r\n\r\n"),
            Status::MethodNotAllowed
        );
        assert_eq!(
            status(b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n"),
            Status::MethodNotAllowed
        );
        assert_eq!(
            status(b"GET /metrics HTTP/1.1\r\ncontent-length: 99999999999999999999999\r\n\r\n"),
            Status::ContentTooLarge
        );
        assert_eq!(
            status(b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Status::ContentTooLarge
        );
    }

    #[test]
    fn partial_heads_wait_and_long_ones_are_431() {
        assert_eq!(parse(b""), Ok(Parsed::Partial));
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost"), Ok(Parsed::Partial));
        let mut long = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD_BYTES - 1, b'a');
        assert_eq!(parse(&long), Ok(Parsed::Partial));
        long.push(b'a');
        assert_eq!(parse(&long), Err(RequestError::TooLarge));
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse(&long), Err(RequestError::TooLarge));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("H{i}: v\r\n")).collect();
        let err = parse(format!("GET /metrics HTTP/1.1\r\n{many}\r\n").as_bytes());
        assert_eq!(err, Err(RequestError::TooManyHeaders));
        assert_eq!(
            RequestError::TooManyHeaders.status(),
            Status::HeaderFieldsTooLarge
        );
    }

    #[test]
    fn garbage_and_bad_lengths_are_400() {
        for bad in [
            &b"\x00\x01\x02\r\n\r\n"[..],
            b"GET /metrics HTTP/2.0\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nContent-Length:\r\n\r\n",
        ] {
            let e = parse(bad).expect_err(&String::from_utf8_lossy(bad));
            assert_eq!(e.status(), Status::BadRequest, "{e}");
        }
    }

    #[test]
    fn response_heads_close_and_405_says_allow() {
        let h = response_head(Status::MethodNotAllowed, "text/plain", 5);
        assert_eq!(
            String::from_utf8_lossy(&h),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nAllow: GET, HEAD\r\nConnection: close\r\n\r\n"
        );
    }
}
