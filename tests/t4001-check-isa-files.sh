#!/bin/sh
# t4001: check-isa FILE: instruction classes per function, stripped files, the cache,
# errors for missing / non-ELF / corrupt files
. "$(dirname "$0")/lib.sh"

[ "$(uname -m)" = x86_64 ] || test_skip_all "check-isa knows only x86-64"
K="$BUILD/tests/workloads/isa-kernels"
export XDG_CACHE_HOME="$TRASH/cache"

# objdump's count of instructions of function $2 in $1 that name a $3 register
objdump_count() {
	objdump -d --no-show-raw-insn -M intel "$1" |
	awk -v fn="<$2>:" -v re="$3" '
		/^[0-9a-f]+ </ { inside = ($2 == fn); next }
		inside && $0 ~ re { n++ }
		END { print n + 0 }'
}

test_expect_success 'each kernel comes out in the class its compiler flags made' '
	"$DLPROF" check-isa --functions --top 0 "$K" >out &&
	cat out &&
	test_grep -q "AVX-512 (zmm) *isa_zmm_axpy$" out &&
	test_grep -q "AVX/AVX2 *isa_avx2_axpy$" out &&
	test_grep -q "SSE *isa_sse2_axpy$" out &&
	test_grep -q " scalar *isa_scalar_hash$" out
'

test_expect_success 'per-function counts agree with objdump' '
	"$DLPROF" check-isa --functions --top 0 "$K" >out &&
	zmm=$(objdump_count "$K" isa_zmm_axpy "zmm[0-9]") &&
	ymm=$(objdump_count "$K" isa_avx2_axpy "ymm[0-9]") &&
	vec_sse=$(objdump_count "$K" isa_sse2_axpy "(xmm[0-9].*ps|ps .*xmm[0-9]|movaps|movups|shufps)") &&
	echo "objdump: zmm=$zmm ymm(avx2)=$ymm" &&
	test "$zmm" -gt 0 && test "$ymm" -gt 0 &&
	set -- $(grep " isa_zmm_axpy$" out) && test "$2" = "$zmm" &&
	set -- $(grep " isa_avx2_axpy$" out) && test "$2" = 0 && test "$3" = 0 && test "$4" -ge "$ymm" &&
	set -- $(grep " isa_sse2_axpy$" out) && test "$4" = 0 && test "$5" -gt 0 &&
	set -- $(grep " isa_scalar_hash$" out) && test "$1" = 0
'

test_expect_success 'the scalar kernel really has no vector registers (objdump)' '
	test "$(objdump_count "$K" isa_scalar_hash "mm[0-9]")" = 0
'

test_expect_success 'a stripped copy gives the same classes from .eh_frame bounds' '
	strip -o stripped "$K" &&
	"$DLPROF" check-isa --no-cache --functions --top 0 --format json "$K" >a.json &&
	"$DLPROF" check-isa --no-cache --functions --top 0 --format json stripped >b.json &&
	json_check a=a.json b=b.json <<-\PY
	bs = {f.start: f for f in b.files[0].functions}
	named = [f for f in a.files[0].functions if f.name.startswith("isa_")]
	for f in named:
	    g = bs[f.start]
	    assert g.bounds == "fde" and g.name.startswith("func@0x"), g
	    assert g.tier == f.tier, (f, g)
	    assert g.counts == f.counts, (f, g)
	len(named) == 4
	PY
'

test_expect_success 'the cache: second run reads the counts, same result' '
	rm -rf "$XDG_CACHE_HOME" &&
	"$DLPROF" check-isa --functions --top 0 "$K" >cold &&
	test_grep -q "scanned in" cold &&
	id=$(sed -n "s/^  build-id \([0-9a-f]*\),.*/\1/p" cold) && test -n "$id" &&
	test -s "$XDG_CACHE_HOME/dlprof/isa/$id" &&
	"$DLPROF" check-isa --functions --top 0 "$K" >warm &&
	test_grep -q "counts from the cache" warm &&
	sed 1,2d cold >c && sed 1,2d warm >w && test_cmp c w
'

test_expect_success 'a damaged cache entry is ignored and rewritten' '
	id=$(ls "$XDG_CACHE_HOME/dlprof/isa" | head -1) &&
	printf garbage >"$XDG_CACHE_HOME/dlprof/isa/$id" &&
	"$DLPROF" check-isa "$K" >out &&
	test_grep -q "scanned in" out &&
	"$DLPROF" check-isa "$K" >out2 && test_grep -q "counts from the cache" out2
'

test_expect_success 'exit status: 0 for a file with AVX-512 code, 1 without' '
	"$DLPROF" check-isa "$K" >/dev/null && 
	"$DLPROF" check-isa /bin/true >/dev/null; test $? = 1
'

test_expect_success 'missing file: one-line error, exit 2' '
	"$DLPROF" check-isa nosuchfile >out 2>err; test $? = 2 &&
	test_grep -q "unable to open .nosuchfile.: No such file" err && test $(wc -l <err) = 1
'

test_expect_success 'not an ELF file: one-line error, exit 2' '
	echo hello >text &&
	"$DLPROF" check-isa text 2>err; test $? = 2 &&
	test_grep -q "is not an ELF file" err && test $(wc -l <err) = 1
'

test_expect_success 'truncated ELF: one-line error, exit 2, no crash' '
	size=$(stat -c %s "$K") &&
	for n in 100 4000 $((size / 2)) $((size - 100)); do
		head -c $n "$K" >trunc &&
		"$DLPROF" check-isa --no-cache trunc >out 2>err; rc=$? &&
		echo "$n: rc=$rc $(cat err)" &&
		test $rc = 2 && test_grep -q "corrupt ELF file .trunc." err && test $(wc -l <err) = 1 || exit 1
	done
'

test_expect_success 'bytes flipped anywhere in the ELF: exit 0-2, never a crash' '
	i=0 &&
	while [ $i -lt 40 ]; do
		i=$((i + 1)) &&
		/usr/bin/python3 -c "
import random
d = bytearray(open(\"$K\", \"rb\").read()); r = random.Random($i)
for _ in range(20):
    p = r.randrange(len(d)) if r.random() < 0.5 else r.randrange(64, 4096)
    d[p] = r.randrange(256)
open(\"flip\", \"wb\").write(d)" &&
		{ "$DLPROF" check-isa --no-cache --functions flip >/dev/null 2>err; rc=$?; } &&
		{ test $rc -le 2 || { echo "seed $i: exit $rc"; exit 1; }; }
	done
'

test_expect_success 'one bad file among good ones: the good ones are reported, exit 2' '
	"$DLPROF" check-isa "$K" nosuchfile >out 2>err; test $? = 2 &&
	test_grep -q "isa-kernels$" out
'

test_expect_success 'libtorch_cpu scan: cold and warm times' '
	lib=/usr/lib/x86_64-linux-gnu/libtorch_cpu.so
	test -e $lib || { echo "no libtorch_cpu: skipped"; exit 0; }
	s=$(date +%s%N) && "$DLPROF" check-isa --refresh $lib >cold && m=$(date +%s%N) &&
	"$DLPROF" check-isa $lib >warm && e=$(date +%s%N) &&
	echo "cold $(( (m - s) / 1000000 )) ms, warm $(( (e - m) / 1000000 )) ms" &&
	test_grep -q "counts from the cache" warm &&
	test $(( (e - m) / 1000000 )) -lt 2000 &&
	test $(( (m - s) / 1000000 )) -lt 60000
'
test_done
