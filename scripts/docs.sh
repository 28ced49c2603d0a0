#!/usr/bin/env bash
# `make docs`: builds the book (docs/ -> docs/book/) with the pinned mdbook, treating any warning
# as an error (mdbook itself exits 0 on warnings such as an unresolved include), then checks
# every internal link and anchor of the book and of the READMEs (scripts/check-links.py).
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK=$(bash scripts/install-mdbook.sh)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$MDBOOK" build docs 2>&1 | tee "$log"; then
  echo "docs: mdbook build failed" >&2
  exit 1
fi
if grep -E '\b(WARN|ERROR)\b' "$log" >/dev/null; then
  echo "docs: mdbook printed warnings (treated as errors): fix them above" >&2
  exit 1
fi
python3 scripts/check-links.py docs/book
echo "docs: docs/book/index.html"
