//! Whole runs of the `conn` target: the scripts the seeds of `corpus/fuzz/conn` and the
//! regressions of `corpus/regressions/conn` are made from (and `write_seeds`, which writes
//! them), each checked to read back as written; runs of them, and of arbitrary bytes,
//! under the strict and the lenient checks.
//!
//! The checks' own tests, on hand-made streams, are in `tests`.

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{peek_request, peek_response};

use super::checks::frames;
use super::script::{
    Acks, Body, ClientId, Damage, Delay, Elect, Election, End, Finale, Op, Partitions, Produce,
    Request, Script, Topic, TopicName,
};
use super::{check_conn, run, seed};

fn elect_of(
    version: u8,
    client_id: ClientId,
    election_type: Election,
    topics: Option<Vec<(TopicName, Partitions)>>,
) -> Request {
    Request::Elect(Elect {
        version,
        client_id,
        election_type,
        topics: topics.map(|topics| {
            topics
                .into_iter()
                .map(|(name, partitions)| Topic { name, partitions })
                .collect()
        }),
        timeout_ms: 30_000,
        tags: version == 2,
    })
}

fn produce(acks: Acks) -> Request {
    Request::Produce(Produce {
        version: 6,
        acks,
        transactional_id: None,
        timeout_ms: 1000,
        body: Body::Filled(3),
    })
}

fn script(policy: u8, ops: Vec<Op>) -> Script {
    Script {
        policy,
        pipe: 2,
        finale: Finale {
            linger: None,
            answer_all: false,
            end: End::Both,
        },
        ops,
    }
}

fn answer(count: u8) -> Op {
    Op::Answer {
        count,
        pieces: 0,
        extra: 1,
        large: false,
    }
}

/// The correlation ids of the frames in `stream`, requests or responses.
fn ids(stream: &[u8], requests: bool) -> Vec<i32> {
    frames(stream, usize::MAX)
        .into_iter()
        .map(|f| {
            if requests {
                peek_request(f).unwrap().correlation_id
            } else {
                peek_response(f).unwrap().correlation_id
            }
        })
        .collect()
}

/// The scripts the seeds are made from, by name: one of each kind of move, each on a
/// policy where it decides something.
fn seeds() -> Vec<(&'static str, Script)> {
    use Partitions::{Count, List};
    use TopicName::{Logs, Orders, Payments, Secrets};
    let some = |p: &[i32]| List(p.to_vec());
    let mut out = vec![
        (
            "decisions",
            // Policy 1: payments and secrets protected, unclean elections denied.
            script(
                1,
                vec![
                    Op::Send(elect_of(
                        2,
                        ClientId::Admin,
                        Election::Preferred,
                        Some(vec![(Payments, some(&[0, 1])), (Orders, some(&[2]))]),
                    )),
                    Op::Send(produce(Acks::None)),
                    Op::Send(Request::Metadata {
                        version: 8,
                        body: Body::Bytes(b"topics".to_vec()),
                    }),
                    Op::Send(elect_of(
                        1,
                        ClientId::Ops,
                        Election::Unclean,
                        Some(vec![(Orders, some(&[2])), (Logs, some(&[0, 0]))]),
                    )),
                    Op::Send(produce(Acks::All)),
                    answer(3),
                    Op::Wait(Delay::Seconds(1)),
                ],
            ),
        ),
        (
            "whole-refusals",
            // Policy 2: client id admin only, payments protected, 64 partitions at most.
            script(
                2,
                vec![
                    Op::Send(elect_of(
                        0,
                        ClientId::Ops,
                        Election::Preferred,
                        Some(vec![(Orders, some(&[1]))]),
                    )),
                    Op::Send(elect_of(2, ClientId::Admin, Election::Preferred, None)),
                    Op::Send(elect_of(
                        1,
                        ClientId::Admin,
                        Election::Preferred,
                        Some(vec![(Orders, Count(65)), (Payments, some(&[3]))]),
                    )),
                    Op::Send(elect_of(
                        2,
                        ClientId::Admin,
                        Election::Other(7),
                        Some(vec![(Payments, some(&[3])), (Secrets, Count(3))]),
                    )),
                    answer(1),
                ],
            ),
        ),
        (
            "log-only",
            // Policy 3: the rules of policy 1 and 8 partitions at most, log only.
            script(
                3,
                vec![
                    Op::Send(elect_of(
                        2,
                        ClientId::Null,
                        Election::Unclean,
                        Some(vec![(Payments, some(&[0])), (Logs, Count(9))]),
                    )),
                    Op::Send(elect_of(1, ClientId::Ops, Election::Preferred, None)),
                    answer(1),
                ],
            ),
        ),
        (
            "pieces-and-timeouts",
            script(
                1,
                vec![
                    Op::Pieces {
                        request: elect_of(
                            2,
                            ClientId::Ops,
                            Election::Preferred,
                            Some(vec![(Secrets, some(&[1])), (Orders, some(&[5]))]),
                        ),
                        cuts: [3, 20, 41],
                        gap: Some(Delay::Seconds(1)),
                    },
                    Op::Head {
                        request: Request::Fetch {
                            version: 7,
                            max_wait_ms: 500,
                            body: Body::Filled(6),
                        },
                        keep: 30,
                    },
                    answer(0),
                    Op::Wait(Delay::Seconds(5)),
                    Op::Send(Request::Other {
                        api_key: 18,
                        version: 3,
                        body: Body::Bytes(vec![]),
                    }),
                    Op::Wait(Delay::Seconds(20)),
                    answer(0),
                ],
            ),
        ),
        (
            "damaged",
            script(
                1,
                vec![
                    Op::Send(produce(Acks::Leader)),
                    Op::Send(Request::Damaged(
                        Elect {
                            version: 2,
                            client_id: ClientId::Admin,
                            election_type: Election::Preferred,
                            topics: Some(vec![Topic {
                                name: Orders,
                                partitions: some(&[0, 1, 2]),
                            }]),
                            timeout_ms: 100,
                            tags: false,
                        },
                        Damage::Truncate(20),
                    )),
                    Op::Send(produce(Acks::Leader)),
                    answer(1),
                ],
            ),
        ),
        (
            "broker-misbehaves",
            script(
                0,
                vec![
                    Op::Send(produce(Acks::Leader)),
                    Op::Send(produce(Acks::None)),
                    Op::Send(produce(Acks::All)),
                    Op::Skip,
                    answer(0),
                    Op::UnknownId { extra: 3 },
                    Op::Garbage(vec![0, 0, 0, 1, 9]),
                ],
            ),
        ),
        (
            "stop-and-closes",
            script(
                4,
                vec![
                    Op::Send(elect_of(
                        1,
                        ClientId::Ops,
                        Election::Unclean,
                        Some(vec![(Orders, some(&[1]))]),
                    )),
                    Op::Send(produce(Acks::Leader)),
                    Op::ClientStopReading,
                    Op::Stop,
                    Op::Wait(Delay::Millis(200)),
                    Op::ClientResumeReading,
                    answer(0),
                    Op::ClientFin,
                    Op::BrokerClose,
                    Op::Wait(Delay::Seconds(5)),
                ],
            ),
        ),
        (
            "bad-size",
            script(
                0,
                vec![
                    Op::Send(produce(Acks::Leader)),
                    Op::BadSize {
                        negative: false,
                        size: 0,
                        then: vec![1, 2, 3],
                    },
                    answer(0),
                ],
            ),
        ),
    ];
    // Large frames while the broker keeps the first request waiting: refused requests
    // behind frames near the largest, and a request of about as many partitions as a
    // frame holds, trimmed.
    let held = vec![
        Op::ClientStopReading,
        Op::Send(Request::Metadata {
            version: 1,
            body: Body::Bytes(vec![]),
        }),
        Op::Repeat {
            requests: vec![
                Request::Other {
                    api_key: 3,
                    version: 1,
                    body: Body::Large(50),
                },
                elect_of(
                    1,
                    ClientId::Ops,
                    Election::Unclean,
                    Some(vec![(Orders, some(&[1]))]),
                ),
            ],
            times: 4,
        },
        Op::Send(elect_of(
            2,
            ClientId::Ops,
            Election::Preferred,
            Some(vec![(Payments, Partitions::Many(0)), (Orders, some(&[0]))]),
        )),
        Op::Answer {
            count: 3,
            pieces: 1,
            extra: 50,
            large: true,
        },
    ];
    out.push(("large-frames-held", script(1, held)));
    // Each end of the finale, on some seed.
    for (name, script) in &mut out {
        let (end, answer_all) = match *name {
            "whole-refusals" => (End::Client, true),
            "log-only" => (End::Broker, false),
            "pieces-and-timeouts" => (End::Stop, false),
            "decisions" => (End::Stop, true),
            _ => continue,
        };
        script.finale.end = end;
        script.finale.answer_all = answer_all;
    }
    out
}

/// The script of `corpus/regressions/conn/memory-kept-requests-pin-read-buffers`: the
/// broker keeps the first request waiting while the client sends 30 pairs of a frame
/// near the largest and a refused ElectLeaders request; each refused request kept in
/// its slot keeps the whole read buffer it was read into (about 64 KiB) allocated.
fn pinned_read_buffers() -> Script {
    let refused = elect_of(
        1,
        ClientId::Ops,
        Election::Unclean,
        Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
    );
    let large = Request::Other {
        api_key: 3,
        version: 1,
        body: Body::Large(50),
    };
    script(
        1,
        vec![
            Op::ClientStopReading,
            Op::Send(Request::Metadata {
                version: 1,
                body: Body::Bytes(vec![]),
            }),
            Op::Repeat {
                requests: vec![large, refused],
                times: 28,
            },
            Op::Wait(Delay::Seconds(1)),
        ],
    )
}

/// The script of `corpus/regressions/conn/end-unseen-while-waiting-for-budget-*`: the
/// broker leaves the first request unanswered; the client sends three requests refused
/// whole, of 30 KB each (a long client id). Two hold the budget of kept requests (one
/// frame); the third waits for it, and while it waits the guard sees neither `end`
/// (a stop, the client's close) nor its idle timeout: it never finishes.
fn unseen_end(end: End) -> Script {
    let refused = elect_of(
        1,
        ClientId::Long(30_000),
        Election::Unclean,
        Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
    );
    let mut script = script(
        1,
        vec![
            Op::Send(Request::Metadata {
                version: 1,
                body: Body::Bytes(vec![]),
            }),
            Op::Repeat {
                requests: vec![refused],
                times: 1,
            },
        ],
    );
    script.finale.end = end;
    script
}

/// The script of `corpus/regressions/conn/end-unseen-while-writing-to-a-client-not-reading`:
/// the client stops reading, the broker answers its Metadata request with 640 bytes, more
/// than the client's pipe takes; the guard waits to write the answer. The client sends
/// three requests refused whole, of 30 KB each: the third waits for the budget of kept
/// requests (the first two are never answered, the client not reading). Then the broker
/// closes, and the guard, its two sides waiting, never sees it: it never finishes.
fn unseen_broker_close() -> Script {
    let refused = elect_of(
        1,
        ClientId::Long(30_000),
        Election::Unclean,
        Some(vec![(TopicName::Orders, Partitions::List(vec![1]))]),
    );
    let mut script = script(
        1,
        vec![
            Op::ClientStopReading,
            Op::Send(Request::Metadata {
                version: 1,
                body: Body::Bytes(vec![]),
            }),
            Op::Answer {
                count: 0,
                pieces: 0,
                extra: 40,
                large: false,
            },
            Op::Repeat {
                requests: vec![refused],
                times: 1,
            },
        ],
    );
    script.pipe = 0;
    script.finale.end = End::Broker;
    script
}

/// Every seed reads back as the script it was written from (the hand-written encoder
/// agrees with `arbitrary`'s derive).
#[test]
fn seeds_read_back() {
    let regressions = [
        ("pinned-read-buffers", pinned_read_buffers()),
        ("unseen-stop", unseen_end(End::Stop)),
        ("unseen-broker-close", unseen_broker_close()),
    ];
    for (name, script) in seeds().into_iter().chain(regressions) {
        let bytes = seed::bytes(&script);
        let read = Script::arbitrary_take_rest(Unstructured::new(&bytes)).unwrap();
        assert_eq!(format!("{read:?}"), format!("{script:?}"), "{name}");
    }
}

/// Writes the seeds into corpus/fuzz/conn, and the script of a bug found into
/// corpus/regressions/conn (`cargo test -p kafka-elect-leaders-fuzz-checks write_seeds --
/// --ignored`).
#[test]
#[ignore]
fn write_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/fuzz/conn");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, script) in seeds() {
        std::fs::write(dir.join(format!("seed-{name}")), seed::bytes(&script)).unwrap();
    }
    let regressions = dir.join("../../regressions/conn");
    std::fs::create_dir_all(&regressions).unwrap();
    std::fs::write(
        regressions.join("memory-kept-requests-pin-read-buffers"),
        seed::bytes(&pinned_read_buffers()),
    )
    .unwrap();
    for (name, end) in [("stop", End::Stop), ("client-close", End::Client)] {
        std::fs::write(
            regressions.join(format!("end-unseen-while-waiting-for-budget-{name}")),
            seed::bytes(&unseen_end(end)),
        )
        .unwrap();
    }
    std::fs::write(
        regressions.join("end-unseen-while-writing-to-a-client-not-reading"),
        seed::bytes(&unseen_broker_close()),
    )
    .unwrap();
}

/// What each side saw of the first seed: every decision taken as the policy says.
#[test]
fn a_session_goes_as_the_policy_says() {
    let (_, script) = seeds().remove(0);
    let world = run(&script, false);
    // 1 trimmed, 2 Produce acks=0, 3 Metadata, 4 refused (unclean), 5 Produce acks=-1.
    assert_eq!(ids(&world.broker_got.borrow(), true), [1, 2, 3, 5]);
    assert_eq!(ids(&world.client_got.borrow(), false), [1, 3, 4, 5]);
}

/// A SaslHandshake for a mechanism the guard cannot read a principal from is answered
/// by the guard (UNSUPPORTED_SASL_MECHANISM) in its turn, never forwarded, and the
/// checks take that answer as the guard's own.
#[test]
fn a_refused_sasl_mechanism_is_answered_by_the_guard() {
    let mut gssapi = 6i16.to_be_bytes().to_vec();
    gssapi.extend(b"GSSAPI");
    let script = script(
        0,
        vec![
            Op::Send(produce(Acks::Leader)),
            Op::Send(Request::Other {
                api_key: 17,
                version: 1,
                body: Body::Bytes(gssapi),
            }),
            Op::Send(produce(Acks::Leader)),
            answer(0),
            answer(0),
        ],
    );
    let world = run(&script, false);
    assert!(world.guard_done.get());
    assert_eq!(ids(&world.broker_got.borrow(), true), [1, 3]);
    assert_eq!(ids(&world.client_got.borrow(), false), [1, 2, 3]);
}

/// The bugs of `corpus/regressions/conn/` (the guard at 13de460), fixed in 69867bd
/// (kept requests pinned read buffers) and 6848fcd (a stop unseen while waiting for the
/// budget or to write to a client that does not read; a close of the other side unseen
/// there is now ended by the idle watchdog): their scripts pass the strict checks.
#[test]
fn the_bugs_found_stay_fixed() {
    for end in [End::Stop, End::Client] {
        let world = run(&unseen_end(end), false);
        assert!(world.guard_done.get());
    }
    let world = run(&unseen_broker_close(), false);
    assert!(world.guard_done.get());
    let world = run(&pinned_read_buffers(), false);
    assert!(world.guard_done.get());
}

/// The same scripts pass the lenient checks.
#[test]
fn the_lenient_checks_close_both_sides_after_an_unseen_end() {
    for script in [unseen_end(End::Client), unseen_broker_close()] {
        let world = run(&script, true);
        assert!(world.guard_done.get());
    }
}

/// Every seed runs to its end and passes the checks.
#[test]
fn seeds_run() {
    for (name, script) in seeds() {
        let world = run(&script, false);
        assert!(world.guard_done.get(), "{name}");
    }
}

/// Scripts from arbitrary bytes run, and the guard finishes.
#[test]
fn arbitrary_scripts_run() {
    for seed in 0u8..=255 {
        let data: Vec<u8> = (0..512u32)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect();
        check_conn(&data);
    }
}
