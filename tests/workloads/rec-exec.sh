#!/bin/sh
# rec-exec.sh - record test workload: a shell that execs rec-hot (comm changes at exec).
exec "$(dirname "$0")/rec-hot" "${1:-0.5}"
