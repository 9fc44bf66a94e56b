#!/usr/bin/env python3
"""The data each process of a binary keeps a private copy of: the sizes
of its `.data.rel.ro` (pointers the loader rewrites at start in every
process of a position-independent executable) and `.data` sections, as
`readelf -SW` gives them. Not a `bench/run` row: what bench/results.md
("Session 53") quotes for `owt` and the session host binary `owt-host`.

    python3 bench/relocated_data.py [BINARY...]   (default: target/release/owt and owt-host)
"""

import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SECTIONS = (".data.rel.ro", ".data")


def sizes(binary):
    """{section: bytes} of `binary`'s sections in SECTIONS."""
    out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        # [Nr] Name Type Address Off Size ...
        if len(fields) > 5 and fields[1] in SECTIONS:
            found[fields[1]] = int(fields[5], 16)
    return found


def main():
    binaries = sys.argv[1:] or [common.owt_binary(), common.owt_binary().with_name("owt-host")]
    for binary in binaries:
        got = sizes(binary)
        print(f"{binary}: " + ", ".join(f"{s} {got.get(s, 0) / 1024:.0f} KiB" for s in SECTIONS))


if __name__ == "__main__":
    main()
