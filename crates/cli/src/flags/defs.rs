//! Every flag of every command, each defined once (clap derive). Flags that several
//! commands share are small groups flattened into each command's arguments; the rules
//! between flags are declared on the flags, or (when clap cannot say them) in a `check`
//! beside the command's arguments.

use std::ffi::OsString;
use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::help;
use super::values;
use crate::input::source::{Kind, Source};
use crate::versions::fill;

/// `elect-leaders`.
#[derive(Parser, Debug)]
#[command(
    name = "elect-leaders",
    bin_name = "elect-leaders",
    version,
    about = fill(help::TOP_ABOUT),
    after_long_help = help::TOP_AFTER,
    help_template = help::TEMPLATE,
    subcommand_required = true,
    arg_required_else_help = false,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(
        about = help::INSPECT_ABOUT,
        long_about = fill(help::INSPECT_LONG),
        after_long_help = help::INSPECT_AFTER,
        help_template = help::TEMPLATE,
    )]
    Inspect(InspectArgs),
    #[command(
        about = help::DECODE_ABOUT,
        long_about = fill(help::DECODE_LONG),
        after_long_help = help::DECODE_AFTER,
        help_template = help::TEMPLATE,
    )]
    Decode(DecodeArgs),
    #[command(
        about = help::ENCODE_ABOUT,
        long_about = help::ENCODE_LONG,
        after_long_help = help::ENCODE_AFTER,
        help_template = help::TEMPLATE,
    )]
    Encode(EncodeArgs),
    #[command(
        about = help::SCAN_ABOUT,
        long_about = fill(help::SCAN_LONG),
        help_template = help::TEMPLATE,
    )]
    Scan(ScanArgs),
    #[command(
        about = help::SUMMARY_ABOUT,
        long_about = fill(help::SUMMARY_LONG),
        help_template = help::TEMPLATE,
    )]
    Summary(SummaryArgs),
    #[command(
        about = help::GEN_ABOUT,
        long_about = fill(help::GEN_LONG),
        help_template = help::TEMPLATE,
    )]
    Gen(GenArgs),
    #[command(
        about = help::MUTATE_ABOUT,
        long_about = help::MUTATE_LONG,
        help_template = help::TEMPLATE,
    )]
    Mutate(MutateArgs),
    #[command(
        about = help::FUZZ_ABOUT,
        long_about = help::FUZZ_LONG,
        after_long_help = help::FUZZ_AFTER,
        help_template = help::TEMPLATE,
    )]
    Fuzz(FuzzArgs),
    #[cfg(feature = "proxy")]
    #[command(
        about = help::PROXY_ABOUT,
        long_about = fill(help::PROXY_LONG),
        after_long_help = help::PROXY_AFTER,
        help_template = help::TEMPLATE,
    )]
    Proxy(Box<ProxyArgs>),
}

// ---------------------------------------------------------------------------------------
// Flags shared by several commands

/// Which frames are responses (inspect, decode): a response does not carry its version.
#[derive(Args, Debug)]
pub struct KindFlags {
    /// The input holds requests (whatever the file names say)
    #[arg(long, conflicts_with_all = ["response", "version"])]
    pub request: bool,
    /// The input holds ElectLeaders responses, of the version given with --version
    #[arg(long, requires = "version")]
    pub response: bool,
    #[arg(
        long,
        value_name = "N",
        value_parser = values::version,
        requires = "response",
        help = fill("The responses' version ({versions}); only with --response: a request's \
                     version is in its header"),
    )]
    pub version: Option<i16>,
}

impl KindFlags {
    /// What the frames of `source` are: the flags decide, else the file's name.
    pub fn kind_of(&self, source: &Source) -> Kind {
        match self.version {
            Some(version) if self.response => Kind::Response(version),
            _ if self.request => Kind::Request,
            _ => source.kind_by_name().unwrap_or(Kind::Request),
        }
    }
}

/// How frames are read (inspect, decode, scan).
#[derive(Args, Debug)]
pub struct ReadFlags {
    /// The input is hex text (whitespace and # comments ignored)
    #[arg(long)]
    pub hex: bool,
    /// A capture's broker port (default 9092)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// A capture's connection without a packet for this long (capture time) is let go, as
    /// a broker closes it (default 10m, Kafka's connections.max.idle.ms)
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub idle_timeout: Option<std::time::Duration>,
    /// At most this many of a capture's connections are followed at once; the least
    /// recently active is let go first (default 10000)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Bytes of a capture's connection's table of requests waiting for their responses
    /// (40 per request); a request beyond it is not kept for pairing, and named (default
    /// 1048576)
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight_bytes: Option<u64>,
    /// Bytes of a capture's frames held on all connections at once (an ElectLeaders frame
    /// is held whole until it ends; a frame of another API only for its first 72 KiB, then
    /// passed over as it streams by); past it the largest is let go, and named (default
    /// 134217728)
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_held_bytes: Option<u64>,
}

impl ReadFlags {
    /// The capture reader's limits: the flags given, else the reader's defaults.
    pub fn limits(&self) -> kafka_elect_leaders_capture::Limits {
        let default = kafka_elect_leaders_capture::Limits::default();
        kafka_elect_leaders_capture::Limits {
            idle_timeout: self.idle_timeout.unwrap_or(default.idle_timeout),
            max_connections: self.max_connections.map_or(default.max_connections, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            }),
            in_flight_bytes: self
                .max_in_flight_bytes
                .map_or(default.in_flight_bytes, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            held_bytes: self.max_held_bytes.map_or(default.held_bytes, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            }),
            ..default
        }
    }
}

/// Frames of other APIs (inspect, decode).
#[derive(Args, Debug)]
pub struct OthersFlag {
    /// Also list the frames of other APIs, one line each
    #[arg(long)]
    pub all: bool,
}

/// Which frames to print (decode), list (scan) or count (summary).
#[derive(Args, Debug)]
pub struct FilterFlags {
    /// Only frames of this API, by Kafka's name (Metadata, ApiVersions...) or key
    /// (repeatable; default: ElectLeaders, and every API with decode --all and summary)
    #[arg(long, value_name = "NAME")]
    pub api: Vec<String>,
    /// Only ElectLeaders requests naming this topic (or every partition) and responses
    /// with results for it (repeatable)
    #[arg(long, value_name = "NAME")]
    pub topic: Vec<String>,
    /// Only ElectLeaders requests from this client id, and in a capture their responses
    /// (repeatable)
    #[arg(long, value_name = "ID")]
    pub client_id: Vec<String>,
    /// Only ElectLeaders responses that report a failure: an error code other than NONE
    /// and ELECTION_NOT_NEEDED (the preferred leader leads already), top level or a
    /// partition's, as the summary counts failed partitions
    #[arg(long)]
    pub errors_only: bool,
    /// Only ElectLeaders responses with any error code other than NONE, ELECTION_NOT_NEEDED
    /// included (--errors-only, widened)
    #[arg(long)]
    pub any_error: bool,
    /// Only ElectLeaders requests of this election type (PREFERRED, UNCLEAN, or its number),
    /// and in a capture their responses (repeatable)
    #[arg(long, value_name = "TYPE")]
    pub election_type: Vec<String>,
    /// Only the frames of this connection of a capture (its number, as "source" gives it),
    /// of every API they are of (repeatable)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub connection: Vec<u32>,
}

// ---------------------------------------------------------------------------------------
// Each command's arguments

/// `inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    pub kind: KindFlags,
    #[command(flatten)]
    pub read: ReadFlags,
    #[command(flatten)]
    pub others: OthersFlag,
    /// Colours: auto (only when standard output is a terminal and NO_COLOR is not set),
    /// always, never
    #[arg(
        long,
        alias = "colour",
        value_name = "WHEN",
        value_enum,
        default_value_t
    )]
    pub color: ColorWhen,
    /// Files of frames or captures, - for standard input (none: standard input, or the
    /// bundled samples when it is a terminal)
    #[arg(value_name = "FILE")]
    pub files: Vec<OsString>,
}

/// Standard input can be read once.
fn stdin_once(files: &[OsString]) -> Result<(), &'static str> {
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return Err("standard input (-) can be given only once");
    }
    Ok(())
}

impl InspectArgs {
    /// Standard input can be read once.
    pub fn check(&self) -> Result<(), &'static str> {
        stdin_once(&self.files)
    }
}

/// When to colour `inspect`'s output.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, ValueEnum)]
pub enum ColorWhen {
    #[default]
    Auto,
    Always,
    Never,
}

/// `decode`.
#[derive(Args, Debug)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub kind: KindFlags,
    #[command(flatten)]
    pub read: ReadFlags,
    #[command(flatten)]
    pub others: OthersFlag,
    #[command(flatten)]
    pub filter: FilterFlags,
    #[command(flatten)]
    pub live: LiveFlags,
    /// Files of frames or captures, decoded in turn; - or none for standard input
    #[arg(value_name = "FILE", conflicts_with = "interface")]
    pub files: Vec<OsString>,
}

/// A live capture (decode, scan, summary).
#[derive(Args, Debug)]
pub struct LiveFlags {
    /// Capture live on this network interface (lo, eth0...) through libpcap instead of
    /// reading files, until Ctrl-C or SIGTERM (or --count, --duration); needs root or the
    /// CAP_NET_RAW capability, and a build with the feature `live`
    #[arg(long, value_name = "IFACE")]
    pub interface: Option<String>,
    /// With --interface: only the packets this libpcap filter expression accepts
    /// (tcpdump's syntax, e.g. 'tcp port 9092')
    #[arg(
        long = "filter",
        id = "bpf",
        value_name = "BPF",
        requires = "interface"
    )]
    pub bpf: Option<String>,
    /// With --interface: stop after this many packets (those the filter accepts)
    #[arg(long, value_name = "N", requires = "interface",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// With --interface: stop after this long (30s, 5m...)
    #[arg(long, value_name = "DURATION", requires = "interface", value_parser = values::duration)]
    pub duration: Option<std::time::Duration>,
    /// With --interface: libpcap's buffer for the packets not read yet, as tcpdump's -B:
    /// bytes, or a number with KiB, MiB or GiB [default: 2MiB, libpcap's and tcpdump's on
    /// Linux]
    #[arg(long, value_name = "SIZE", requires = "interface", value_parser = values::capture_buffer)]
    pub buffer_size: Option<usize>,
    /// With --interface: libpcap's immediate mode, each packet handed over as it comes (on
    /// Linux a ring of slots of the largest packet each: far fewer packets fit in the
    /// buffer) [default: only when decode or scan print to a terminal, as tcpdump does]
    #[arg(long, requires = "interface")]
    pub immediate_mode: bool,
}

impl LiveFlags {
    /// The live-only flags need --interface. Their `requires` is not enough: clap waives a
    /// requirement when an argument that conflicts with it is given, and the files do
    /// (`decode --count 3 FILE` would read the whole file, the count ignored).
    pub fn check(&self) -> Result<(), &'static str> {
        if self.interface.is_some() {
            return Ok(());
        }
        if self.bpf.is_some() {
            return Err(
                "--filter goes with --interface (it is a live capture's libpcap filter); \
                        a file is read whole",
            );
        }
        if self.count.is_some() {
            return Err("--count goes with --interface; a file is read whole");
        }
        if self.duration.is_some() {
            return Err("--duration goes with --interface; a file is read whole");
        }
        if self.buffer_size.is_some() {
            return Err("--buffer-size goes with --interface (libpcap's buffer)");
        }
        if self.immediate_mode {
            return Err("--immediate-mode goes with --interface (libpcap's mode)");
        }
        Ok(())
    }
}

impl DecodeArgs {
    /// Standard input can be read once; the live-only flags need --interface.
    pub fn check(&self) -> Result<(), &'static str> {
        stdin_once(&self.files)?;
        self.live.check()
    }
}

/// `encode`.
#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// Write hex text, one line per frame, instead of binary
    #[arg(long)]
    pub hex: bool,
    /// A file of JSON objects; - or none for standard input
    #[arg(value_name = "FILE")]
    pub file: Option<OsString>,
}

/// `scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    #[command(flatten)]
    pub read: ReadFlags,
    #[command(flatten)]
    pub filter: FilterFlags,
    /// One JSON object per request: {"request":{...},"response":{...}}, each as 'decode'
    /// prints it with its "source"; "response" is null when none was found
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub live: LiveFlags,
    /// One direction of a connection, raw (or a pcap or pcapng capture, alone); - for
    /// standard input
    #[arg(
        value_name = "REQUESTS_FILE",
        required_unless_present = "interface",
        conflicts_with = "interface"
    )]
    pub requests: Option<OsString>,
    /// The other direction of the same connection, raw; - for standard input
    #[arg(value_name = "RESPONSES_FILE", conflicts_with = "interface")]
    pub responses: Option<OsString>,
}

impl ScanArgs {
    /// Standard input can be read once; the live-only flags need --interface.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.requests.as_deref().is_some_and(|r| r == "-")
            && self.responses.as_deref().is_some_and(|r| r == "-")
        {
            return Err("standard input (-) can be only one of the two files");
        }
        self.live.check()
    }
}

/// `summary`.
#[derive(Args, Debug)]
pub struct SummaryArgs {
    #[command(flatten)]
    pub kind: KindFlags,
    #[command(flatten)]
    pub read: ReadFlags,
    #[command(flatten)]
    pub filter: FilterFlags,
    /// One JSON object instead of text (its members are described in docs/JSON.md)
    #[arg(long)]
    pub json: bool,
    /// Write the summary as one self-contained HTML page to FILE (no text on standard
    /// output then, unless --json)
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub live: LiveFlags,
    /// A capture or a file of frames; - or none for standard input
    #[arg(value_name = "FILE", conflicts_with = "interface")]
    pub file: Option<OsString>,
}

impl SummaryArgs {
    /// The live-only flags need --interface.
    pub fn check(&self) -> Result<(), &'static str> {
        self.live.check()
    }
}

/// What `gen` and `mutate` write.
#[derive(Args, Debug)]
pub struct GenFlags {
    /// The seed: the same seed gives the same frames
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Frames to write (gen), or mutants of each frame read (mutate)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u64,
    #[arg(
        long,
        value_name = "V",
        value_parser = values::version,
        help = fill("The frames' version ({versions}; default: each frame's own)"),
    )]
    pub version: Option<i16>,
    /// Requests or responses
    #[arg(long, value_name = "KIND", value_enum, default_value_t)]
    pub kind: FrameKind,
    /// Hex text, one frame per line, instead of binary (mutate: in and out)
    #[arg(long)]
    pub hex: bool,
}

/// Requests or responses, for `gen` and `mutate`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, ValueEnum)]
pub enum FrameKind {
    #[default]
    Request,
    Response,
}

/// `gen`.
#[derive(Args, Debug)]
pub struct GenArgs {
    #[command(flatten)]
    pub frames: GenFlags,
}

/// `mutate`.
#[derive(Args, Debug)]
pub struct MutateArgs {
    #[command(flatten)]
    pub frames: GenFlags,
    /// A '# field: change' line before each mutant (needs --hex: binary frames have no
    /// room for it)
    #[arg(long, requires = "hex")]
    pub verbose: bool,
    /// A file of frames; - or none for standard input
    #[arg(value_name = "FILE")]
    pub file: Option<OsString>,
}

impl MutateArgs {
    /// A response's version is not on the wire.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.frames.kind == FrameKind::Response && self.frames.version.is_none() {
            return Err("--kind response needs --version V");
        }
        Ok(())
    }
}

/// `fuzz`.
#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// The broker (the only address connected to)
    #[arg(long, value_name = "HOST:PORT", value_parser = values::address,
          required_unless_present = "serve", conflicts_with = "serve")]
    pub target: Option<SocketAddr>,
    /// Send the same requests to this second broker too, and print each answer that
    /// differs from --target's (one JSON line each, after normalizing throttle time,
    /// messages where the error codes agree, and the order of results)
    #[arg(long, value_name = "HOST:PORT", value_parser = values::address, requires = "target")]
    pub compare: Option<SocketAddr>,
    /// With --compare: send only request N of the seed's sequence (a difference's
    /// reproduction: its "index")
    #[arg(long, value_name = "N", requires = "compare")]
    pub index: Option<u64>,
    /// Be a hostile broker instead: listen here (port 0: any free one, printed as
    /// "fuzz: serving on ADDR") and answer ElectLeaders with mutated responses
    #[arg(long, value_name = "LISTEN", value_parser = values::address)]
    pub serve: Option<SocketAddr>,
    /// With --serve: write one JSON line per request answered or refused to FILE (each
    /// ElectLeaders response with its seed, mutation and bytes)
    #[arg(
        long,
        value_name = "FILE",
        requires = "serve",
        conflicts_with = "target"
    )]
    pub record: Option<std::path::PathBuf>,
    /// With --serve: answer every ElectLeaders request with this one frame (hex, size
    /// prefix included), its correlation id set to the request's
    #[arg(
        long,
        value_name = "HEX",
        requires = "serve",
        conflicts_with = "target"
    )]
    pub replay: Option<String>,
    /// With --replay: leave the frame's correlation id as it is
    #[arg(long, requires = "replay", conflicts_with = "target")]
    pub keep_correlation_id: bool,
    /// With --serve: a connection that has not sent a whole request for this long (since
    /// it was accepted or last answered) is closed: 500ms, 30s, 10m [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration, requires = "serve",
          conflicts_with = "target")]
    pub idle_timeout: Option<std::time::Duration>,
    /// Requests to send (with --serve: ElectLeaders responses to serve)
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub count: u64,
    /// The seed: the same seed sends (serves) the same requests (responses)
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// At most R requests a second (default: as fast as the broker answers); not with
    /// --serve
    #[arg(long, value_name = "R", value_parser = values::rate, conflicts_with = "serve")]
    pub rate: Option<f64>,
    /// How long to wait for an answer, in milliseconds; not with --serve (see
    /// --idle-timeout)
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 5000,
        conflicts_with = "serve"
    )]
    pub timeout: u64,
    /// Stop after this many seconds
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub duration: u64,
}

/// `proxy`.
#[cfg(feature = "proxy")]
#[derive(Args, Clone, Debug)]
pub struct ProxyArgs {
    /// Read the options from this TOML file (their names as keys; see
    /// crates/proxy/GUARD.md); an option given here overrides the file's. SIGHUP reads it
    /// again, as does a change to it (its directory is watched), and keeps the rules in
    /// force if it does not parse, is empty, or has weaker rules without saying
    /// allow-weaker-rules = true
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Do not watch the --config file's directory. By default a change to the file (a
    /// Kubernetes ConfigMap swapped through its `..data` symlink, an edit) is put in force
    /// as SIGHUP puts it, and kept out as SIGHUP keeps it out
    #[arg(long, requires = "config")]
    pub no_watch_config: bool,
    /// Check this config file, with the other options given, as a start would (its
    /// certificates loaded, the audit log's place), binding nothing; print one line on
    /// its rules and exit: 0 when it is valid, 2 when not
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    pub check_config: Option<std::path::PathBuf>,
    /// Address to accept clients on (host:port; port 0: any free one)
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = values::address,
        required_unless_present_any = ["config", "check_config"]
    )]
    pub listen: Vec<SocketAddr>,
    /// The broker behind the --listen before it (host:port)
    #[arg(long, value_name = "ADDR", value_parser = values::upstream)]
    pub upstream: Vec<values::Upstream>,
    /// The host clients are told for the guard's listeners when broker addresses are
    /// rewritten (Metadata, FindCoordinator, DescribeCluster); default: each listener's IP,
    /// or for 0.0.0.0 the address the client reached
    #[arg(long, value_name = "HOST")]
    pub advertise_host: Option<String>,
    /// Open a listener on IP, port FIRST + node id, for each broker with no --upstream of
    /// its own, as answers name them; without it such a broker is left as it advertises
    /// itself, with a warning
    #[arg(long, value_name = "IP:FIRST-LAST", value_parser = values::dynamic_listen)]
    pub dynamic_listen: Option<kafka_elect_leaders_proxy::addresses::DynamicListen>,
    /// Serve /metrics (Prometheus text format) and /status (a page for a person) on this
    /// address (host:port; port 0: any free one, printed as "metrics ADDR")
    #[arg(long, value_name = "ADDR", value_parser = values::address)]
    pub metrics_listen: Option<SocketAddr>,
    /// Speak TLS to clients with this certificate chain (PEM, leaf first)
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM)
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Require client certificates signed by these CAs (PEM): mutual TLS
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<std::path::PathBuf>,
    /// Speak TLS to the brokers
    #[arg(long)]
    pub upstream_tls: bool,
    /// The CAs the brokers' certificates must chain to (PEM); default: the system's
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Option<std::path::PathBuf>,
    /// The name the brokers' certificates are checked against; default: each
    /// --upstream's host (its IP address if given as one)
    #[arg(long, value_name = "NAME")]
    pub upstream_server_name: Option<String>,
    /// A certificate chain (PEM) the guard presents to the brokers: mutual TLS. The brokers
    /// then take every client as the guard: needs --tls-client-ca, and with
    /// --allow-principal only those principals are let through at all
    #[arg(long, value_name = "FILE")]
    pub upstream_tls_cert: Option<std::path::PathBuf>,
    /// The private key of --upstream-tls-cert (PEM)
    #[arg(long, value_name = "FILE")]
    pub upstream_tls_key: Option<std::path::PathBuf>,
    /// Every election but PREFERRED is refused: UNCLEAN, and any type the guard does not
    /// know (it fails closed)
    #[arg(long)]
    pub deny_unclean: bool,
    /// No election for NAME's partitions (repeatable)
    #[arg(long, value_name = "NAME")]
    pub protect_topic: Vec<OsString>,
    /// Only these client ids may elect (repeatable; none: any)
    #[arg(long, value_name = "ID")]
    pub allow_client_id: Vec<OsString>,
    /// Only this principal may elect (repeatable; none: any): a SASL PLAIN, SCRAM or
    /// OAUTHBEARER user the broker accepted, or a client certificate's subject
    /// (CN=...,O=..., as Kafka writes it); an unknown principal is refused
    #[arg(long, value_name = "NAME")]
    pub allow_principal: Vec<String>,
    /// A request naming more than N partitions is refused, and so is one for all
    /// partitions
    #[arg(long, value_name = "N", value_parser = values::count::<0>, allow_negative_numbers = true)]
    pub max_partitions: Option<usize>,
    /// A protected topic (--protect-topic) is created with at least N replicas: a
    /// CreateTopics of its name asking for fewer, or for the broker's default (-1, which
    /// the guard cannot check), is refused
    #[arg(long, value_name = "N", value_parser = values::replication, allow_negative_numbers = true)]
    pub min_replication: Option<i16>,
    /// Forward everything unchanged; audit what would be refused
    #[arg(long)]
    pub log_only: bool,
    /// Forward requests of API key KEY, which Kafka 4.4 does not define (repeatable);
    /// while any rule is set, every other key the guard has no decision for closes the
    /// connection
    #[arg(long, value_name = "KEY", value_parser = values::unknown_api_key)]
    pub forward_unknown_api: Vec<i16>,
    /// What every refusal's message begins with, in place of "refused by the
    /// elect-leaders proxy": a team and where to ask, say; at most 200 bytes, no control
    /// character [default: refused by the elect-leaders proxy]
    #[arg(long, value_name = "TEXT", value_parser = values::refusal_text)]
    pub refusal_text: Option<String>,
    /// One JSON line per ElectLeaders decision, appended to FILE (opened again when it is
    /// moved or deleted, and on SIGHUP: logrotate), or to standard output with -;
    /// default: standard error
    #[arg(long, value_name = "FILE|-")]
    pub audit_log: Option<OsString>,
    /// Bytes of audit lines waiting to be written, at most: 16MiB, 1GiB. A connection
    /// whose own lines fill an eighth of it (at least 1 MiB) waits for them to be written;
    /// past the whole of it the log is stalled and elections are refused
    /// (POLICY_VIOLATION) until it drains [default: 64MiB]
    #[arg(
        long,
        value_name = "BYTES",
        value_parser = values::audit_queue_bytes
    )]
    pub audit_queue_bytes: Option<usize>,
    /// Client connections at once, over all listeners; one more is accepted and closed at
    /// once. Default: what the limit on open files allows (raised to the hard limit at
    /// start), two descriptors a client after 64 kept back
    #[arg(
        long,
        value_name = "N",
        value_parser = values::count::<1>,
        allow_negative_numbers = true
    )]
    pub max_connections: Option<usize>,
    /// Threads that serve the connections, each connection kept on one of them for its
    /// life (a connection's events never wake a second thread); 0: connections are tasks
    /// on a work-stealing runtime of as many workers as cores, which costs about twice the
    /// CPU per round trip. At most 1024 [default: the number of cores]
    #[arg(long, value_name = "N", value_parser = values::count::<0>)]
    pub threads: Option<usize>,
    /// A connection with no frame either way for this long is closed (like Kafka's
    /// connections.max.idle.ms): 500ms, 30s, 10m, 1h [default: 10m]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub idle_timeout: Option<std::time::Duration>,
    /// After SIGTERM or SIGINT: how long requests in flight are waited for (no new request
    /// read, /readyz answering 503) before the connections still open are closed
    /// [default: 3s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub drain_timeout: Option<std::time::Duration>,
    /// A connection open this long (each between 90 and 100 % of it) is drained as at a
    /// stop: its requests in flight answered, then closed, so that clients spread over
    /// the replicas again [default: none]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub max_connection_age: Option<std::time::Duration>,
    /// A load balancer whose connections begin with a PROXY protocol header (v1 or v2)
    /// naming the client, which rules and audit then see: an address or a range
    /// (10.0.0.0/8); repeat for more. Its connections without a header are closed; no
    /// other source's header is read [default: none]
    #[arg(long, value_name = "ADDR|RANGE", value_parser = values::source_range)]
    pub proxy_protocol_from: Vec<kafka_elect_leaders_proxy::IpNet>,
    /// A frame a client has begun must be whole within this, or the connection is closed
    /// [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub frame_timeout: Option<std::time::Duration>,
    /// Connecting to the broker must succeed within this, or the client is closed
    /// [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub upstream_connect_timeout: Option<std::time::Duration>,
    /// An answer the broker owes must come within this, after the wait the request asks
    /// for (ElectLeaders' timeout_ms, ...); past it the connection is closed. Produce with
    /// acks=0 is owed nothing [default: 2m]
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub request_timeout: Option<std::time::Duration>,
    /// Bytes of frames over 64 KiB held at once, by all connections both ways; a frame
    /// waits, its sender held back, until its whole size fits: 512MiB, 4GiB [default:
    /// 1GiB]
    #[arg(
        long,
        value_name = "BYTES",
        value_parser = values::buffered_bytes
    )]
    pub max_buffered_bytes: Option<usize>,
    /// A client's frames over 64 KiB answered in the broker's place (refusals), bytes a
    /// second with all its connections; past it, its next frame is read a while later, as
    /// Kafka throttles a client over its quota. 0: no pace [default: 16MiB]
    #[arg(long, value_name = "BYTES", value_parser = values::bytes_per_second)]
    pub refused_bytes_per_second: Option<usize>,
    /// Largest frame read from either side (Kafka's socket.request.max.bytes); a larger
    /// size prefix closes the connection [default: 104857600]
    #[arg(
        long,
        value_name = "BYTES",
        value_parser = values::frame_size,
        allow_negative_numbers = true
    )]
    pub max_frame_size: Option<usize>,
    /// Copy bytes, parse nothing: the baseline of benches/proxy_throughput.sh.
    #[arg(
        long,
        hide = true,
        conflicts_with_all = [
            "deny_unclean", "protect_topic", "allow_client_id", "allow_principal", "max_partitions",
            "min_replication", "log_only",
        ],
    )]
    pub plain: bool,
}

#[cfg(feature = "proxy")]
impl ProxyArgs {
    /// Listeners and brokers pair up in order, and a listener's address is taken once.
    pub fn check(&self) -> Result<(), String> {
        if self.listen.len() != self.upstream.len() {
            return Err(format!(
                "each --listen needs its --upstream: {} --listen, {} --upstream",
                self.listen.len(),
                self.upstream.len()
            ));
        }
        let fixed: Vec<_> = self.listen.iter().filter(|a| a.port() != 0).collect();
        let unique: std::collections::HashSet<_> = fixed.iter().collect();
        if unique.len() != fixed.len() {
            return Err("the same --listen address is given twice".into());
        }
        Ok(())
    }
}
