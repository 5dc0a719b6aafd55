#!/bin/bash
# t1000-record-ring.sh - the ring-buffer drain on a ring in memory (unit test, TAP).
. "$(dirname "$0")/lib.sh"

test_unit test-ring

test_done
