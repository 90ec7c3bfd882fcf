//! `elect-leaders`: a command-line tool for people who look at Kafka traffic. It reads and
//! writes ElectLeaders (API key 43) frames with the library's own parser and writer; nothing
//! here decodes the wire a second way.
//!
//! This file parses the arguments (by hand: four subcommands and a handful of flags do not
//! need a framework) and maps failures to exit statuses: 0 success, 1 malformed or
//! unreadable input, 2 usage error.

mod fail;
mod fields;
mod fuzz_cmd;
mod gen;
mod hexdump;
mod input;
mod inspect;
mod json;
#[cfg(feature = "proxy")]
mod proxy;
mod scan;
mod style;
mod traffic;
mod tree;

use std::ffi::{OsStr, OsString};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use fail::Failure;
use input::{Kind, Source};
use kafka_elect_leaders_capture as capture;

const USAGE: &str = "\
elect-leaders: look at Apache Kafka ElectLeaders frames (API key 43, versions 0-2).

Usage: elect-leaders <COMMAND> [OPTIONS] [FILE...]

Commands:
  inspect [FILE...]            annotated field tree and hex layout of each frame
                               (no FILE: the bundled sample frames)
  decode  [FILE|-]             frames in, JSON lines out: one object per frame
  encode  [FILE|-]             JSON lines in, frames out
  scan    REQUESTS [RESPONSES] find ElectLeaders requests in a raw capture and pair
                               the responses of the same connection with them
  gen     [--seed S] [--count N]
                               valid random frames, the same for the same seed
  mutate  [--seed S] [FILE|-]  structure-aware mutants of the frames read
  fuzz    --target HOST:PORT   send generated and mutated requests to a broker and
                               report what it does wrong
  proxy   --listen A --upstream B ...
                               guard ElectLeaders between Kafka clients and brokers
                               (built with the feature 'proxy')
  help    [COMMAND]            this text, or a command's

Input is binary frames (an int32 size prefix, then that many bytes), from FILE or from
standard input (-), read one frame at a time; a recorded connection may hold frames of
every Kafka API (the others are passed over). --hex reads hex text instead: whitespace
is ignored, and so is everything from '#' to the end of a line (corpus/src/*.hex works).
A pcap or pcapng capture is recognised by its magic number: its TCP connections are
reassembled and every ElectLeaders frame in them is decoded, each response with the
version of its request.

Exit status: 0 success; 1 malformed or unreadable input (one line on stderr naming the
field and the byte offset, after whatever came before it was printed; for a capture, one
line per problem, naming the packet and the connection, and the rest still decoded);
2 usage error, including a FILE that cannot be opened.

Run 'elect-leaders <COMMAND> --help' for the options of a command;
'elect-leaders -V' (--version) prints the tool's version.
";

const INSPECT_USAGE: &str = "\
Usage: elect-leaders inspect [--request | --response --version N] [--hex] [--all]
                             [--port N] [--color auto|always|never] [FILE...]

Prints, for each frame, the annotated tree of its fields (name, type, value, byte offset
and size within the frame, and what the schema says the field is) and its bytes, 16 to a
row. Error codes are shown with their Kafka names. Offsets in the tree count from the first
byte of the frame's size prefix; the banner above each frame says where it starts in the
input.

With no FILE, inspects the bundled sample frames: the two reference frames
(request-v2-min.bin, response-v2-min.bin). Use - for standard input.

A response does not carry its version on the wire, so inspect must be told which frames
are responses:
  --response --version N   every input holds ElectLeaders responses of version N (0-2)
  --request                every input holds requests (whatever the file names say)
  (neither)                a file named response-vN-... (as in corpus/) holds responses
                           of version N; anything else holds requests

A recorded connection's frames of other APIs are passed over (one line each with
--all). A pcap or pcapng capture is read as decode reads it (see 'decode --help'): each
tree is headed by the packets, time, connection, addresses and stream offset of its
frame.

Options:
  --hex             the input is hex text (whitespace and # comments ignored); the
                    bundled samples are read as binary regardless
  --all             one line for each frame of another API
  --port N          a capture's broker port (default 9092)
  --color WHEN      colours: auto (the default: only when standard output is a terminal
                    and NO_COLOR is not set), always, never
  -h, --help        this text

On a malformed frame: the tree as far as it can be read, the error with its field and
byte offset, the bytes with the failure marked; then inspect moves on to the next FILE
and finally exits with status 1.
";

const DECODE_USAGE: &str = "\
Usage: elect-leaders decode [--request | --response --version N] [--hex] [--all]
                            [--port N] [FILE|-]

Reads frames from FILE (or standard input) one at a time and prints one JSON object per
frame, one per line, with the field names of Kafka's schema in snake_case (every member
is described in docs/JSON.md):
  {\"kind\":\"request\",\"api_key\":43,\"api_version\":2,\"correlation_id\":0,\"client_id\":\"\",
   \"election_type\":0,\"topic_partitions\":[{\"topic\":\"\",\"partitions\":[0]}],\"timeout_ms\":0}
Fields a version lacks are left out; null arrays and strings are null; a byte string that
is not UTF-8 is {\"hex\":\"...\"}; unknown tagged fields appear as
\"tagged_fields\":[{\"tag\":N,\"data\":\"<hex>\"}] (\"header_tagged_fields\" for the header's),
only when there are some.

Requests need no flags: the header says the version. A response does not, so:
  --response --version N   the input holds ElectLeaders responses of version N (0-2)
  --request                the input holds requests (whatever the file name says)
  (neither)                a file named response-vN-... holds responses of version N;
                           anything else holds requests

A stream of requests may be a whole recorded connection: frames of other APIs
(ApiVersions, Metadata, ...) are passed over. When its first frame is of another API,
every object gets one more member, \"source\":{\"frame\":N,\"offset\":BYTE}.

A pcap or pcapng capture needs no flag. Each connection's two directions are
reassembled; the broker's side is the one on --port (default 9092), else the side that
received the SYN, else the side the first request header was sent to. Every request is
remembered, whatever its API, so each ElectLeaders response is decoded with its
request's version. Every object gets \"source\": the packet (or \"packets\":[FIRST,LAST])
that carried the frame, the capture \"time\" of the last one, the \"connection\" number,
\"src\" and \"dst\" (address:port), the frame's \"stream_offset\" in its direction and its
\"frame\" number there. Gaps, cut packets and malformed frames are reported on stderr
(packet, connection), decoding goes on at the next frame boundary that can be proven,
and the exit status is 1 (the output is partial).

Options:
  --hex         the input is hex text (whitespace and # comments ignored)
  --all         also list frames of other APIs: {\"kind\",\"api_key\",\"api_name\",
                \"api_version\",\"correlation_id\",\"bytes\"} (a response whose request
                was not seen has null api_key and api_name)
  --port N      a capture's broker port (default 9092)
  -h, --help    this text

On a malformed frame of a file, prints the frames before it, then one line on stderr
naming the field and the byte offset, and exits with status 1.
";

const ENCODE_USAGE: &str = "\
Usage: elect-leaders encode [--hex] [FILE|-]

Reads JSON objects from FILE (or standard input) and writes each as a frame with the
library's writer: binary frames back to back, or with --hex one line of hex per frame.
The objects may be one per line, spread over several lines or back to back ('decode |
jq ... | encode' works without jq -c). They are those 'decode' prints (docs/JSON.md);
\"kind\" and \"api_version\" are required (responses carry \"api_version\" so the version
is known). A field left out takes its default (Kafka's: timeout_ms 60000, election_type
0, client_id \"\", empty lists, and 0 for the rest); a non-default value for a field the
version lacks is an error, as in Kafka's own writer. Byte strings may be given as
{\"hex\":\"...\"}. Error codes and election types may be given by their Kafka names
(\"NOT_CONTROLLER\", \"UNCLEAN\") as well as by number.

Binary frames are not written to a terminal: use --hex, or redirect standard output.

'decode | encode' gives back the same bytes for any frame whose varints are minimal and
whose tagged fields are in ascending order (the writer writes canonical frames).

Options:
  --hex         write hex text, one line per frame, instead of binary
  -h, --help    this text

On a bad object, writes the frames before it, then one line on stderr naming the line
(the lines an object spans; line and column for text that is not JSON) and the field,
and exits with status 1.
";

const SCAN_USAGE: &str = "\
Usage: elect-leaders scan [--hex] [--json] REQUESTS_FILE [RESPONSES_FILE]
       elect-leaders scan [--json] [--port N] CAPTURE

Finds ElectLeaders request frames inside arbitrary bytes: a capture of one direction of a
connection that need not start on a frame boundary, with other Kafka traffic around the
frames. Every place where the header pattern 00 2b 00 0V (API key 43, version 0-2) occurs
is a candidate; it is kept only if the library parses the frame that its size prefix
(the 4 bytes before) announces. Candidates inside a frame already found are skipped.
Prints one line per request: offset in the capture, size, version, correlation id,
client id, election type, topic and partition counts.

With RESPONSES_FILE (the other direction of the same connection), also finds each
request's response, in one pass over that file: a place where a waiting request's
correlation id follows a size prefix, parsed at that request's version. A response
answers the oldest waiting request with its correlation id and is used once.

Both files are streamed, a few MB at a time: memory holds one window, at most one frame
kept across windows, and what is printed of each request until its response is found.
Use - for standard input (for one of the files). The search of each window may parse 32
bytes per byte of it, plus 16 MiB: ordinary captures need about one. Bytes crafted so
that candidate frames overlap can need more; the search then gives up on the rest of
that window, names the bytes it did not search on stderr, goes on with the next window,
and exits with status 1.

A pcap or pcapng CAPTURE (recognised by its magic number) is read as a stream instead,
connection by connection, as 'decode' reads it: one line per ElectLeaders request and
per response, as they come, with the packet and the connection.

Options:
  --hex         the files are hex text (whitespace and # comments ignored)
  --json        one JSON object per request: {\"request\":{...},\"response\":{...}}, each
                as 'decode' prints it with its \"source\"; \"response\" is null when none
                was found
  --port N      a capture's broker port (default 9092)
  -h, --help    this text
";

/// The subcommands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Command {
    Inspect,
    Decode,
    Encode,
    Scan,
}

impl Command {
    fn from_name(name: &str) -> Option<Command> {
        match name {
            "inspect" => Some(Command::Inspect),
            "decode" => Some(Command::Decode),
            "encode" => Some(Command::Encode),
            "scan" => Some(Command::Scan),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Command::Inspect => "inspect",
            Command::Decode => "decode",
            Command::Encode => "encode",
            Command::Scan => "scan",
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Command::Inspect => INSPECT_USAGE,
            Command::Decode => DECODE_USAGE,
            Command::Encode => ENCODE_USAGE,
            Command::Scan => SCAN_USAGE,
        }
    }

    /// Whether the command reads frames whose kind (request or response) must be known.
    fn takes_kind(self) -> bool {
        matches!(self, Command::Inspect | Command::Decode)
    }
}

/// When to colour `inspect`'s output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// The parsed options of one subcommand.
#[derive(Debug)]
pub struct Options {
    /// `--hex`: hex text in (decode, inspect, scan) or out (encode).
    pub hex: bool,
    /// `--request`.
    pub request: bool,
    /// `--response`.
    pub response: bool,
    /// `--version N`.
    pub version: Option<i16>,
    /// `--color WHEN`.
    pub color: ColorWhen,
    /// `--all`: list the frames of other APIs too.
    pub all: bool,
    /// `--port N`: the broker's TCP port in a capture.
    pub port: Option<u16>,
    /// `--json` (scan): one JSON object per request, with its response.
    pub json: bool,
    /// The positional arguments.
    pub files: Vec<OsString>,
}

impl Options {
    /// What the frames of `source` are: the flags decide, else the file's name.
    pub fn kind_of(&self, source: &Source) -> Kind {
        if self.request {
            return Kind::Request;
        }
        match self.version {
            Some(version) if self.response => Kind::Response(version),
            _ => source.kind_by_name().unwrap_or(Kind::Request),
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // The proxy writes standard output from several threads: it must not be locked here.
    #[cfg(feature = "proxy")]
    if args.first().is_some_and(|a| a == "proxy") {
        return match proxy::run(args.into_iter().skip(1)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => failure.report(),
        };
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = run(args, &mut out);
    // Whatever was good is printed before the error is reported.
    let flushed = out.flush();
    let result = result.and(flushed.map_err(Failure::Output));
    report_peak_memory();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// With `ELECT_LEADERS_PEAK_RSS` set, the process's peak resident memory (Linux's
/// `VmHWM`) on standard error as it ends: what the memory bounds in the README are checked
/// against.
fn report_peak_memory() {
    if std::env::var_os("ELECT_LEADERS_PEAK_RSS").is_none() {
        return;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match status.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
        Some(peak) => eprintln!("elect-leaders: peak RSS {}", peak.trim()),
        None => eprintln!("elect-leaders: peak RSS unknown"),
    }
}

fn run(args: Vec<OsString>, out: &mut dyn Write) -> Result<(), Failure> {
    let mut args = args.into_iter();
    let Some(first) = args.next() else {
        return Err(Failure::usage_top("no command given"));
    };
    let first = first.to_string_lossy().into_owned();
    let command = match first.as_str() {
        "-h" | "--help" => return print(out, USAGE),
        "-V" | "--version" => {
            return print(
                out,
                concat!("elect-leaders ", env!("CARGO_PKG_VERSION"), "\n"),
            );
        }
        "help" => {
            let topic = args.next().map(|a| a.to_string_lossy().into_owned());
            #[cfg(feature = "proxy")]
            if topic.as_deref() == Some("proxy") {
                return print(out, proxy::USAGE);
            }
            match topic.as_deref() {
                Some("gen") => return print(out, gen::GEN_USAGE),
                Some("mutate") => return print(out, gen::MUTATE_USAGE),
                Some("fuzz") => return print(out, fuzz_cmd::FUZZ_USAGE),
                _ => {}
            }
            return match topic.as_deref().map(Command::from_name) {
                None => print(out, USAGE),
                Some(Some(command)) => print(out, command.usage()),
                Some(None) => Err(Failure::usage_top(format!(
                    "no help on '{}': not a command",
                    topic.unwrap_or_default()
                ))),
            };
        }
        "gen" => return gen::run("gen", args, out),
        "mutate" => return gen::run("mutate", args, out),
        "fuzz" => return fuzz_cmd::run(args, out),
        name => match Command::from_name(name) {
            Some(command) => command,
            None => {
                return Err(Failure::usage_top(format!("unknown command '{name}'")));
            }
        },
    };
    let Some(options) = parse_options(command, args)? else {
        return print(out, command.usage());
    };
    match command {
        Command::Inspect => inspect::run(&options, out),
        Command::Decode => json::decode(&options, out),
        Command::Encode => json::encode(&options, out),
        Command::Scan => scan::run(&options, out),
    }
}

fn print(out: &mut dyn Write, text: &str) -> Result<(), Failure> {
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}

/// Parses a subcommand's arguments; `None` when `--help` was asked for.
fn parse_options(
    command: Command,
    mut args: impl Iterator<Item = OsString>,
) -> Result<Option<Options>, Failure> {
    let usage = |message: String| Failure::usage(command.name(), message);
    let mut options = Options {
        hex: false,
        request: false,
        response: false,
        version: None,
        color: ColorWhen::Auto,
        all: false,
        port: None,
        json: false,
        files: Vec::new(),
    };
    let mut only_files = false;
    while let Some(arg) = args.next() {
        if only_files || !is_option(&arg) {
            options.files.push(arg);
            continue;
        }
        let text = arg.to_string_lossy().into_owned();
        // `--name=value` or `--name value`.
        let (name, inline_value) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_owned(), Some(value)),
            _ => (text.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, Failure> {
            if let Some(value) = inline_value {
                return Ok(value.to_owned());
            }
            match args.next() {
                Some(value) => Ok(value.to_string_lossy().into_owned()),
                None => Err(usage(format!("{name} needs a value ({what})"))),
            }
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--" => only_files = true,
            "--hex" => options.hex = true,
            "--request" if command.takes_kind() => options.request = true,
            "--response" if command.takes_kind() => options.response = true,
            "--version" if command.takes_kind() => {
                let text = value("0, 1 or 2")?;
                match text.parse::<i16>() {
                    Ok(v @ 0..=2) => options.version = Some(v),
                    _ => {
                        return Err(usage(format!(
                            "--version: expected 0, 1 or 2 (the versions ElectLeaders has), \
                             got '{text}'"
                        )))
                    }
                }
            }
            "--all" if command != Command::Encode => options.all = true,
            "--json" if command == Command::Scan => options.json = true,
            "--port" if command != Command::Encode => {
                let text = value("a TCP port")?;
                match text.parse::<u16>() {
                    Ok(port) if port > 0 => options.port = Some(port),
                    _ => {
                        return Err(usage(format!(
                            "--port: expected a TCP port (1-65535), got '{text}'"
                        )))
                    }
                }
            }
            "--color" | "--colour" if command == Command::Inspect => {
                options.color = match value("auto, always or never")?.as_str() {
                    "auto" => ColorWhen::Auto,
                    "always" => ColorWhen::Always,
                    "never" => ColorWhen::Never,
                    other => {
                        return Err(usage(format!(
                            "--color: expected auto, always or never, got '{other}'"
                        )))
                    }
                };
            }
            _ => return Err(usage(format!("unknown option '{name}'"))),
        }
        if inline_value.is_some()
            && matches!(
                name.as_str(),
                "--hex" | "--request" | "--response" | "--all" | "--json"
            )
        {
            return Err(usage(format!("{name} takes no value")));
        }
    }
    check_options(command, &options).map_err(usage)?;
    Ok(Some(options))
}

/// An argument that looks like an option: `-` alone is standard input, not an option.
fn is_option(arg: &OsStr) -> bool {
    let bytes = arg.as_encoded_bytes();
    bytes.len() > 1 && bytes[0] == b'-'
}

/// The rules that hold across options.
fn check_options(command: Command, options: &Options) -> Result<(), String> {
    if options.request && (options.response || options.version.is_some()) {
        return Err("--request cannot go with --response or --version".into());
    }
    if options.version.is_some() && !options.response {
        return Err(
            "--version applies to responses only (a request's version is in its header): \
             use --response --version N"
                .into(),
        );
    }
    if options.response && options.version.is_none() {
        return Err(
            "--response needs --version N: a response does not carry its version on the wire"
                .into(),
        );
    }
    let files = options.files.len();
    match command {
        Command::Inspect => {}
        Command::Decode | Command::Encode if files > 1 => {
            return Err(format!(
                "one input at most (FILE or - for standard input), got {files}"
            ));
        }
        Command::Decode | Command::Encode => {}
        Command::Scan if files == 0 => {
            return Err("missing REQUESTS_FILE".into());
        }
        Command::Scan if files > 2 => {
            return Err(format!(
                "at most two files (REQUESTS_FILE RESPONSES_FILE), got {files}"
            ));
        }
        Command::Scan => {
            if files == 2 && options.files[0] == "-" && options.files[1] == "-" {
                return Err("standard input (-) can be only one of the two files".into());
            }
        }
    }
    Ok(())
}
