//! The explanatory texts of `--help`: what each command does, beyond its list of options.
//! `{versions}` stands for the range of ElectLeaders versions ([`crate::versions::fill`]).

/// Every command's help: the usage line first, then what the command does, its options,
/// and what follows them.
pub const TEMPLATE: &str =
    "{usage-heading} {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

pub const TOP_ABOUT: &str =
    "elect-leaders: look at Apache Kafka ElectLeaders frames (API key 43, versions {versions}).";

pub const TOP_AFTER: &str = "\
Input is binary frames (an int32 size prefix, then that many bytes), from FILE or from
standard input (-), read one frame at a time; a recorded connection may hold frames of
every Kafka API (the others are passed over). --hex reads hex text instead: whitespace
is ignored, and so is everything from '#' to the end of a line (corpus/src/*.hex works).
A pcap or pcapng capture is recognised by its magic number: its TCP connections are
reassembled and every ElectLeaders frame in them is decoded, each response with the
version of its request.

An input that is neither (text, JSON, an image...) is refused at once with what it looks
like; an empty input is an error too: there is nothing in it to read.

Exit status: 0 success; 1 malformed, unreadable or empty input (one line on stderr naming
the field and the byte offset, after whatever came before it was printed; for a capture,
one line per problem, naming the packet and the connection, and the rest still decoded);
2 usage error, including a FILE that cannot be opened.

Run 'elect-leaders <COMMAND> --help' for the options of a command;
'elect-leaders -V' (--version) prints the tool's version.";

pub const AUDIT_ABOUT: &str = "\
The guard's audit trail: 'audit verify' checks its hash chain";

pub const VERIFY_ABOUT: &str = "\
Check an audit trail's hash chain: every gap, reorder, duplicate and edited record, per replica";

pub const VERIFY_LONG: &str = "\
Reads the guard's audit lines (files in the order written, standard input, or the audit
topic with --topic) and checks each replica's chains: every line of a chain carries the
replica, the chain (one per start of the guard), its sequence number (seq, from 0), the
hash of the line before (prev) and its own hash, SHA-256 of the line up to prev, or
HMAC-SHA-256 under the guard's --audit-chain-key-file (give it here as --key-file).

Prints one line per chain (where it starts: each start of a replica begins a new chain)
and one per finding: gap (seq missing), undelivered (missing, and counted as not delivered
by the audit topic's producer: undeliveredbefore), reorder (a record after a higher seq),
duplicate (the same record twice), edited (bytes that do not match their hash, a prev that
is not the hash of the record before, or two different records with one seq), not-json,
unchained (no chain fields).

Without a key, anyone who can write the trail can also rebuild a consistent chain: the
check then finds accidents and careless edits, not a careful forger. With a key, only its
holders can. Records removed from the end of a chain, or whole chains removed, leave no
gap.

Exit status: 0 the trail is whole; 1 anything found (undelivered records too: they are
missing); 2 usage error, an input or key file that cannot be read, a topic that cannot
be read.";

pub const INSPECT_ABOUT: &str = "\
Annotated field tree and hex layout of each frame (no FILE: standard input, or on a terminal the bundled sample frames)";

pub const INSPECT_LONG: &str = "\
Prints, for each frame, the annotated tree of its fields (name, type, value, byte offset
and size within the frame, and what the schema says the field is) and its bytes, 16 to a
row. Error codes are shown with their Kafka names. Offsets in the tree count from the first
byte of the frame's size prefix; the banner above each frame says where it starts in the
input.

With no FILE, inspects what is piped in on standard input ('cat f | elect-leaders
inspect'); when standard input is a terminal, with nothing piped in, the bundled sample
frames instead: the two reference frames (request-v2-min.bin, response-v2-min.bin). Use -
for standard input among other FILEs.

A response does not carry its version on the wire, so inspect must be told which frames
are responses:
  --response --version N   every input holds ElectLeaders responses of version N ({versions})
  --request                every input holds requests (whatever the file names say)
  (neither)                a file named response-vN-... (as in corpus/) holds responses
                           of version N; anything else holds requests

A recorded connection's frames of other APIs are passed over (one line each with
--all). A pcap or pcapng capture is read as decode reads it (see 'decode --help'): each
tree is headed by the packets, time, connection, addresses and stream offset of its
frame.";

pub const INSPECT_AFTER: &str = "\
On a malformed frame: the tree as far as it can be read, the error with its field and
byte offset, the bytes with the failure marked; then inspect moves on to the next FILE
and finally exits with status 1.";

pub const DECODE_ABOUT: &str = "Frames in, JSON lines out: one object per frame";

pub const DECODE_LONG: &str = "\
Reads frames from each FILE in turn (or standard input) one at a time and prints one JSON
object per frame, one per line, with the field names of Kafka's schema in snake_case (every
member is described in docs/JSON.md):
  {\"kind\":\"request\",\"api_key\":43,\"api_name\":\"ElectLeaders\",\"api_version\":2,
   \"correlation_id\":0,\"client_id\":\"\",\"election_type\":0,
   \"topic_partitions\":[{\"topic\":\"\",\"partitions\":[0]}],\"timeout_ms\":0}
Every object names its API (a response, its request's); every error_code has its Kafka
name beside it in error_name.
Fields a version lacks are left out; null arrays and strings are null; a byte string that
is not UTF-8 is {\"hex\":\"...\"}; unknown tagged fields appear as
\"tagged_fields\":[{\"tag\":N,\"data\":\"<hex>\"}] (\"header_tagged_fields\" for the header's),
only when there are some.

Requests need no flags: the header says the version. A response does not, so:
  --response --version N   the input holds ElectLeaders responses of version N ({versions})
  --request                the input holds requests (whatever the file name says)
  (neither)                a file named response-vN-... holds responses of version N;
                           anything else holds requests

A stream of requests may be a whole recorded connection: frames of other APIs
(ApiVersions, Metadata, ...) are passed over. When its first frame is of another API,
every object gets one more member, \"source\":{\"frame\":N,\"offset\":BYTE}. With --all,
each frame of another API is listed as {\"kind\",\"api_key\",\"api_name\",\"api_version\",
\"correlation_id\",\"bytes\"} (a response whose request was not seen has null api_key and
api_name).

A pcap or pcapng capture needs no flag. Piped in as it is written ('tcpdump -U -w - |
elect-leaders decode -'), it is read as it arrives, and each object is written out as soon
as its frame is read. Each connection's two directions are
reassembled; the broker's side is the one on --port (default 9092), else the side that
received the SYN, else the side an ElectLeaders request was proven to go to (until then up
to 256 KiB of each side is kept; what is let go past that is named). Every request is
remembered, whatever its API, so each ElectLeaders response is decoded with its
request's version. Every object gets \"source\": the packet (or \"packets\":[FIRST,LAST])
that carried the frame, the capture \"time\" of the last one, the \"connection\" number,
\"src\" and \"dst\" (address:port), the frame's \"stream_offset\" in its direction, its
\"frame\" number there and \"epoch_us\" (the time in microseconds since 1970); a response
paired with its request adds its \"request_time\", \"request_frame\" and \"latency_us\". A response captured before its request (as multi-queue capture
reorders packets) waits for it, as far as its packet's ACK says the request came first.
Gaps, cut packets, malformed frames and responses whose request was not seen are
reported on stderr (packet, connection), decoding goes on at the next frame boundary
that can be proven, and the exit status is 1 (the output is partial). A problem that
repeats is reported once, then counted in one line at the end. A connection idle for
--idle-timeout of capture time (10m) is let go, and so is the least recently active one
when more than --max-connections (10000) are open; what that loses is reported.";

pub const DECODE_AFTER: &str = "\
Filters: --api NAME (repeatable) prints the frames of those APIs only (by Kafka's name, any
case, or key; other APIs need no --all then); --topic, --client-id and --errors-only look
into ElectLeaders frames (a request for every partition matches any --topic; a response
matches --client-id through its request, so only in a capture; --errors-only prints only
responses that report a failure, an error code other than NONE and ELECTION_NOT_NEEDED,
as the summary counts failed partitions; --any-error every error code; --election-type
TYPE only requests of that type, and in a capture their responses), and with any of them
frames of other APIs are not printed; a combination that can never match (--api without
ElectLeaders and one of them) is refused. --connection N prints only the frames of a
capture's connection N (every API with --all), in their order.

\
Live capture: --interface IFACE captures on a network interface through libpcap (root or
CAP_NET_RAW needed; a build with the feature `live`) and decodes as packets come, each
object written out at once, as a capture piped in is; --filter BPF is a libpcap filter
expression ('tcp port 9092'). It ends on Ctrl-C or SIGTERM (the packets already captured
are read, the connections still open closed as at the end of a file), after --count N
packets or after --duration (30s, 5m); the exit status is as for a capture file. libpcap
is set up as tcpdump's: a 2MiB buffer (--buffer-size), immediate mode only when printing
to a terminal (--immediate-mode forces it; on Linux it holds far fewer packets).

On a malformed frame of a file, prints the frames before it, then one line on stderr
naming the field and the byte offset, and exits with status 1. With several FILEs, every
object's \"source\" names its \"file\", and a bad FILE is reported and the others still
decoded (the exit status is then 1, or 2 for a FILE that cannot be opened).";

pub const ENCODE_ABOUT: &str = "JSON lines in, frames out";

pub const ENCODE_LONG: &str = "\
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

Fed from decode: 'elect-leaders decode FILE | elect-leaders encode --hex' works as it is
for files of frames. Objects decoded from a capture carry \"source\", which encode refuses
as a field of no frame, and 'decode --all' adds objects of other APIs, which have no body
to encode: keep the ElectLeaders objects and drop their source with jq:

  elect-leaders decode capture.pcap | jq -c 'del(.source)' | elect-leaders encode --hex";

pub const ENCODE_AFTER: &str = "\
On a bad object, writes the frames before it, then one line on stderr naming the line
(the lines an object spans; line and column for text that is not JSON) and the field,
and exits with status 1.";

pub const SCAN_ABOUT: &str =
    "Find ElectLeaders requests in a raw capture, each with its response from the other one";

pub const SCAN_LONG: &str = "\
Finds ElectLeaders request frames inside arbitrary bytes: a capture of one direction of a
connection that need not start on a frame boundary, with other Kafka traffic around the
frames. Every place where the header pattern 00 2b 00 0V (API key 43, version {versions}) occurs
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

A pcap or pcapng CAPTURE (recognised by its magic number, given as REQUESTS_FILE alone)
is read as a stream instead, connection by connection, as 'decode' reads it: one line per
ElectLeaders request and per response, as they come, with the packet and the connection.
--interface IFACE (with --filter BPF, --count N, --duration D) reads live packets the same
way, through libpcap, as 'decode --interface' does, each line written out at once.

Filters, as on 'decode': --topic, --client-id, --election-type, --errors-only,
--any-error, --connection N and --api NAME (scan lists
ElectLeaders frames only: --api without ElectLeaders lists nothing). A request listed with
its response (RESPONSES_FILE, or a capture with --json) is listed when the request is from
a --client-id given, the request or the response names a --topic given, and with
--errors-only the response reports a failure (an error code other than NONE and
ELECTION_NOT_NEEDED; --any-error: any code other than NONE). A response's line counts its
partitions failed= and not_needed= (ELECTION_NOT_NEEDED) apart.";

pub const SUMMARY_ABOUT: &str =
    "What a capture or a file of frames holds, counted: elections, outcomes, latency, anomalies";

pub const SUMMARY_LONG: &str = "\
Reads FILE (or standard input) as 'decode' reads it, a capture or frames, and prints what
it holds, counted: the connections; the client ids, with their requests and connections;
the APIs, with their requests and responses; the ElectLeaders requests by election type
and by topic; the outcomes, partitions by error code, overall and per topic; the
partitions that failed, with their error messages; the latency of the paired ElectLeaders
responses (p50, p90, p99 and max, in microseconds, nearest rank) and the five slowest
round trips with their connection, frames and partitions; and the anomalies:
requests never answered, responses whose request was not seen, malformed frames, gaps and
other notes. The notes are also reported on stderr as 'decode' reports them, and the exit
status is 1 when some traffic could not be read (the summary is then partial, and says so).

--json prints one JSON object (docs/JSON.md, \"summary --json\"). --html FILE writes one
self-contained HTML page (no script, nothing fetched): the same tables, a timeline of the
elections per topic coloured by outcome, and a histogram of the latencies.

Filters, as on 'decode --all' (--api, --topic, --client-id, --election-type, --errors-only,
--any-error, --connection): the summary
counts the frames decode would print; the anomalies are counted whatever the filters.

--interface IFACE (with --filter BPF, --count N, --duration D) summarizes live packets
captured through libpcap, as 'decode --interface' reads them; the summary is printed when
the capture ends (Ctrl-C, SIGTERM, --count or --duration).

Memory: counts per distinct key (client id, API, topic, error code, failed partition),
the requests waiting for an answer on each open connection, one number per paired
ElectLeaders response (the latencies, kept for exact percentiles), and with --html one
point per topic of each response, at most 100000.";

pub const GEN_ABOUT: &str = "Valid random frames, the same for the same seed";

pub const GEN_LONG: &str = "\
Writes N (default 1) valid random ElectLeaders frames to standard output, the same for the
same seed S (default 0): requests (the default) or responses, at version V ({versions}; default:
each frame's own, at random). Frames are binary (size prefix and body), back to back, and
not written to a terminal (redirect, or use --hex); with --hex, one frame per line in
lowercase hex. A response's version is not on the wire: with
--hex and no --version, a '# response vN' line comes before each response.";

pub const MUTATE_ABOUT: &str = "Structure-aware mutants of the frames read";

pub const MUTATE_LONG: &str = "\
Reads frames (binary, or hex text with --hex) from FILE or standard input and writes N
(default 1) mutants of each, the same for the same seed S (default 0) and input, in the
same form. Each mutant changes one thing at the level of the schema (a value at a boundary,
a string, a list element, a tagged field, a null, the version) and is written back with the
library's writer; some are deliberate malformations (a length that lies, tags out of
order, a size prefix off by one). What is not a whole ElectLeaders frame is mutated byte by
byte. Responses need their version (--kind response --version V); a mutant may be at
another version: with --hex, a '# response vN' line comes before each response mutant.
With --verbose (which needs --hex), a '# field: change' line comes before each mutant.
Binary mutants are not written to a terminal: redirect, or use --hex.";

pub const FUZZ_ABOUT: &str =
    "Send generated and mutated requests to a broker and report what it does wrong";

pub const FUZZ_LONG: &str = "\
Sends N (default 100) generated and mutated ElectLeaders requests to the broker at
HOST:PORT, the same ones for the same seed S (default 0), at most R a second (default: as
fast as it answers), one at a time on a connection that starts with ApiVersions. Each answer
is read (waiting at most MS milliseconds, default 5000), parsed at the request's version and
compared with the request. Stops after N requests or SECS seconds (default 300). Connects to
HOST:PORT only. Elections are real: use a test cluster.

Prints one line per anomaly, then a summary. Anomalies:
  no-answer      the connection closed without an answer to a well-formed request
  timeout        no answer within MS milliseconds (the broker stopped answering)
  unparsable     an answer that the library refuses
  correlation    an answer to another correlation id
  partitions     an answer (ErrorCode NONE) whose partitions are not the ones asked for
  unreachable    the broker cannot be connected to (the campaign stops)
A malformed request that the broker answers by closing the connection is counted, not an
anomaly. Every wait is cut to what is left of SECS: the campaign ends within SECS (plus the
time to print), and a wait cut short that way is not an anomaly, unless the broker answered
no ElectLeaders request in the whole run: a silent broker is a timeout. Each anomaly is
printed as it is found; Ctrl-C or SIGTERM ends the campaign at once with its summary.

With --compare HOST2:PORT2 the same requests (the same bytes: the version both brokers
have, correlation id N+1 for request N) also go to a second broker, each on its own
connection, and the two answers are compared instead of checked. Each request whose
answers differ is one JSON line on standard output: index, seed (and seed_str, the same
as a string: jq rounds numbers past 2^53), request_version, malformed, request (hex),
differences (path, a, b), classes, a and b (outcome: answer,
closed or timeout; hex and the decoded response), and reproduce: the command that sends
request N alone again (--index N). Normalized away, and counted in the summary on standard
error: ThrottleTimeMs, a partition's ErrorMessage when the error codes agree, the order of
topics and partitions, and, for a request whose TimeoutMs is under a second, a partition
or a whole answer that timed out on one broker only (REQUEST_TIMED_OUT; in version 0, an
answer without results).
Everything else differs: an answer against a closed connection or a timeout, the
correlation id, error codes, a topic or partition answered by one broker only or more
often, unknown tagged fields, an answer only one of the two parses. FUZZING.md has the
details.

With --serve LISTEN it is the broker instead, a hostile one, for fuzzing clients. It prints
'fuzz: serving on ADDR', answers ApiVersions (it advertises ApiVersions 0-3, Metadata 4,
ElectLeaders 0-2) and Metadata (itself the only broker, node 1, and the controller; each
topic asked for with one partition), and each ElectLeaders request with the response a
broker that did every election would give (its topics and partitions, at its version),
changed by the structure-aware mutator (see 'mutate'): unusual values, every error code,
null, empty, long and non-UTF-8 strings, unknown tagged fields, results missing or for
topics not asked for, lengths that lie, truncation, trailing bytes. One response in ten is
served unchanged. The Nth response's seed is derived from S and N alone: a client sending
the same requests gets the same responses. Any other request is recorded and its connection
closed. It serves at most 64 connections at once (one more is accepted, recorded and
closed); one that sends no whole request, or takes no answer, for --idle-timeout (default
60s) is closed and recorded. --rate and --timeout are the sender's and refused with
--serve. Stops after N ElectLeaders responses, SECS seconds, or on Ctrl-C or SIGTERM (its
summary printed, exit 0). --record FILE writes one JSON line per request (n, conn,
correlation_id, request_version, seed and seed_str, mutation, malformed,
response_version, request and response hex, ms since the start, unix_ms), each before its
answer is sent; --replay HEX serves one recorded response to every ElectLeaders request: a
finding's one-line reproduction.";

pub const FUZZ_AFTER: &str =
    "Exit status: 0 no anomaly (--serve: served; --compare: no difference), 1 anomalies \
(--serve: the record could not be written; --compare: differences), 2 usage error \
(--compare: also a broker that cannot be connected to, gives no ApiVersions answer or \
answers no ElectLeaders request).";

#[cfg(feature = "proxy")]
pub const PROXY_ABOUT: &str = "\
Guard ElectLeaders between Kafka clients and brokers (built with the feature 'proxy')";

#[cfg(feature = "proxy")]
pub const PROXY_LONG: &str = "\
A TCP proxy in front of Kafka brokers that applies a policy to ElectLeaders requests
(API key 43, versions {versions}). Give one --listen/--upstream pair per broker, in order, and
make the brokers advertise the --listen addresses (advertised.listeners), so clients stay
on the proxy after bootstrap. Each client connection gets its own broker connection.

Frames of every other API are forwarded byte for byte; only their header's first fields
are read, except where the guard polices or rewrites them (crates/proxy/GUARD.md: 'Every
Kafka API, one table'). While any rule is set, an API only brokers and controllers send (WriteTxnMarkers,
the quorum's, the share coordinator's...) or a key Kafka 4.4 does not define closes the
connection (--forward-unknown-api KEY forwards such a key). ElectLeaders requests are
parsed, and:
  --deny-unclean          UNCLEAN elections are refused
  --protect-topic NAME    no election for NAME's partitions (repeatable)
  --allow-client-id ID    only these client ids may elect (repeatable; none: any)
  --max-partitions N      a request naming more than N partitions is refused, and so is
                          one for all partitions (null TopicPartitions)
  --log-only              forward everything unchanged; audit what would be refused

A refused partition is answered by the proxy, in the response the client waits for, with
POLICY_VIOLATION (44) and a message naming the rule; the broker never sees it. When only
some partitions are refused (a protected topic next to others), the rest is forwarded and
the broker's answer is merged with the refusals into one response. A refused client id,
too many partitions, or an election of all partitions under --protect-topic or (UNCLEAN)
--deny-unclean refuse the whole request as Kafka's getErrorResponse does: the top-level
ErrorCode (v1+) and every named partition set to POLICY_VIOLATION. Version 0 has no
top-level ErrorCode: a v0 request for all partitions refused whole gets an empty result
list (what Kafka answers at v0 too), and the audit log says it was refused. Answers go
back in request order, also when one is answered by the proxy while earlier ones are still
at the broker.";

#[cfg(feature = "proxy")]
pub const PROXY_AFTER: &str = "\
Once listening, prints one line per listener on standard output:
  listening 127.0.0.1:PORT upstream HOST:PORT
Diagnostics (connections closed on malformed frames, brokers unreachable) go to standard
error, one line each. A malformed frame from a client (a bad size prefix, an ElectLeaders
request that does not parse) closes that client's connection, and nothing of it is
forwarded. A broker that closes its connection closes the client's. SIGINT or SIGTERM:
stop accepting, give answers in flight up to 3 s, close everything, exit 0.

Exit status: 0 after a signal; 1 when a listener cannot be opened; 2 usage error.";
