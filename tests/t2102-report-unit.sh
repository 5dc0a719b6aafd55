#!/bin/sh
# unit tests of the report side: symbolization (ELF, FDE, DWARF, JIT, kernel), aggregation,
# the JSON strings' UTF-8 and hash_bytes, the compact memory records (lib/file/memrec.c) and the
# packed Python records (lib/file/pyrec.c)
. "$(dirname "$0")/lib.sh"

for t in test-symbolize test-calltree test-util test-memrec test-pyrec; do
	test_expect_success "unit: $t" "
		\"$BUILD/tests/unit/$t\" >out 2>err; rc=\$?; cat out; test \$rc = 0 && ! grep '^not ok' out
	"
done

test_done
