#!/bin/sh
# t2102-report-unit.sh - unit tests of the report side: symbolization (ELF, FDE, DWARF,
# JIT, kernel) and aggregation (self/total, folded stacks, table names)
. "$(dirname "$0")/lib.sh"

test_unit test-symbolize
test_unit test-calltree
test_unit test-ranks	# steps of a distributed job
test_unit test-process	# mappings over time, and when a lookup holds (machine_view)

test_done
