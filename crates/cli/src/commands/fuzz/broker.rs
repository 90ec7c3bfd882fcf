//! The broker client both `fuzz --target` and `fuzz --compare` use: a campaign's settings
//! ([`Options`]), a blocking `std::net` connection that starts as a client's does with
//! ApiVersions v0 ([`Conn`], [`connect_watched`]), whole frames read with a timeout
//! ([`read_frame`]), the `n`th seeded request ([`request`]) and the signals that end a
//! campaign ([`on_signals`]).
//!
//! Not here: what a campaign does with the answers (`fuzz`, `compare`) or serving clients
//! (`serve`, which shares only [`on_signals`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use kafka_elect_leaders::{
    mutate_request, ArbitraryRequest, EncodeRequest, DEFAULT_MAX_FRAME_SIZE, MAX_VERSION,
    MIN_VERSION,
};

use crate::fail::Failure;
use crate::flags::FuzzArgs;

/// The campaign's settings, from its flags.
pub(super) struct Options {
    pub(super) target: SocketAddr,
    pub(super) count: u64,
    pub(super) seed: u64,
    pub(super) rate: Option<f64>,
    pub(super) timeout: Duration,
    pub(super) duration: Duration,
}

impl Options {
    pub(super) fn new(args: &FuzzArgs, target: SocketAddr) -> Options {
        Options {
            target,
            count: args.count,
            seed: args.seed,
            rate: args.rate,
            timeout: Duration::from_millis(args.timeout.max(1)),
            duration: Duration::from_secs(args.duration),
        }
    }
}

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) next_id: i32,
    /// The newest ElectLeaders version the broker says it has.
    pub(super) max_version: i16,
    /// What was wrong with the broker's ApiVersions answer, if anything: unreadable, an
    /// error code, or no ElectLeaders (key 43) among its APIs. The campaign goes on at
    /// the newest version this crate knows.
    pub(super) api_versions_problem: Option<String>,
}

/// Why a connection could not be started.
pub(super) enum ConnectError {
    /// No TCP connection.
    Unreachable(io::Error),
    /// Connected, but ApiVersions got no answer in time (or the connection closed).
    NoApiVersions(io::Error),
}

/// Sleeps until request `n` of a campaign paced at `rate` a second is due (never past the
/// campaign's duration), waking every 50 ms to see whether `stopped` (a signal) says to end.
pub(super) fn pace(o: &Options, started: Instant, n: u64, rate: f64, stopped: &dyn Fn() -> bool) {
    let due = (started + Duration::from_secs_f64(n as f64 / rate)).min(started + o.duration);
    while let Some(wait) = due.checked_duration_since(Instant::now()) {
        if stopped() {
            break;
        }
        std::thread::sleep(wait.min(Duration::from_millis(50)));
    }
}

/// How long the next wait may last: the timeout, cut to what is left of the duration;
/// `None` when the duration is over.
pub(super) fn wait_for(o: &Options, started: Instant) -> Option<Duration> {
    let left = o.duration.checked_sub(started.elapsed())?;
    (!left.is_zero()).then(|| o.timeout.min(left))
}

/// SIGINT and SIGTERM set the flag returned: the first ends the command cleanly, with its
/// summary; a second one, while that takes long, ends the process at once (128 + signal).
pub(super) fn on_signals(what: &str) -> Result<Arc<AtomicBool>, Failure> {
    let signalled = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            signal,
            128 + signal,
            Arc::clone(&signalled),
        )
        .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&signalled)))
        .map_err(|e| Failure::Input(format!("{what}: cannot handle signal {signal}: {e}")))?;
    }
    Ok(signalled)
}

/// The connection a campaign waits on, shut down by a watcher thread on a signal so that
/// a wait of up to `--timeout` does not hold the summary back.
#[derive(Clone, Default)]
pub(super) struct Watched(Arc<Mutex<Option<TcpStream>>>);

impl Watched {
    pub(super) fn set(&self, stream: &TcpStream) {
        if let Ok(mut current) = self.0.lock() {
            *current = stream.try_clone().ok();
        }
    }

    /// Shuts the connection down once `signalled` is set; stops watching when `done` is.
    pub(super) fn watch(
        &self,
        signalled: Arc<AtomicBool>,
        done: Arc<AtomicBool>,
    ) -> std::thread::JoinHandle<()> {
        let current = self.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                // Until the campaign ends: a connection made just after the signal is
                // shut down too.
                if signalled.load(Ordering::SeqCst) {
                    if let Ok(current) = current.0.lock() {
                        if let Some(stream) = current.as_ref() {
                            let _ = stream.shutdown(Shutdown::Both);
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    }
}

/// A connection to the broker, its ApiVersions asked and answered within `wait`, watched
/// from its start (its ApiVersions wait included) so that a signal shuts it down.
pub(super) fn connect_watched(
    o: &Options,
    wait: Duration,
    watched: &Watched,
) -> Result<Conn, ConnectError> {
    let stream = TcpStream::connect_timeout(&o.target, wait).map_err(ConnectError::Unreachable)?;
    watched.set(&stream);
    start(stream, wait).map_err(ConnectError::NoApiVersions)
}

fn start(stream: TcpStream, wait: Duration) -> io::Result<Conn> {
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(wait))?;
    stream.set_nodelay(true)?;
    let mut conn = Conn {
        stream,
        next_id: 1,
        max_version: MAX_VERSION,
        api_versions_problem: None,
    };
    // ApiVersions v0: header v1 (api key 18, version 0, correlation id 0, client id), no body.
    let client_id = b"elect-leaders-fuzz";
    let mut frame = Vec::new();
    frame.extend_from_slice(&((10 + client_id.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&18i16.to_be_bytes());
    frame.extend_from_slice(&0i16.to_be_bytes());
    frame.extend_from_slice(&0i32.to_be_bytes());
    frame.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
    frame.extend_from_slice(client_id);
    conn.stream.write_all(&frame)?;
    let answer = read_frame(&mut conn.stream, wait)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "closed"))?;
    match api_versions(&answer) {
        Ok(Some(max)) => conn.max_version = max.clamp(MIN_VERSION, MAX_VERSION),
        Ok(None) => {
            conn.api_versions_problem = Some(format!(
                "ApiVersions answer lists no ElectLeaders (key {}): {}",
                kafka_elect_leaders::API_KEY,
                short_hex(&answer)
            ))
        }
        Err(why) => {
            conn.api_versions_problem = Some(format!(
                "ApiVersions answer unreadable ({why}): {}",
                short_hex(&answer)
            ))
        }
    }
    Ok(conn)
}

/// A frame's first bytes in hex, for a line that names it (at most 64 bytes).
fn short_hex(frame: &[u8]) -> String {
    let hex = kafka_elect_leaders_json::hex::to_hex(&frame[..frame.len().min(64)]);
    if frame.len() > 64 {
        format!("{hex}... ({} bytes)", frame.len())
    } else {
        hex
    }
}

/// The newest ElectLeaders version an ApiVersionsResponse v0 (size, correlation id, error
/// code, then an array of (api key, min, max), all int16) lists: `None` when it does not
/// list key 43; an error naming what cannot be read.
fn api_versions(answer: &[u8]) -> Result<Option<i16>, String> {
    let body = answer.get(4..).unwrap_or_default();
    let (Some(code), Some(count)) = (body.get(4..6), body.get(6..10)) else {
        return Err(format!("{} bytes, shorter than its header", answer.len()));
    };
    let code = i16::from_be_bytes([code[0], code[1]]);
    if code != 0 {
        return Err(format!("error code {code}"));
    }
    let count = i32::from_be_bytes([count[0], count[1], count[2], count[3]]);
    let entries = usize::try_from(count).map_err(|_| format!("api count {count}"))?;
    if entries > (body.len() - 10) / 6 {
        return Err(format!(
            "api count {count}, but only {} bytes follow",
            body.len() - 10
        ));
    }
    Ok(body[10..10 + 6 * entries]
        .chunks_exact(6)
        .find(|e| i16::from_be_bytes([e[0], e[1]]) == kafka_elect_leaders::API_KEY)
        .map(|e| i16::from_be_bytes([e[4], e[5]])))
}

/// An answer that did not come whole within the wait: its first bytes came, the rest
/// dripped in too slowly (an error of kind `TimedOut`, told apart by [`dripped`]).
#[derive(Debug)]
pub(super) struct Dripped {
    pub(super) got: usize,
    pub(super) of: usize,
}

impl std::fmt::Display for Dripped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of its {} bytes came in time", self.got, self.of)
    }
}

impl std::error::Error for Dripped {}

/// Whether `e` is an answer that did not come whole in time ([`Dripped`]).
pub(super) fn dripped(e: &io::Error) -> Option<&Dripped> {
    e.get_ref().and_then(|e| e.downcast_ref::<Dripped>())
}

/// A read that waited its whole timeout (Linux says `WouldBlock`, "os error 11").
pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// One whole frame (size prefix included), within `wait` from the call to its last byte
/// (an answer that drips in is cut there: [`Dripped`]); `None` when the peer closed before
/// its first byte. The buffer grows with the bytes that come, never by the size prefix.
pub(super) fn read_frame(stream: &mut TcpStream, wait: Duration) -> io::Result<Option<Vec<u8>>> {
    let deadline = Instant::now() + wait;
    let mut chunk = [0u8; 64 * 1024];
    let mut frame: Vec<u8> = Vec::new();
    let mut need = 4usize;
    while frame.len() < need {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(if frame.is_empty() {
                io::ErrorKind::TimedOut.into()
            } else {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    Dripped {
                        got: frame.len(),
                        of: need,
                    },
                )
            });
        }
        stream.set_read_timeout(Some(left))?;
        let want = (need - frame.len()).min(chunk.len());
        let n = match stream.read(&mut chunk[..want]) {
            Ok(n) => n,
            Err(e) if is_timeout(&e) && !frame.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    Dripped {
                        got: frame.len(),
                        of: need,
                    },
                ))
            }
            Err(e) => return Err(e),
        };
        match n {
            0 if frame.is_empty() => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => frame.extend_from_slice(&chunk[..n]),
        }
        if need == 4 && frame.len() == 4 {
            let len = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            if len < 0 || len as usize > DEFAULT_MAX_FRAME_SIZE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("size prefix {len}"),
                ));
            }
            need = 4 + len as usize;
        }
    }
    Ok(Some(frame))
}

/// SplitMix64 bytes for the `n`th request.
fn seeded_bytes(seed: u64, n: u64, len: usize) -> Vec<u8> {
    let mut state = seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03) ^ 0x5eed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// The `n`th request: generated (even `n`) or a mutant of the one before (odd `n`).
pub(super) fn request(o: &Options, n: u64, max_version: i16, previous: &[u8]) -> Vec<u8> {
    if n % 2 == 1 && !previous.is_empty() {
        let mut out = vec![0u8; previous.len() * 2 + 70_000];
        if let Ok(m) = mutate_request(previous, o.seed ^ n, &mut out) {
            out.truncate(m.len);
            return out;
        }
    }
    let data = seeded_bytes(o.seed, n, 32 + (n as usize * 37) % 512);
    let mut r = ArbitraryRequest::arbitrary(&mut Unstructured::new(&data)).expect("never fails");
    let version = r.version.min(max_version);
    r.fit_to_version(version);
    let mut buf = vec![0u8; r.encoded_len(version).expect("carryable")];
    r.encode(version, &mut buf).expect("sized");
    buf
}
