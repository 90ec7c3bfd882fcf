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
    let answer = read_frame(&mut conn.stream)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "closed"))?;
    // ApiVersionsResponse v0: correlation id, error code, [api key, min, max].
    let body = answer.get(4..).unwrap_or_default();
    if body.len() >= 10 {
        let count = i32::from_be_bytes([body[6], body[7], body[8], body[9]]).max(0) as usize;
        for k in 0..count {
            let at = 10 + 6 * k;
            let Some(e) = body.get(at..at + 6) else { break };
            if i16::from_be_bytes([e[0], e[1]]) == kafka_elect_leaders::API_KEY {
                conn.max_version = i16::from_be_bytes([e[4], e[5]]).clamp(MIN_VERSION, MAX_VERSION);
            }
        }
    }
    Ok(conn)
}

/// A read that waited its whole timeout (Linux says `WouldBlock`, "os error 11").
pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// One whole frame (size prefix included); `None` when the peer closed before its first byte.
pub(super) fn read_frame(stream: &mut TcpStream) -> io::Result<Option<Vec<u8>>> {
    let mut size = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut size[got..])? {
            0 if got == 0 => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    let len = i32::from_be_bytes(size);
    if len < 0 || len as usize > DEFAULT_MAX_FRAME_SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("size prefix {len}"),
        ));
    }
    let mut frame = vec![0u8; 4 + len as usize];
    frame[..4].copy_from_slice(&size);
    stream.read_exact(&mut frame[4..])?;
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
