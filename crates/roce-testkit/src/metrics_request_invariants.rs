//! The contract of the metrics endpoint's request-head parser (`roce::metrics::request`),
//! checked on one input: no panic; it looks at no more than MAX_HEAD_BYTES; a complete head
//! lies within them and parses the same alone; a partial one is shorter than the limit; an
//! error is one short printable line answered 400 or 431; the answer's head is bounded.
//! Shared by the property tests (tests/it/metrics_request_props.rs) and the cargo-fuzz target
//! (fuzz/fuzz_targets/metrics_request.rs).

use roce::metrics::request::{
    parse, response_head, Method, Parsed, RequestError, Status, MAX_HEAD_BYTES,
};

/// The longest response head the endpoint writes (an error's text included).
pub const MAX_RESPONSE_HEAD: usize = 256;

/// Any bytes a client may send first.
pub fn request_head(bytes: &[u8]) {
    let parsed = parse(bytes);
    let within = &bytes[..bytes.len().min(MAX_HEAD_BYTES)];
    assert_eq!(
        parse(within),
        parsed,
        "bytes past MAX_HEAD_BYTES changed the outcome"
    );
    let status = match parsed {
        Ok(Parsed::Complete(r)) => {
            assert!(
                (1..=within.len()).contains(&r.head_len),
                "head of {} bytes in {}",
                r.head_len,
                within.len()
            );
            assert_eq!(
                parse(&bytes[..r.head_len]),
                Ok(Parsed::Complete(r)),
                "the head alone parses differently"
            );
            let status = r.status();
            assert!(
                matches!(
                    status,
                    Status::Ok
                        | Status::NotFound
                        | Status::MethodNotAllowed
                        | Status::ContentTooLarge
                ),
                "{status:?}"
            );
            if status == Status::Ok {
                assert!(r.metrics && !r.has_body && r.method != Method::Other);
            }
            status
        }
        Ok(Parsed::Partial) => {
            assert!(
                bytes.len() < MAX_HEAD_BYTES,
                "partial at {} bytes",
                bytes.len()
            );
            return;
        }
        Err(e) => {
            error_line(&e);
            let status = e.status();
            assert!(
                matches!(status, Status::BadRequest | Status::HeaderFieldsTooLarge),
                "{e}: {status:?}"
            );
            status
        }
    };
    let head = response_head(
        status,
        "text/plain; charset=utf-8",
        status.error_body().len(),
    );
    assert!(head.len() + status.error_body().len() <= MAX_RESPONSE_HEAD);
    assert!(head.starts_with(format!("HTTP/1.1 {} ", status.code()).as_bytes()));
    assert!(head.ends_with(b"Connection: close\r\n\r\n"));
}

/// An error is one line of printable text, short.
pub fn error_line(e: &RequestError) {
    let text = e.to_string();
    assert!(!text.chars().any(char::is_control), "{text:?}");
    assert!(text.len() <= 200, "{text}");
}

/// A well-formed `GET` or `HEAD` of /metrics, head only: it parses complete, answered 200, and
/// every shorter prefix of it is partial; bytes after it change nothing.
pub fn valid_scrape(head: &[u8], method: Method, trailer: &[u8]) {
    let r = match parse(head) {
        Ok(Parsed::Complete(r)) => r,
        other => panic!("{other:?} for {:?}", String::from_utf8_lossy(head)),
    };
    assert_eq!(
        (r.method, r.head_len, r.status()),
        (method, head.len(), Status::Ok)
    );
    for cut in [0, 1, head.len() / 2, head.len() - 1] {
        assert_eq!(
            parse(&head[..cut]),
            Ok(Parsed::Partial),
            "prefix of {cut} bytes"
        );
    }
    let mut more = head.to_vec();
    more.extend_from_slice(trailer);
    assert_eq!(parse(&more), Ok(Parsed::Complete(r)));
    request_head(&more);
}
