#!/bin/sh
# Lighthouse's mobile audit of every page of the built book, served
# gzipped (serve_gzipped.py), with Debian's Chromium. Usage, from the repository's root:
#   benchmarks/lighthouse/run.sh _build/html OUT_PREFIX [RUNS]
# Lighthouse comes from npm (npx lighthouse@12.2.3), or is the command LIGHTHOUSE names (one
# installed in a folder outside the repository: LIGHTHOUSE=/tmp/lh/node_modules/.bin/lighthouse);
# CHROME_PATH names the browser, so that it never downloads one; PORT the local port it serves on
# (8701); PAGES the pages, without .html (every page of the book: the chapters, the reference
# pages, the API pages, the index pages and the search page); CHROME_EXTRA_FLAGS, flags added to
# the browser's own (results.md, "The first paint held back by the headless browser", names the
# one its last rounds add). Runs are taken round-robin (run 1 of every page, then run 2, ...),
# so that a change in the machine's load falls on every page alike. Writes
# OUT_PREFIX-<page>-<run>.json; a run that fails is reported and the others still run.
set -eu
html=$1; out=$2; runs=${3:-3}; port=${PORT:-8701}
python3 "$(dirname "$0")/serve_gzipped.py" "$html" "$port" &
server=$!
trap 'kill $server' EXIT
sleep 1
pages=${PAGES:-"$(cd "$html" && ls book/*.html book/api/*.html genindex.html py-modindex.html \
  search.html | sed 's/\.html$//')"}
lighthouse=${LIGHTHOUSE:-"npx --yes lighthouse@12.2.3"}
failed=0
for run in $(seq "$runs"); do
  for page in $pages; do
    CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium} $lighthouse \
      "http://127.0.0.1:$port/$page.html" --quiet --form-factor=mobile \
      --only-categories=performance,accessibility,best-practices,seo \
      --chrome-flags="--headless=new --no-sandbox ${CHROME_EXTRA_FLAGS:-}" \
      --output=json --output-path="$out-$(basename $page)-$run.json" \
      || { echo "run.sh: Lighthouse failed on $page (run $run)" >&2; failed=$((failed + 1)); }
  done
done
[ "$failed" -eq 0 ] || { echo "run.sh: $failed runs failed (their messages are above)" >&2; exit 1; }
