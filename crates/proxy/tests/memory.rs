//! The guard's memory, counted by a global allocator that tracks the bytes live and their
//! peak (this test binary's own; `unsafe` is needed to implement `GlobalAlloc`, and is
//! confined to this file): large frames take their whole size from `--max-buffered-bytes`
//! and the peak stays within it; a connection does not keep a large frame's allocation
//! after forwarding it.
//!
//! The upstream is a fake broker that reads and discards (the frames are Produce requests
//! with acks=0, which Kafka never answers). The clients' frames are allocated before the
//! counting starts, so what is counted is the guard's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kafka_elect_leaders_proxy::{Config, Guard, Route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;

/// A broker that reads everything and answers nothing.
async fn sink_broker() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 << 10];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// A Produce v3 request with acks=0 of `len` bytes in all.
fn produce_acks_0(len: usize) -> Vec<u8> {
    let mut f = ((len - 4) as i32).to_be_bytes().to_vec();
    f.extend(0i16.to_be_bytes());
    f.extend(3i16.to_be_bytes());
    f.extend(1i32.to_be_bytes());
    f.extend((-1i16).to_be_bytes()); // client id: null
    f.extend((-1i16).to_be_bytes()); // transactional id: null
    f.extend(0i16.to_be_bytes()); // acks
    f.extend(1000i32.to_be_bytes());
    f.resize(len, 0);
    f
}

async fn guard(upstream: SocketAddr, budget: usize) -> SocketAddr {
    let mut config = Config::default();
    config.routes.push(Route {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream,
    });
    config.max_buffered_bytes = budget;
    config.audit = kafka_elect_leaders_proxy::AuditTarget::Stderr;
    let guard = Guard::bind(config).await.unwrap();
    let listen = guard.routes()[0].listen;
    tokio::spawn(guard.run(std::future::pending()));
    listen
}

/// 16 clients each send four 2 MiB frames at once through a guard with `budget`; the
/// peak of bytes live above what was live before, and what stays live after.
async fn run(budget: usize) -> (usize, usize) {
    let frame: &'static [u8] = Box::leak(produce_acks_0(2 * MIB).into_boxed_slice());
    let listen = guard(sink_broker().await, budget).await;
    let mut clients = Vec::new();
    for _ in 0..16 {
        clients.push(TcpStream::connect(listen).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let sends: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                for _ in 0..4 {
                    c.write_all(frame).await.unwrap();
                }
                c
            })
        })
        .collect();
    let mut clients = Vec::new();
    for send in sends {
        let client = tokio::time::timeout(Duration::from_secs(60), send)
            .await
            .expect("the frames went through");
        clients.push(client.unwrap());
    }
    // Every frame handed on: the guard is waiting for the next frames, with its buffers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let after = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    drop(clients);
    (peak, after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_frames_stay_within_the_budget_and_are_not_kept() {
    let budget = 8 * MIB;
    let (peak, after) = run(budget).await;
    eprintln!("budget {budget}: peak {peak} bytes above the start, {after} still live after");
    // The budget, plus each connection's small buffers (16 KiB a side read, 64 KiB of
    // lookahead of the next frame, the write buffers) and the runtime's own.
    let slack = 16 * (256 << 10) + 2 * MIB;
    assert!(
        peak <= budget + slack,
        "peak {peak} over {}",
        budget + slack
    );
    // Not a 2 MiB frame's allocation kept per connection.
    assert!(after < 4 * MIB, "{after} bytes still live after the frames");
}
