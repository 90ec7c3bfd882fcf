//! Issue 23, finding 5: a guard out of file descriptors left new clients hanging in the
//! listen backlog until their own timeout ("accept failed: Too many open files", over and
//! over). Now a client it cannot serve is closed at once, and the connections already open
//! keep being served.
//!
//! The guard runs in a child process (this test binary run again, with
//! `KEL_FD_TEST_UPSTREAM` set) whose soft limit on open files is lowered to a few dozen, so
//! that the limit is reached with a few clients and the test's own sockets do not count
//! against it. The upstream is a fake broker in this process that reads and never answers:
//! a real broker cannot be made to stay silent. The child is killed by its pid when the test
//! ends, passed or failed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_elect_leaders_proxy::{Config, Guard, Route};

const CHILD_ENV: &str = "KEL_FD_TEST_UPSTREAM";
/// The child's soft limit on open files.
const CHILD_FD_LIMIT: u64 = 40;
/// Clients opened past the first: more than the child can serve.
const EXTRA_CLIENTS: usize = 60;

/// What the fake broker counts: connections open now, and bytes received in all.
#[derive(Default)]
struct Broker {
    open: AtomicUsize,
    bytes: AtomicUsize,
}

fn fake_broker() -> (SocketAddr, Arc<Broker>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let broker = Arc::new(Broker::default());
    let counts = broker.clone();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(mut socket) = socket else { return };
            let counts = counts.clone();
            counts.open.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = socket.read(&mut buf) {
                    counts.bytes.fetch_add(n, Ordering::SeqCst);
                }
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, broker)
}

/// A frame of another API (ApiVersions v0): forwarded as it is.
fn frame(correlation_id: i32) -> Vec<u8> {
    let mut body = vec![0, 18, 0, 0];
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&[0, 4]);
    body.extend_from_slice(b"test");
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn wait_until(within: Duration, what: impl Fn() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    what()
}

/// Kills the child by its pid however the test ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn out_of_file_descriptors_refuses_new_clients_at_once_and_keeps_the_open_ones() {
    if let Ok(upstream) = std::env::var(CHILD_ENV) {
        return run_guard(upstream.parse().unwrap());
    }
    let (upstream, broker) = fake_broker();
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "out_of_file_descriptors_refuses_new_clients_at_once_and_keeps_the_open_ones",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, upstream.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let listen: SocketAddr = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // libtest prints the test's name first, on the same line.
        .find_map(|line| {
            let at = line.find("listening ")?;
            Some(line[at + "listening ".len()..].trim().parse().unwrap())
        })
        .expect("the guard says where it listens");

    // A client served before the limit is reached.
    let mut first = TcpStream::connect(listen).unwrap();
    first.write_all(&frame(1)).unwrap();
    assert!(wait_until(Duration::from_secs(5), || broker
        .bytes
        .load(Ordering::SeqCst)
        > 0));

    // More clients than the child has descriptors for. Each is served (it stays open, with
    // its broker connection) or refused at once; none is left hanging.
    let clients: Vec<_> = (0..EXTRA_CLIENTS)
        .map(|i| {
            std::thread::spawn(move || {
                let mut client = TcpStream::connect(listen).unwrap();
                let _ = client.write_all(&frame(100 + i as i32));
                client
                    .set_read_timeout(Some(Duration::from_secs(3)))
                    .unwrap();
                let mut buf = [0u8; 64];
                match client.read(&mut buf) {
                    Ok(0) => "closed",
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => "closed",
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        // Still open after 3 s: served, or hanging. Keep it open for the count.
                        std::mem::forget(client);
                        "open"
                    }
                    other => panic!("client {i}: {other:?}"),
                }
            })
        })
        .collect();
    let outcomes: Vec<&str> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    let open = outcomes.iter().filter(|o| **o == "open").count();
    let closed = outcomes.len() - open;
    assert!(closed > 0, "the limit was never reached: {open} open");
    // Every client still open is served: it has its own broker connection. One hanging in
    // the backlog would be open here with none.
    assert!(
        wait_until(Duration::from_secs(3), || broker
            .open
            .load(Ordering::SeqCst)
            == 1 + open),
        "{} broker connections for {} clients open ({closed} refused)",
        broker.open.load(Ordering::SeqCst),
        1 + open
    );
    assert!(
        (open as u64) < CHILD_FD_LIMIT / 2,
        "{open} clients served under a limit of {CHILD_FD_LIMIT} descriptors"
    );

    // The first client is still served.
    let before = broker.bytes.load(Ordering::SeqCst);
    first.write_all(&frame(2)).unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || broker
            .bytes
            .load(Ordering::SeqCst)
            > before),
        "the open connection stopped being served"
    );
    drop(child.0.stdin.take());
}

/// The child: the guard under a low limit on open files, until its standard input closes.
fn run_guard(upstream: SocketAddr) {
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    rlimit::setrlimit(rlimit::Resource::NOFILE, CHILD_FD_LIMIT, hard).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut config = Config::default();
        config.routes.push(Route {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream,
        });
        config.max_connections = 10_000;
        let guard = Guard::bind(config).await.unwrap();
        println!("listening {}", guard.routes()[0].listen);
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        });
        guard
            .run(async {
                let _ = stdin_closed.await;
            })
            .await;
    });
}
