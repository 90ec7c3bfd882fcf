#!/usr/bin/env python3
"""Build the sample frames in corpus/ from their annotated hex sources in corpus/src/.

Each corpus/src/NAME.hex holds one frame, one field per line:

    002b        # request_api_key int16 = 43

Everything after '#' is a comment; blank lines are ignored; whitespace inside the hex is
ignored. The first four bytes must be the int32 big-endian size of the rest of the frame.

    python3 corpus/build.py          write corpus/NAME.bin for every corpus/src/NAME.hex
    python3 corpus/build.py --check  verify every corpus/NAME.bin matches its source
                                     (and that no .bin lacks a source); exit 1 otherwise

Python 3 standard library only.
"""
import string
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
SOURCES = CORPUS / "src"
HEXDIGITS = set(string.hexdigits)


class SourceError(Exception):
    pass


def parse(path):
    """Return the bytes of one .hex source, or raise SourceError."""
    out = bytearray()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = "".join(line.split("#", 1)[0].split())
        if not text:
            continue
        bad = [c for c in text if c not in HEXDIGITS]
        if bad:
            raise SourceError(f"{path.name}:{lineno}: not hex: {bad[0]!r}")
        if len(text) % 2:
            raise SourceError(f"{path.name}:{lineno}: odd number of hex digits")
        out += bytes.fromhex(text)
    if len(out) < 4:
        raise SourceError(f"{path.name}: shorter than the 4-byte size prefix")
    size = int.from_bytes(out[:4], "big", signed=True)
    if size != len(out) - 4:
        raise SourceError(
            f"{path.name}: size prefix says {size} (0x{size & 0xffffffff:08x}) but "
            f"{len(out) - 4} (0x{len(out) - 4:08x}) bytes follow"
        )
    return bytes(out)


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        print(__doc__, file=sys.stderr)
        return 2
    sources = sorted(SOURCES.glob("*.hex"))
    if not sources:
        print(f"no sources in {SOURCES}", file=sys.stderr)
        return 1
    failed = False
    for src in sources:
        target = CORPUS / (src.stem + ".bin")
        try:
            data = parse(src)
        except SourceError as e:
            print(f"error: {e}", file=sys.stderr)
            failed = True
            continue
        if check:
            if not target.exists():
                print(f"MISSING  {target.name}", file=sys.stderr)
                failed = True
            elif target.read_bytes() != data:
                print(f"MISMATCH {target.name} differs from src/{src.name}", file=sys.stderr)
                failed = True
            else:
                print(f"ok       {target.name} ({len(data)} bytes)")
        else:
            target.write_bytes(data)
            print(f"wrote    {target.name} ({len(data)} bytes)")
    if check:
        names = {s.stem for s in sources}
        for stray in sorted(CORPUS.glob("*.bin")):
            if stray.stem not in names:
                print(f"ORPHAN   {stray.name} has no src/{stray.stem}.hex", file=sys.stderr)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
