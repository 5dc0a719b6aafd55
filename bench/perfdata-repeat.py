#!/usr/bin/python3
"""perfdata-repeat.py - a long perf.data made from a short one, for bench/scale.sh.

    bench/perfdata-repeat.py IN.perf.data TIMES OUT.perf.data

The data section is written TIMES over: the first round as it was, each later round its
samples (and perf's FINISHED_ROUND markers, so perf report keeps flushing its queue)
with their time moved one round's span later; the side-band (mmap, comm, fork, exit)
comes once.  The header's data size and the feature sections' offsets follow the new
size; everything else is copied.  Layout facts from perf's perf.data-file-format.txt.
"""
import struct
import sys

SAMPLE, FINISHED_ROUND = 9, 68
ST_IDENTIFIER, ST_IP, ST_TID, ST_TIME = 1 << 16, 1 << 0, 1 << 1, 1 << 2


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: perfdata-repeat.py IN TIMES OUT")
    src, times, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    b = open(src, "rb").read()
    if b[:8] != b"PERFILE2":
        sys.exit(src + ": not a perf.data file")
    hsize, attr_size, a_off, a_size, d_off, d_size = struct.unpack_from("<6Q", b, 8)
    st = struct.unpack_from("<Q", b, a_off + 24)[0]	# the first attr's sample_type
    if not st & ST_TIME:
        sys.exit(src + ": samples carry no time")
    toff = 8 + 8 * (bool(st & ST_IDENTIFIER) + bool(st & ST_IP) + bool(st & ST_TID))
    recs, first, last, off = [], None, 0, d_off
    while off + 8 <= d_off + d_size:
        typ, misc, size = struct.unpack_from("<IHH", b, off)
        if size < 8:
            break
        rec = b[off:off + size]
        if typ == SAMPLE:
            t = struct.unpack_from("<Q", rec, toff)[0]
            first = t if first is None else min(first, t)
            last = max(last, t)
        recs.append((typ, rec))
        off += size
    span = last - first + 1000000
    out = bytearray()
    for k in range(times):
        for typ, rec in recs:
            if k and typ not in (SAMPLE, FINISHED_ROUND):
                continue
            if k and typ == SAMPLE:
                rec = bytearray(rec)
                t = struct.unpack_from("<Q", rec, toff)[0]
                struct.pack_into("<Q", rec, toff, t + k * span)
            out += rec
    grow = len(out) - d_size
    feat_bits = b[72:104]
    nfeat = sum(bin(x).count("1") for x in feat_bits)
    idx = d_off + d_size
    index = bytearray(b[idx:idx + 16 * nfeat])
    for i in range(nfeat):
        o, s = struct.unpack_from("<QQ", index, 16 * i)
        struct.pack_into("<QQ", index, 16 * i, o + grow, s)
    hdr = bytearray(b[:hsize])
    struct.pack_into("<Q", hdr, 48, len(out))
    with open(dst, "wb") as f:
        f.write(hdr)
        f.write(b[hsize:d_off])
        f.write(out)
        f.write(index)
        f.write(b[idx + 16 * nfeat:])
    print("perfdata-repeat: %d records x %d -> %s" % (len(recs), times, dst), file=sys.stderr)


main()
