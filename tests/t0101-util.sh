#!/bin/sh
# t0101-util.sh - unit tests of lib/util: JSON strings are valid UTF-8 whatever bytes a name
# holds; hash_bytes spreads the keys of the tables of stacks, chains and names; the JSON
# writer's commas, layouts and nesting; ELF files opened once and shared.
. "$(dirname "$0")/lib.sh"

test_unit test-util
test_unit test-json
test_unit test-elffile

test_done
