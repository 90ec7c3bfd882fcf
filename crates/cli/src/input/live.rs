//! Live capture (`decode`, `scan` and `summary` with `--interface IFACE`): packets from libpcap, each with its link type
//! and time, through the capture crate's
//! [`Packets`](kafka_elect_leaders_capture::Packets) (the same link, IP and TCP decoding and
//! reassembly as a capture file) and [`Analyzer`](kafka_elect_leaders_capture::Analyzer),
//! until Ctrl-C, SIGTERM, `--count` or `--duration`. Only with the feature `live` (which
//! links libpcap); without it, `--interface` is a usage error that says so.

#[cfg(not(feature = "live"))]
use crate::fail::Failure;
#[cfg(not(feature = "live"))]
use crate::flags::{LiveFlags, ReadFlags};
#[cfg(not(feature = "live"))]
use kafka_elect_leaders_capture::traffic::Item;

#[cfg(not(feature = "live"))]
use super::item::Walked;

/// How an interface is named in messages and notes.
pub fn name(interface: &str) -> String {
    format!("interface {interface}")
}

#[cfg(not(feature = "live"))]
/// Without the feature `live`: a usage error of `command` saying how to get it.
pub fn walk(
    command: &'static str,
    flags: &LiveFlags,
    _read: &ReadFlags,
    _each: &mut dyn FnMut(Item) -> Result<(), Failure>,
) -> Result<Walked, Failure> {
    let interface = flags.interface.as_deref().unwrap_or_default();
    Err(Failure::usage(
        command,
        format!(
            "--interface {interface}: this elect-leaders was built without live capture \
             (build it with --features live, which needs libpcap: libpcap-dev on Debian)"
        ),
    ))
}

#[cfg(feature = "live")]
pub use imp::walk;

#[cfg(feature = "live")]
mod imp {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    use kafka_elect_leaders_capture::{Analyzer, Note, Packets, Timestamp};

    // Not `super::*`: in this file `super` would name the input module, this one's parent.
    use crate::fail::Failure;
    use crate::flags::{LiveFlags, ReadFlags};
    use crate::input::item::Walked;
    use crate::input::live::name;
    use kafka_elect_leaders_capture::traffic::Item;

    /// libpcap's read timeout, in milliseconds: how long it may hold packets before handing
    /// them over (immediate mode hands each over at once where the platform allows).
    const POLL_MS: i32 = 100;
    /// After Ctrl-C or SIGTERM, the packets already captured are still read, for this long at
    /// most (on a busy interface more keep coming).
    const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);
    /// How often the watcher looks at the signals and the clock.
    const WATCH: std::time::Duration = std::time::Duration::from_millis(50);
    /// The most bytes captured of a packet: Linux's largest loopback packet, whole.
    const SNAPLEN: i32 = 262_144;
    /// libpcap's buffer unless `--buffer-size` says otherwise: libpcap's own default on
    /// Linux (`setup_mmapped` in pcap-linux.c), which tcpdump keeps unless given -B, set
    /// here so that it is the same on every platform and can be said.
    const BUFFER_SIZE: usize = 2 << 20;

    /// Opens `flags.interface` for `command`, applies `--filter`, says on stderr that it is capturing, and
    /// hands each item to `each` as soon as it is complete, until Ctrl-C / SIGTERM (a clean
    /// end: the packets already captured are read, then the connections still open are
    /// closed as at the end of a capture file), `--count` packets or `--duration`. Packets
    /// libpcap or the kernel dropped are one note at the end (the output is partial).
    pub fn walk(
        command: &'static str,
        flags: &LiveFlags,
        read: &ReadFlags,
        each: &mut dyn FnMut(Item) -> Result<(), Failure>,
    ) -> Result<Walked, Failure> {
        let interface = flags.interface.as_deref().unwrap_or_default();
        let name = name(interface);
        // As tcpdump: immediate mode only when packets are printed to a terminal as they
        // come (tcpdump.c: `if (WFileName == NULL && isatty(1)) immediate_mode = 1`). On
        // Linux, immediate mode is TPACKET_V2, a ring of slots each as large as the
        // largest packet (about 64 KiB on loopback: 32 slots in 2 MiB), where TPACKET_V3
        // packs packets of any size into the same buffer; a flood overruns 32 slots at
        // once. Otherwise packets come in blocks, each handed over when full or after
        // POLL_MS.
        use std::io::IsTerminal;
        let immediate =
            flags.immediate_mode || (command != "summary" && std::io::stdout().is_terminal());
        let buffer = flags.buffer_size.unwrap_or(BUFFER_SIZE);
        let mut capture = open(interface, buffer, immediate)?;
        if let Some(expr) = &flags.bpf {
            capture.filter(expr, true).map_err(|e| {
                Failure::usage(command, format!("--filter '{expr}': {}", pcap_message(&e)))
            })?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // The first signal ends the capture cleanly; a second one, while that takes
            // long (standard output blocked...), ends the process at once (128 + signal).
            signal_hook::flag::register_conditional_shutdown(
                signal,
                128 + signal,
                Arc::clone(&stop),
            )
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(&stop)))
            .map_err(|e| Failure::Input(format!("{name}: cannot handle signal {signal}: {e}")))?;
        }
        let linktype = capture.get_datalink().0 as u32;
        let until = flags.duration.map(|d| Instant::now() + d);
        let mut packets = Packets::new();
        packets.set_limits(read.limits());
        let mut analyzer = Analyzer::new(read.port);
        // The in-flight budgets (--max-in-flight-bytes) as for a file.
        analyzer.set_limits(read.limits());
        let mut ready = VecDeque::new();
        let mut summary = Walked::default();
        let mut seen = 0u64;
        let mut hand_on = |packets: &mut Packets,
                           analyzer: &mut Analyzer,
                           summary: &mut Walked|
         -> Result<(), Failure> {
            while let Some(event) = packets.next_event() {
                analyzer.feed(event, &mut |item| ready.push_back(item));
                while let Some(item) = ready.pop_front() {
                    if let Item::Note(note) = &item {
                        summary.partial += u64::from(note.partial);
                    }
                    each(item)?;
                }
            }
            Ok(())
        };
        eprintln!(
            "elect-leaders: {name}: capturing (link type {linktype}, buffer {}, immediate mode \
             {}); Ctrl-C to stop",
            size(buffer),
            if immediate { "on" } else { "off" }
        );
        // libpcap may wait for a packet for ever (Linux's TPACKET_V3 ignores the timeout
        // while no packet comes): a watcher breaks the wait on a signal or at --duration.
        let done = Arc::new(AtomicBool::new(false));
        let breaker = capture.breakloop_handle();
        let watcher = {
            let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
            std::thread::spawn(move || loop {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                if stop.load(Ordering::Relaxed) || until.is_some_and(|t| Instant::now() >= t) {
                    breaker.breakloop();
                    return;
                }
                std::thread::sleep(WATCH);
            })
        };
        let mut stopped = false;
        loop {
            if flags.count.is_some_and(|n| seen >= n) || until.is_some_and(|t| Instant::now() >= t)
            {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                stopped = true;
                break;
            }
            match capture.next_packet() {
                Ok(packet) => {
                    seen += 1;
                    packets.packet(
                        linktype,
                        time_of(packet.header),
                        packet.data,
                        packet.header.len,
                    );
                }
                Err(pcap::Error::TimeoutExpired) => continue,
                // The watcher broke the wait (pcap_breakloop), or a signal interrupted it:
                // the loop's tests above end it.
                Err(pcap::Error::NoMorePackets) => continue,
                Err(_) if stop.load(Ordering::Relaxed) => continue,
                Err(e) => {
                    done.store(true, Ordering::Relaxed);
                    // What was captured is decoded and closed first; then the error.
                    packets.finish();
                    hand_on(&mut packets, &mut analyzer, &mut summary)?;
                    return Err(Failure::Input(format!(
                        "{name}: the capture failed: {}",
                        pcap_message(&e)
                    )));
                }
            }
            hand_on(&mut packets, &mut analyzer, &mut summary)?;
        }
        done.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        if stopped {
            // A signal: the packets the kernel already holds are read too (for DRAIN at
            // most: on a busy interface more keep coming). Outside immediate mode the
            // kernel hands over a block of packets when it is full or POLL_MS after its
            // first packet: the packets of the last block show up to POLL_MS late, so the
            // drain ends only once nothing came for longer than that.
            let drain_until = Instant::now() + DRAIN;
            let quiet_for = std::time::Duration::from_millis(2 * POLL_MS as u64 + 50);
            if let Ok(mut rest) = capture.setnonblock() {
                let mut last = Instant::now();
                while Instant::now() < drain_until && flags.count.is_none_or(|n| seen < n) {
                    match rest.next_packet() {
                        Ok(packet) => {
                            seen += 1;
                            last = Instant::now();
                            packets.packet(
                                linktype,
                                time_of(packet.header),
                                packet.data,
                                packet.header.len,
                            );
                        }
                        Err(_) if last.elapsed() < quiet_for => {
                            std::thread::sleep(std::time::Duration::from_millis(10));
                        }
                        Err(_) => break,
                    }
                    hand_on(&mut packets, &mut analyzer, &mut summary)?;
                }
                capture = rest;
            } else {
                return Err(Failure::Input(format!(
                    "{name}: cannot read the packets already captured"
                )));
            }
        }
        packets.finish();
        hand_on(&mut packets, &mut analyzer, &mut summary)?;
        if let Ok(stats) = capture.stats() {
            let dropped = u64::from(stats.dropped) + u64::from(stats.if_dropped);
            if dropped > 0 {
                summary.partial += 1;
                each(Item::Note(Note {
                    conn: None,
                    packet: None,
                    message: format!(
                        "{dropped} packet(s) dropped by the kernel or libpcap (not captured): \
                         their connections may show gaps"
                    ),
                    partial: true,
                }))?;
            }
        }
        Ok(summary)
    }

    /// The interface opened for capture, or the one-line reason why not: a missing
    /// privilege says which.
    fn open(
        interface: &str,
        buffer: usize,
        immediate: bool,
    ) -> Result<pcap::Capture<pcap::Active>, Failure> {
        // `--buffer-size` is at most i32::MAX (flags::values::capture_buffer).
        let buffer = i32::try_from(buffer).unwrap_or(i32::MAX);
        let opened = pcap::Capture::from_device(interface).and_then(|c| {
            c.promisc(false)
                .snaplen(SNAPLEN)
                .timeout(POLL_MS)
                .buffer_size(buffer)
                .immediate_mode(immediate)
                .open()
        });
        opened.map_err(|e| {
            let message = pcap_message(&e);
            let lower = message.to_lowercase();
            let why = if lower.contains("permission") || lower.contains("not permitted") {
                " (live capture needs root or the CAP_NET_RAW capability)"
            } else {
                ""
            };
            Failure::cannot_open(format!(
                "--interface {interface}: cannot capture{why}: {message}"
            ))
        })
    }

    /// A buffer size as `--buffer-size` takes it: MiB or KiB when whole.
    fn size(bytes: usize) -> String {
        if bytes.is_multiple_of(1 << 20) {
            format!("{}MiB", bytes >> 20)
        } else if bytes.is_multiple_of(1 << 10) {
            format!("{}KiB", bytes >> 10)
        } else {
            format!("{bytes} bytes")
        }
    }

    /// A packet's capture time (libpcap's microseconds).
    fn time_of(header: &pcap::PacketHeader) -> Timestamp {
        Timestamp {
            secs: u64::try_from(header.ts.tv_sec).unwrap_or(0),
            nanos: u32::try_from(header.ts.tv_usec).unwrap_or(0).min(999_999) * 1000,
        }
    }

    /// libpcap's own message.
    fn pcap_message(e: &pcap::Error) -> String {
        match e {
            pcap::Error::PcapError(text) => text.clone(),
            other => other.to_string(),
        }
    }
}
