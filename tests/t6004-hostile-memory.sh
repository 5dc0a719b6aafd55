#!/bin/bash
# t6004-hostile-memory.sh - a hostile file must not make a reader allocate without limit:
# a chunk claiming 4 GB, a chunk that inflates 1000x (within the 64 MiB a chunk may hold),
# one past that cap, an event description claiming 2^32 ids, a perf.data claiming 2^32
# attrs or an id section past its end, a perf sample claiming a 4 GB stack copy.  Each is
# read with the address space capped at 1 GiB: a clean exit (1 or 2, one line when 2),
# no crash, peak memory well under the cap.
. "$(dirname "$0")/lib.sh"

cat >"$TRASH/mk.py" <<'EOF'
import struct, sys, zlib

def chunk(raw, seq, flags=1 | 2, claim_raw=None, nr=None):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    comp = c.compress(raw) + c.flush()
    h = struct.pack("<IIIIIII", 0x4b434c44, flags, len(comp),
                    len(raw) if claim_raw is None else claim_raw,
                    records(raw) if nr is None else nr, zlib.crc32(comp), seq)
    return h + struct.pack("<I", zlib.crc32(h)) + comp

def records(raw):
    n, off = 0, 0
    while off + 8 <= len(raw):
        t, l = struct.unpack_from("<II", raw, off)
        off += 8 + ((l + 7) & ~7)
        n += 1
    return n

def rec(t, payload):
    return struct.pack("<II", t, len(payload)) + payload + b"\0" * (-len(payload) % 8)

HDR = b"DLPROF\r\n" + struct.pack("<II", 3, 0)
which = sys.argv[1]
out = open(sys.argv[2], "wb")
if which == "claim4g":
    out.write(HDR + chunk(rec(3, b"cmdline\0x\0"), 0, claim_raw=0xfffffff0))
elif which == "bomb":	# 64 KiB of deflate that inflates to 60 MiB: one META record
    out.write(HDR + chunk(rec(3, b"cmdline\0" + b"a" * (60 << 20) + b"\0"), 0))
elif which == "overcap":	# claims one byte past the 64 MiB a chunk may hold
    out.write(HDR + chunk(rec(3, b"cmdline\0x\0"), 0, claim_raw=(64 << 20) + 1))
elif which == "ids":	# struct dlp_attr_rec: attr_size 128, nr_ids 2^32-1, name
    a = struct.pack("<II", 128, 0xffffffff) + b"cpu-clock".ljust(64, b"\0") + b"\0" * 128
    out.write(HDR + chunk(rec(2, a), 0))
elif which in ("pd-attrs", "pd-ids", "pd-stack"):
    attr = bytearray(128)
    struct.pack_into("<IIQQQ", attr, 0, 1, 128, 0, 1000, 0x1 | 0x2 | 0x4 | 0x1000 | 0x2000)
    struct.pack_into("<Q", attr, 80, 0xff0fff)  # sample_regs_user
    struct.pack_into("<I", attr, 88, 0xfffffff8)  # sample_stack_user: 4 GB
    ids_off, data_off = 104 + 144, 104 + 144 + 8
    data = b""
    if which == "pd-stack":
        # a sample: ip tid time, regs (abi 2 + 20 regs), stack: size 4 GB claimed
        s = struct.pack("<QIIQ", 0x401000, 1, 1, 5) + struct.pack("<Q", 2) + b"\0" * 8 * 20
        s += struct.pack("<Q", 0xffffffff) + b"\0" * 64 + struct.pack("<Q", 0xffffffff)
        data = struct.pack("<IHH", 9, 2, 8 + len(s)) + s
    attrs_size = 144 if which != "pd-attrs" else 144 * (1 << 32)
    ids = struct.pack("<QQ", ids_off, 8 if which != "pd-ids" else 1 << 40)
    hdr = b"PERFILE2" + struct.pack("<QQQQQQ", 104, 144, 104, attrs_size, data_off, len(data))
    hdr += b"\0" * (104 - len(hdr))
    out.write(hdr + bytes(attr) + ids + struct.pack("<Q", 1) + data)
EOF

# read CMD FILE: exit status, stderr lines and peak RSS (KB) of dlprof CMD -i FILE, capped
read_capped() {
	( ulimit -v 1048576 && /usr/bin/time -f "%M" -o rss "$DLPROF" $1 -i "$2" >out 2>err ); echo $? >rc
	cat err
	echo "rc=$(cat rc) rss=$(cat rss 2>/dev/null) KB"
}

for f in claim4g bomb overcap ids pd-attrs pd-ids pd-stack; do
	test_expect_success "hostile: $f" '
		python3 mk.py '$f' '$f'.data &&
		for c in report fold; do
			read_capped $c '$f'.data &&
			rc=$(cat rc) &&
			test $rc = 0 -o $rc = 1 -o $rc = 2 || return 1
			test $rc != 2 || test "$(wc -l <err)" = 1 || return 1
			# the inflated 60 MiB META is legal: read once, it must not be held twice over
			test "$(tail -n 1 rss)" -lt 400000 || return 1
		done
	'
done

test_expect_success 'the caps are said: too large, malformed, outside the file' '
	"$DLPROF" report -i claim4g.data 2>&1 | test_grep "chunk too large" &&
	"$DLPROF" report -i overcap.data 2>&1 | test_grep "chunk too large" &&
	"$DLPROF" report -i ids.data 2>&1 | test_grep "malformed event description" &&
	"$DLPROF" report -i pd-attrs.data 2>&1 | test_grep "no event attributes" &&
	"$DLPROF" report -i pd-ids.data 2>&1 | test_grep "outside the file"
'

test_done
