#!/usr/bin/env sh
# Every target scenario of benchmarks/README.md, each in a fresh process, then the
# results table (Markdown) on stdout. About 4 minutes on 2 cores.
#
#   benchmarks/run_all.sh                      # print the table
#   benchmarks/run_all.sh --json results.json  # also keep every figure
#
# Exits 1 if any target was missed.
set -eu
cd "$(dirname "$0")/.."
VERA="${VERA:-.venv/bin/vera}"
exec "$VERA" bench --suite "$@"
