#!/usr/bin/env python3
"""Write the fuzz targets' seed inputs into corpus/fuzz/TARGET/ from the sample frames.

    python3 corpus/fuzz_seeds.py            # write every seed
    python3 corpus/fuzz_seeds.py --check    # exit 1 naming each seed missing or different

The seeds are committed with the rest of the corpus, and CI runs --check: a `cargo fuzz cmin`
that drops a seed, or a sample frame changed without its seeds, is caught there.

Each target reads its input its own way (see crates/fuzz-checks/src/lib.rs), so each gets the sample
frames in its own shape. Seeds are named seed-*; inputs kept by `cargo fuzz cmin` and past
crashes live beside them. Python 3 standard library only.
"""
import struct
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
OUT = CORPUS / "fuzz"


def frames(kind):
    for path in sorted(CORPUS.glob(f"{kind}-*.bin")):
        yield path.stem, path.read_bytes()


def response_version(stem):
    return int(stem.split("-")[1][1:])


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def framed(body):
    return struct.pack(">i", len(body)) + body


def long_strings():
    """Frames at and just over the 32767-byte string limit, which a fuzzer that grows its
    inputs from small seeds takes long to reach: (name, frame, response version or None)."""
    at, over = b"c" * 32767, b"c" * 32768
    # Request v1: a 32767-byte client id.
    v1 = struct.pack(">hhih", 43, 1, 1, len(at)) + at
    v1 += struct.pack(">bi", 0, 1) + struct.pack(">h", 6) + b"orders" + struct.pack(">iii", 1, 0, 1000)
    yield "long-client-id-v1", framed(v1), None
    # Request v2: a 32767-byte topic (compact length 32768), and one byte over.
    for name, topic in (("long-topic-v2", at), ("over-long-topic-v2", over)):
        v2 = struct.pack(">hhih", 43, 2, 2, 0) + b"\x00" + b"\x00" + uvarint(2)
        v2 += uvarint(len(topic) + 1) + topic + uvarint(2) + struct.pack(">i", 7) + b"\x00"
        v2 += struct.pack(">i", 1000) + b"\x00"
        yield name, framed(v2), None
    # Response v0: a 32767-byte error message.
    r0 = struct.pack(">iii", 1, 0, 1) + struct.pack(">h", 6) + b"orders"
    r0 += struct.pack(">iihh", 1, 0, 3, len(at)) + at
    yield "long-message-v0", framed(r0), 0


# Every seed main() makes, by path: written, or checked against the files (--check).
SEEDS = {}


def write(target, name, data):
    SEEDS[OUT / target / f"seed-{name}"] = data


def main():
    requests = list(frames("request"))
    responses = list(frames("response"))
    for stem, data in requests:
        write("parse_request", stem, data)
        write("differential", stem, bytes([0]) + data)
        # Arbitrary-driven targets read any bytes; frames make varied, realistic seeds.
        write("roundtrip_request", stem, data)
        write("split_stream", stem, data)
    write("parse_request", "stream", b"".join(d for _, d in requests))
    for stem, data in responses:
        v = response_version(stem)
        write("parse_response", stem, bytes([v]) + data)
        write("differential", stem, bytes([1 | (v << 1)]) + data)
        write("roundtrip_response", stem, data)
    for v in range(3):
        stream = b"".join(d for s, d in responses if response_version(s) == v)
        write("parse_response", f"stream-v{v}", bytes([v]) + stream)

    # The targets of issue 14 (see crates/fuzz-checks/src/lib.rs for each one's input layout).
    params = bytes(range(1, 64))  # edit, error_response and policy parameters
    for stem, data in requests:
        write("structured", stem, data)
        write("generators", stem, data)
        write("needed", stem, data)
        write("edit", stem, bytes([0]) + data)
        write("edit", stem + "-changed", bytes([0]) + data + params)
        write("error_response", stem, bytes([0]) + data + params)
        write("policy", stem, bytes([0]) + data + params)
        for target in range(4):
            write("reencode", f"{stem}-to-v{target}", bytes([target << 4]) + data)
    for stem, data in responses:
        v = response_version(stem)
        write("needed", stem, data)
        write("edit", stem, bytes([1 | (v << 2)]) + data)
        write("edit", stem + "-changed", bytes([1 | (v << 2)]) + data + params)
        for target in range(4):
            write("reencode", f"{stem}-to-v{target}", bytes([1 | (v << 2) | (target << 4)]) + data)
    for selector in (2, 3):
        # Generated messages: the generator reads any bytes.
        for stem, data in requests[:3]:
            write("edit", f"generated-{selector}-{stem}", bytes([selector]) + data)
        write("error_response", f"generated-{stem}", bytes([2]) + data)
        write("policy", f"generated-{stem}", bytes([2]) + data)
    # scan: frames among other bytes, and the same frames back to back.
    junk = b"\x00\x00\x00\x2b\x00\x2b\x00\x01 other traffic \xff\xff"
    write("scan", "requests", bytes([0]) + junk + junk.join(d for _, d in requests) + junk)
    for v in range(3):
        stream = [d for s, d in responses if response_version(s) == v]
        if stream:
            write("scan", f"responses-v{v}", bytes([1 | (v << 2) | 0x10]) + junk.join(stream))
    # pairing: any bytes are a sequence of operations.
    for stem, data in requests[:4] + responses[:4]:
        write("pairing", stem, data)
    for stem, data, version in long_strings():
        write("needed", stem, data)
        if version is None:
            write("edit", stem, bytes([0]) + data)
            write("error_response", stem, bytes([0]) + data)
            write("scan", stem, bytes([0]) + junk + data)
            for target in range(3):
                write("reencode", f"{stem}-to-v{target}", bytes([target << 4]) + data)
        else:
            write("edit", stem, bytes([1 | (version << 2)]) + data)
            for target in range(3):
                selector = 1 | (version << 2) | (target << 4)
                write("reencode", f"{stem}-to-v{target}", bytes([selector]) + data)
    for path in sorted((CORPUS / "captures").glob("*.pcap*")):
        write("capture", path.name, path.read_bytes())
    # addresses: an API (Metadata, FindCoordinator, DescribeCluster), a version, built
    # (0) or raw (1), then what builds the answer: entries at the route's upstream, at the
    # guard's listener, or elsewhere, sometimes damaged. The first bytes choose; libFuzzer
    # finds the rest.
    for api, versions in ((0, (0, 1, 3, 9, 12, 13)), (1, (0, 3, 4, 6)), (2, (0, 1, 2))):
        for v in versions:
            # Versions are read from -1: byte v + 1 is version v.
            for entries in (b"\x00", b"\x01\x00", b"\x03\x00\x02\x03\x07zz\x00\x00\x00\x05"):
                write("addresses", f"built-{api}-v{v}-{len(entries)}", bytes([api, v + 1, 0]) + entries)
    # Raw answers whose list claims four billion entries: Metadata v12, FindCoordinator v4,
    # DescribeCluster v0 (a flexible header: correlation id and no tags, then the fields
    # before the list).
    huge = b"\xff\xff\xff\xff\x0f"
    write("addresses", "raw-huge-metadata", bytes([0, 13, 1]) + bytes(5) + bytes(4) + huge)
    write("addresses", "raw-huge-coordinators", bytes([1, 5, 1]) + bytes(5) + bytes(4) + huge)
    write("addresses", "raw-huge-brokers", bytes([2, 1, 1]) + bytes(5) + bytes(6) + b"\x00\x01" + bytes(4) + huge)


if __name__ == "__main__":
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        sys.exit(f"usage: {sys.argv[0]} [--check]")
    main()
    stale = []
    for path, data in SEEDS.items():
        if check:
            if not path.is_file():
                stale.append(f"{path.relative_to(CORPUS.parent)}: missing")
            elif path.read_bytes() != data:
                stale.append(f"{path.relative_to(CORPUS.parent)}: differs from what the script writes")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if stale:
        print("\n".join(stale), file=sys.stderr)
        sys.exit(f"{len(stale)} of {len(SEEDS)} fuzz seeds out of date: run python3 corpus/fuzz_seeds.py")
    if check:
        print(f"{len(SEEDS)} fuzz seeds up to date")
