//! Property tests of the metrics endpoint's request-head parser against what a hostile client
//! sends: arbitrary bytes, well-formed scrapes (random headers, queries, versions) with damage,
//! and bodies announced in every way. The contract is roce_testkit::metrics_request_invariants
//! (also the cargo-fuzz target `metrics_request`). The seed is printed; replay with
//! METRICS_PROPTEST_SEED.

use roce_testkit::metrics_request_invariants;

use proptest::prelude::*;
use proptest::test_runner::Config;

use metrics_request_invariants::{request_head, valid_scrape};
use roce::metrics::request::{parse, Method, Parsed, Status, MAX_HEADERS, MAX_HEAD_BYTES};

fn config(cases: u32) -> Config {
    roce_testkit::proptest_seed::config("metrics", "METRICS_PROPTEST_SEED", cases)
}

/// A header field that announces no body.
fn header() -> impl Strategy<Value = String> {
    ("[A-Za-z][A-Za-z0-9-]{0,20}", "[!-~]([ -~]{0,60}[!-~])?")
        .prop_filter("no body headers", |(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .prop_map(|(n, v)| format!("{n}: {v}\r\n"))
}

/// A scrape's head: its method and bytes.
fn scrape() -> impl Strategy<Value = (Method, Vec<u8>)> {
    (
        prop_oneof![Just(Method::Get), Just(Method::Head)],
        prop_oneof![Just(String::new()), "\\?[a-z0-9=&%.]{0,40}"],
        prop_oneof![Just("1.0"), Just("1.1")],
        prop::collection::vec(header(), 0..MAX_HEADERS),
        prop_oneof![
            Just(""),
            Just("Content-Length: 0\r\n"),
            Just("content-length: 000\r\n")
        ],
    )
        .prop_map(|(m, query, version, headers, zero)| {
            let verb = if m == Method::Get { "GET" } else { "HEAD" };
            let mut head = format!("{verb} /metrics{query} HTTP/{version}\r\n");
            // One field may be the zero length, within MAX_HEADERS.
            let keep = headers.len().min(MAX_HEADERS - 1);
            head.extend(headers.into_iter().take(keep));
            head.push_str(zero);
            head.push_str("\r\n");
            (m, head.into_bytes())
        })
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn arbitrary_bytes_keep_the_contract(bytes in prop::collection::vec(any::<u8>(), 0..12_000)) {
        request_head(&bytes);
    }

    #[test]
    fn scrapes_parse_complete_and_answer_200(
        (method, head) in scrape(),
        trailer in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        prop_assume!(head.len() <= MAX_HEAD_BYTES);
        valid_scrape(&head, method, &trailer);
    }

    #[test]
    fn damaged_scrapes_keep_the_contract(
        (_, head) in scrape(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = head.clone();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        request_head(&bytes);
        bytes.insert(at.index(bytes.len()), byte);
        request_head(&bytes);
        request_head(&head[..cut.index(head.len())]);
    }

    #[test]
    fn announced_bodies_are_never_200(
        (method, head) in scrape(),
        length in "[0-9]{0,30}[1-9][0-9]{0,30}",
        chunked in any::<bool>(),
    ) {
        let head = String::from_utf8(head).expect("ascii");
        let field = if chunked {
            "Transfer-Encoding: chunked\r\n".to_owned()
        } else {
            format!("Content-Length: {length}\r\n")
        };
        // After the request line.
        let (line, rest) = head.split_once("\r\n").expect("request line");
        let bytes = format!("{line}\r\n{field}{rest}");
        let status = match parse(bytes.as_bytes()) {
            Ok(Parsed::Complete(r)) => r.status(),
            Ok(Parsed::Partial) => panic!("partial"),
            Err(e) => e.status(),
        };
        // The body field may make one field too many.
        prop_assert!(
            matches!(status, Status::ContentTooLarge | Status::HeaderFieldsTooLarge),
            "{status:?} for {method:?}"
        );
    }
}

#[test]
fn the_longest_head_that_fits_parses_and_one_byte_more_is_431() {
    let mut head = b"GET /metrics HTTP/1.1\r\nX-Fill: ".to_vec();
    head.resize(MAX_HEAD_BYTES - 4, b'f');
    head.extend_from_slice(b"\r\n\r\n");
    valid_scrape(&head, Method::Get, b"");
    let mut over = head[..head.len() - 4].to_vec();
    over.extend_from_slice(b"f\r\n\r\n");
    assert_eq!(over.len(), MAX_HEAD_BYTES + 1);
    assert_eq!(
        parse(&over).map_err(|e| e.status()),
        Err(Status::HeaderFieldsTooLarge)
    );
    request_head(&over);
}
