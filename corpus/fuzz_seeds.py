#!/usr/bin/env python3
"""Write the fuzz targets' seed inputs into corpus/fuzz/TARGET/ from the sample frames.

    python3 corpus/fuzz_seeds.py

Each target reads its input its own way (see fuzz/checks.rs), so each gets the sample
frames in its own shape. Seeds are named seed-*; inputs kept by `cargo fuzz cmin` and past
crashes live beside them. Python 3 standard library only.
"""
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
OUT = CORPUS / "fuzz"


def frames(kind):
    for path in sorted(CORPUS.glob(f"{kind}-*.bin")):
        yield path.stem, path.read_bytes()


def response_version(stem):
    return int(stem.split("-")[1][1:])


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


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


if __name__ == "__main__":
    main()
