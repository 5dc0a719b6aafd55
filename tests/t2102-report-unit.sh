#!/bin/sh
# t2102-report-unit.sh - unit tests of the report side: symbolization (ELF, FDE, DWARF,
# JIT, kernel) and aggregation (self/total, folded stacks, table names)
. "$(dirname "$0")/lib.sh"

for t in test-symbolize test-calltree; do
	test_expect_success "unit: $t" "
		\"$BUILD/tests/unit/$t\" >out 2>err; rc=\$?; cat out; test \$rc = 0 && ! grep '^not ok' out
	"
done

test_done
