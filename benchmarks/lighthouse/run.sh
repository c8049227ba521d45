#!/bin/sh
# Lighthouse's mobile audit of the introduction and chapters 7 and 8, the built book served
# gzipped (serve_gzipped.py), with Debian's Chromium. Usage, from the repository's root:
#   benchmarks/lighthouse/run.sh _build/html OUT_PREFIX [RUNS]
# Lighthouse comes from npm (npx lighthouse@12.2.3); CHROME_PATH names the browser, so that it
# never downloads one; PORT the local port it serves on (8701). Writes
# OUT_PREFIX-<page>-<run>.json.
set -eu
html=$1; out=$2; runs=${3:-3}; port=${PORT:-8701}
python3 "$(dirname "$0")/serve_gzipped.py" "$html" "$port" &
server=$!
trap 'kill $server' EXIT
sleep 1
for page in book/intro book/07_rope_alibi book/08_stretching_rope; do
  for run in $(seq "$runs"); do
    CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium} npx --yes lighthouse@12.2.3 \
      "http://127.0.0.1:$port/$page.html" --quiet --form-factor=mobile \
      --only-categories=performance,accessibility,best-practices,seo \
      --chrome-flags="--headless=new --no-sandbox" \
      --output=json --output-path="$out-$(basename $page)-$run.json"
  done
done
