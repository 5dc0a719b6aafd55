#!/bin/bash
# t1000-record-ring.sh - the ring-buffer drain on a ring in memory (unit test, TAP).
. "$(dirname "$0")/lib.sh"
trap - EXIT
rm -rf "$TRASH"
exec "$BUILD/tests/unit/test-ring"
