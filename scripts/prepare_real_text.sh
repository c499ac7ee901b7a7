#!/usr/bin/env bash
# Builds the real-text demo dataset: the King James Bible (public domain),
# as Debian's bible-kjv-text ships it, tokenized to bytes by cmpi-data.
#
#   scripts/prepare_real_text.sh [OUT_DIR [CHAPTERS]]
#
# OUT_DIR (default .cache/real_text, git-ignored) gets kjv.txt (one chapter per paragraph:
# "Genesis 1", then its verses) and kjv_bytes.bin/.idx (one document per
# chapter, byte tokens 0-255, end of document 256: model.vocab_size >= 257).
# CHAPTERS (default: all 1189) keeps only the first N chapters, for tests.
# Idempotent: nothing is rebuilt when the dataset is newer than its inputs.
#
# The package holds the text only in the compressed binary format of its
# reader (/usr/lib/bible.data), so the text is produced with that reader,
# `bible` from package bible-kjv. CMPI_DATA overrides the cmpi-data binary.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/.cache/real_text}"
CHAPTERS="${2:-all}"
CMPI_DATA="${CMPI_DATA:-$ROOT/build/data/cmpi-data}"

command -v bible >/dev/null || {
  echo "prepare_real_text: no 'bible' program: install bible-kjv and bible-kjv-text" \
    "(scripts/setup.sh does)" >&2
  exit 1
}
[ -x "$CMPI_DATA" ] || { echo "prepare_real_text: no $CMPI_DATA: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$OUT"
text="$OUT/kjv.txt"
prefix="$OUT/kjv_bytes"
stamp="$OUT/.chapters"

if [ ! -s "$text" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$CHAPTERS" ]; then
  # `bible -l0` prints "Genesis 1", a blank line, then "  1 In the beginning ..."
  # per verse, a blank line between chapters. Keep the heading with its
  # verses so that a paragraph is one chapter. (awk reads to the end even
  # past CHAPTERS: quitting early would kill `bible` with SIGPIPE.)
  bible -l0 "Gen1:1-Rev22:21" </dev/null |
    awk -v limit="$CHAPTERS" '
      /^[^ ].* [0-9]+$/ { if (limit != "all" && ++n > limit + 0) done = 1;
                          if (done) next; if (n > 1 || limit == "all" && started) print "";
                          print; started = 1; next }
      done || /^$/ { next }
      { sub(/^ +/, ""); print }' >"$text.tmp"
  [ -s "$text.tmp" ] || { echo "prepare_real_text: 'bible' printed nothing" >&2; exit 1; }
  mv "$text.tmp" "$text"
  echo "$CHAPTERS" >"$stamp"
fi

if [ ! -s "$prefix.idx" ] || [ "$text" -nt "$prefix.idx" ] || [ "$CMPI_DATA" -nt "$prefix.idx" ]; then
  "$CMPI_DATA" --input "$text" --output-prefix "$prefix" --tokenizer bytes \
    --format text --text-documents paragraphs --verify --quiet
fi
echo "prepare_real_text: $prefix.bin/.idx ($(wc -c <"$text") bytes of text)"
