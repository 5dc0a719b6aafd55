#!/usr/bin/python3
"""ksyms-cut.py FILE - cut a boot's kept kernel symbols (record's cache of the core
kernel's text, lib/resolve/ksyms.c) to the text's first 16 bytes and the symbols there:
every kernel address a sample hits then lies past what the file keeps, and whoever reads
it must read /proc/kallsyms whole for it.

The file: a 112-byte header (magic 8, format 4, count 4, the text's start 8 at 16 and
end 8 at 24, the names' length 8, the release 72), 16 bytes a symbol (start 8, size 4,
its name's offset 4), then the names.
"""
import struct
import sys


def main():
    path = sys.argv[1]
    b = open(path, "rb").read()
    nr, lo = struct.unpack_from("<IQ", b, 12)
    recs = [b[112 + 16 * i:128 + 16 * i] for i in range(nr)]
    keep = [r for r in recs if struct.unpack_from("<Q", r)[0] < lo + 16]
    head = bytearray(b[:112])
    struct.pack_into("<I", head, 12, len(keep))
    struct.pack_into("<Q", head, 24, lo + 16)
    with open(path, "wb") as f:
        f.write(head + b"".join(keep) + b[112 + 16 * nr:])
    print("%s: %d of %d symbols kept, the text cut to 16 bytes" % (path, len(keep), nr))


if __name__ == "__main__":
    main()
