//! Table-driven runs of the upload machine: each case is a script of what the caller does and
//! what the machine must answer at each step.

use super::*;

/// One step of a script and what the machine must answer.
#[derive(Debug)]
enum Step {
    /// Registers batch `seq` of `n` records; its record `i` is input record `10 * seq + i`, on
    /// line `10 * seq + i + 1`.
    Register(u64, usize, Registered),
    /// Asks what to send at this time; the machine names this batch (and attempt), or nothing.
    Next(i64, Option<(u64, u32)>),
    /// Reports an answer to batch `seq` at this time.
    Reply(u64, i64, Answer, Expect),
    /// Cancels; these batches fail as cancelled.
    Cancel(&'static [u64]),
    /// The time of the earliest due retry.
    Wake(Option<i64>),
    /// Whether the machine wants another batch, and whether it is idle.
    Wants(bool, bool),
}

#[derive(Debug)]
enum Answer {
    Status(u16, &'static str),
    WithRetryAfter(u16, &'static str, &'static str),
    Network(&'static str),
}

#[derive(Debug)]
enum Expect {
    /// Acknowledged: imported, and the input lines of the refused records.
    Ack(u64, &'static [u64]),
    /// Sent again after this many ms.
    Retry(u64),
    /// Not imported, for this reason, with words that contain this text.
    Failed(Stop, &'static str),
    /// The answer is not taken (the batch is not being sent).
    Ignored,
}

const OK3: &str = r#"{"code":200,"num_records_imported":3,"status":"OK"}"#;

fn meta(seq: u64, n: usize) -> BatchMeta {
    let positions = (0..n as u64).map(|i| RecordPos { index: 10 * seq + i, line: 10 * seq + i + 1 }).collect();
    BatchMeta { sequence: seq, uncompressed_bytes: 100 * n, positions }
}

fn options(concurrency: usize, stop_on_failure: bool) -> UploadOptions {
    UploadOptions { concurrency, stop_on_failure, ..UploadOptions::default() }
}

/// Runs a script with the random number fixed at 0, so a retry waits the backoff plus the
/// smallest jitter (3 s after the first attempt, 5 s after the second).
fn check(name: &str, upload: &mut Upload, script: &[Step]) {
    for (i, step) in script.iter().enumerate() {
        let at = format!("case `{name}`, step {i}: {step:?}");
        match step {
            Step::Register(seq, n, want) => assert_eq!(upload.register(meta(*seq, *n)), *want, "{at}"),
            Step::Next(now, want) => {
                let got = upload.next_send(*now).map(|o| (o.sequence, o.attempt));
                assert_eq!(got, *want, "{at}");
            }
            Step::Reply(seq, now, answer, expect) => {
                let reply = match answer {
                    Answer::Status(status, body) => Reply::Answer { status: *status, body: body.as_bytes(), retry_after: None },
                    Answer::WithRetryAfter(status, body, ra) => Reply::Answer { status: *status, body: body.as_bytes(), retry_after: Some(ra) },
                    Answer::Network(why) => Reply::NetworkError(why),
                };
                let got = upload.answer(*seq, reply, *now, 0.0);
                match (expect, got) {
                    (Expect::Ack(imported, lines), Some(Outcome::Acknowledged(a))) => {
                        assert_eq!(a.imported, *imported, "{at}");
                        let got: Vec<u64> = a.failed.iter().map(|f| f.pos.map_or(0, |p| p.line)).collect();
                        assert_eq!(got, *lines, "{at}");
                    }
                    (Expect::Retry(delay), Some(Outcome::Retry(r))) => {
                        assert_eq!((r.delay_ms, r.due_ms), (*delay, now + *delay as i64), "{at}");
                    }
                    (Expect::Failed(reason, words), Some(Outcome::Failed(f))) => {
                        assert_eq!(f.reason, *reason, "{at}");
                        assert!(f.message.contains(words), "{at}: {}", f.message);
                    }
                    (Expect::Ignored, None) => {}
                    (expect, got) => panic!("{at}: expected {expect:?}, got {got:?}"),
                }
            }
            Step::Cancel(want) => {
                let got: Vec<u64> = upload.cancel().iter().map(|f| f.sequence).collect();
                assert_eq!(got, *want, "{at}");
            }
            Step::Wake(want) => assert_eq!(upload.next_wake_ms(), *want, "{at}"),
            Step::Wants(more, idle) => assert_eq!((upload.wants_more(), upload.is_idle()), (*more, *idle), "{at}"),
        }
    }
}

#[test]
fn scripts() {
    use Answer::*;
    use Expect::*;
    use Step::*;
    let partial = r#"{"code":400,"error":"some data points in the request failed validation","failed_records":[{"index":1,"$insert_id":"b","field":"properties.time","message":"too old"},{"index":1,"$insert_id":"b","field":"event","message":"empty"},{"index":2,"$insert_id":"c","field":"event","message":"empty"}],"num_records_imported":1,"status":"Bad Request"}"#;
    let limited = r#"{"code":429,"error":"too many requests","status":"Too Many Requests"}"#;
    let unauthorized = r#"{"code":401,"error":"invalid credentials","status":"Unauthorized"}"#;
    let cases: Vec<(&str, UploadOptions, Vec<Step>)> = vec![
        (
            "success",
            options(4, false),
            vec![
                Wants(true, true),
                Register(0, 3, Registered::Queued),
                Wants(false, false),
                Next(0, Some((0, 1))),
                Next(0, None),
                Wants(true, false),
                Reply(0, 10, Status(200, OK3), Ack(3, &[])),
                Reply(0, 10, Status(200, OK3), Ignored),
                Wants(true, true),
            ],
        ),
        (
            "a partial 400 is acknowledged, its refused records mapped to their input lines",
            options(4, false),
            vec![Register(5, 3, Registered::Queued), Next(0, Some((5, 1))), Reply(5, 1, Status(400, partial), Ack(1, &[52, 52, 53])), Wants(true, true)],
        ),
        (
            "a 400 without failed records fails the batch and is not retried",
            options(4, false),
            vec![Register(0, 3, Registered::Queued), Next(0, Some((0, 1))), Reply(0, 1, Status(400, r#"{"error":"not JSON","status":"error"}"#), Failed(Stop::InvalidRequest, "refused the request (400): not JSON"))],
        ),
        (
            "429 then success: the backoff, stretched to the server's Retry-After",
            options(4, false),
            vec![
                Register(0, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Reply(0, 1_000, WithRetryAfter(429, limited, "7"), Retry(7_000)),
                Wake(Some(8_000)),
                Wants(true, false),
                Next(7_999, None),
                Next(8_000, Some((0, 2))),
                Wake(None),
                Reply(0, 8_100, Status(429, limited), Retry(5_000)),
                Next(13_100, Some((0, 3))),
                Reply(0, 13_200, Status(200, OK3), Ack(3, &[])),
                Wants(true, true),
            ],
        ),
        (
            "give up on 401, and with stop_on_failure nothing more is sent",
            options(4, true),
            vec![
                Register(0, 3, Registered::Queued),
                Register(1, 3, Registered::Queued),
                Register(2, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Next(0, Some((1, 1))),
                Reply(0, 1, Status(429, limited), Retry(3_000)),
                Reply(1, 2, Status(401, unauthorized), Failed(Stop::Unauthorized, "rejected the credentials (401): invalid credentials")),
                Next(10_000, None),
                Wants(false, true),
                Wake(None),
                Reply(2, 3, Status(200, OK3), Ignored),
            ],
        ),
        (
            "give up on 401 without stop_on_failure: the other batches go on",
            options(1, false),
            vec![
                Register(0, 3, Registered::Queued),
                Register(1, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Next(0, None),
                Reply(0, 1, Status(401, unauthorized), Failed(Stop::Unauthorized, "(401)")),
                Next(2, Some((1, 1))),
                Reply(1, 3, Status(200, OK3), Ack(3, &[])),
            ],
        ),
        (
            "a network error is retried, then the attempts run out",
            UploadOptions { retry: RetryPolicy { max_attempts: 2, ..RetryPolicy::default() }, ..options(4, false) },
            vec![
                Register(0, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Reply(0, 0, Network("ECONNREFUSED"), Retry(3_000)),
                Next(3_000, Some((0, 2))),
                Reply(0, 3_000, Network("ECONNREFUSED"), Failed(Stop::TooManyAttempts, "cannot reach the server after 2 attempts: ECONNREFUSED")),
                Wants(true, true),
            ],
        ),
        (
            "a network error, then success",
            options(4, false),
            vec![Register(0, 3, Registered::Queued), Next(0, Some((0, 1))), Reply(0, 0, Network("reset"), Retry(3_000)), Next(3_000, Some((0, 2))), Reply(0, 3_001, Status(200, OK3), Ack(3, &[]))],
        ),
        (
            "cancel: queued batches are forgotten, waiting ones fail, answers in flight still count",
            options(3, false),
            vec![
                Register(0, 3, Registered::Queued),
                Register(1, 3, Registered::Queued),
                Register(2, 3, Registered::Queued),
                Register(3, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Next(0, Some((1, 1))),
                Next(0, Some((2, 1))),
                Reply(0, 1, Status(200, OK3), Ack(3, &[])),
                Reply(1, 1, Status(503, ""), Retry(3_000)),
                Cancel(&[1]),
                Next(5_000, None),
                Wants(false, false),
                Reply(2, 2, Status(502, "bad gateway"), Failed(Stop::Cancelled, "the server failed (502): bad gateway")),
                Wants(false, true),
            ],
        ),
        (
            "the concurrency bound counts batches waiting to be sent again",
            options(2, false),
            vec![
                Register(0, 1, Registered::Queued),
                Next(0, Some((0, 1))),
                Register(1, 1, Registered::Queued),
                Next(0, Some((1, 1))),
                Register(2, 1, Registered::Queued),
                Register(2, 1, Registered::Duplicate),
                Next(0, None),
                Wants(false, false),
                Reply(0, 0, Status(503, ""), Retry(3_000)),
                Next(1, None),
                Reply(1, 1, Status(200, OK3), Ack(3, &[])),
                Next(2, Some((2, 1))),
                Next(3_000, Some((0, 2))),
                Next(3_000, None),
            ],
        ),
        (
            "a 200 that is not the import's answer (a proxy's page, an empty body) fails the batch and stops",
            options(4, true),
            vec![
                Register(0, 3, Registered::Queued),
                Register(1, 3, Registered::Queued),
                Next(0, Some((0, 1))),
                Next(0, Some((1, 1))),
                Reply(0, 1, Status(200, "<html>proxy ok</html>"), Failed(Stop::UnexpectedAnswer, "could not be read: `<html>proxy ok</html>`, not the import's answer; check that the base URL")),
                Reply(1, 1, Status(200, ""), Failed(Stop::UnexpectedAnswer, "an empty body, not the import's answer")),
                Wants(false, true),
            ],
        ),
        (
            "a 200 without num_records_imported is not taken as all of them",
            options(4, false),
            vec![Register(0, 3, Registered::Queued), Next(0, Some((0, 1))), Reply(0, 1, Status(200, r#"{"code":200,"status":"OK"}"#), Failed(Stop::UnexpectedAnswer, "not the import's answer"))],
        ),
        (
            "a count short of what was sent fails the batch, which stays unacknowledged",
            options(4, true),
            vec![
                Register(0, 5, Registered::Queued),
                Next(0, Some((0, 1))),
                Reply(0, 1, Status(200, OK3), Failed(Stop::ShortCount, "counted 3 of the 5 records sent from input lines 1 to 5; the other 2 are not known to be stored")),
                Wants(false, true),
            ],
        ),
    ];
    for (name, options, script) in cases {
        check(name, &mut Upload::new(options), &script);
    }
}

#[test]
fn a_resumed_upload_skips_what_a_cancelled_one_had_acknowledged() {
    use Answer::*;
    use Expect::*;
    use Step::*;
    let mut first = Upload::new(options(2, false));
    check(
        "first run",
        &mut first,
        &[
            Register(0, 3, Registered::Queued),
            Register(1, 3, Registered::Queued),
            Next(0, Some((0, 1))),
            Next(0, Some((1, 1))),
            Reply(1, 1, Status(200, OK3), Ack(3, &[])),
            Cancel(&[]),
            Reply(0, 2, Network("aborted"), Failed(Stop::Cancelled, "cannot reach the server")),
        ],
    );
    let summary = first.summary();
    assert_eq!((summary.batches_acknowledged, summary.batches_failed, summary.cancelled), (1, 1, true));
    let checkpoint = first.acknowledged();
    assert_eq!(checkpoint, [1]);
    let mut resumed = Upload::resume(options(2, false), checkpoint);
    check(
        "resumed run",
        &mut resumed,
        &[
            Register(0, 3, Registered::Queued),
            Register(1, 3, Registered::AlreadyAcknowledged),
            Register(2, 3, Registered::Queued),
            Next(0, Some((0, 1))),
            Next(0, Some((2, 1))),
            Reply(0, 1, Status(200, OK3), Ack(3, &[])),
            Reply(2, 1, Status(200, OK3), Ack(3, &[])),
            Wants(true, true),
        ],
    );
    assert_eq!(resumed.acknowledged(), [0, 1, 2]);
    let s = resumed.summary();
    assert_eq!((s.batches_acknowledged, s.records_sent, s.records_imported, s.bytes_acknowledged, s.requests), (2, 6, 6, 600, 2));
}

#[test]
fn a_short_count_keeps_what_was_counted_and_refused() {
    let mut upload = Upload::new(options(1, true));
    upload.register(meta(0, 5));
    upload.next_send(0);
    let body = br#"{"code":400,"error":"x","failed_records":[{"index":4,"$insert_id":"e","field":"f","message":"m"}],"num_records_imported":2,"status":"Bad Request"}"#;
    let Some(Outcome::Failed(f)) = upload.answer(0, Reply::Answer { status: 400, body, retry_after: None }, 0, 0.5) else { panic!("failed") };
    assert_eq!((f.reason, f.imported, f.failed.len(), f.records), (Stop::ShortCount, 2, 1, 5));
    assert!(f.message.contains("counted 2 and refused 1 of the 5 records"), "{}", f.message);
    assert_eq!(f.failed[0].pos, Some(RecordPos { index: 4, line: 5 }));
    assert!(upload.acknowledged().is_empty());
    let s = upload.summary();
    assert_eq!((s.records_imported, s.batches_failed, s.stopped), (2, 1, true));
}

#[test]
fn the_summary_counts_refused_records_once() {
    let mut upload = Upload::new(UploadOptions::default());
    upload.register(meta(0, 3));
    upload.next_send(0);
    let body = br#"{"code":400,"error":"x","failed_records":[{"index":0,"$insert_id":"a","field":"f","message":"m"},{"index":0,"$insert_id":"a","field":"g","message":"m"}],"num_records_imported":2,"status":"Bad Request"}"#;
    let Some(Outcome::Acknowledged(a)) = upload.answer(0, Reply::Answer { status: 400, body, retry_after: None }, 0, 0.5) else { panic!("acknowledged") };
    assert_eq!((a.failed.len(), a.refused), (2, 1));
    let s = upload.summary();
    assert_eq!((s.records_sent, s.records_imported, s.records_refused, s.retries), (3, 2, 1, 0));
}
