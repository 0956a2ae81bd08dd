#!/usr/bin/env bash
# Bundles entry.js with regl-scatterplot (versions pinned in package.json / package-lock.json)
# into one script, and writes MAP-regl.html: the map of `sgtsne view` MAP.html drawn by it.
#   scripts/bench/view_regl/build.sh MAP.html
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
map=$1
(cd "$here" && npm ci --no-audit --no-fund --silent && npx esbuild entry.js --bundle --minify --format=iife --outfile=bundle.js --log-level=warning)
python3 - "$map" "$here/bundle.js" <<'PY'
import re, sys
page, bundle = open(sys.argv[1]).read(), open(sys.argv[2]).read()
data = "".join(re.findall(r'<script type="application/(?:json|octet-stream)" id="sgtsne-[^"]*">.*?</script>\n', page, re.S))
out = sys.argv[1].replace(".html", "-regl.html")
open(out, "w").write(
    '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>'
    '<body style="margin:0"><canvas id="map" style="width:760px;height:700px;display:block"></canvas>\n'
    + data + "<script>" + bundle.replace("</script", "<\\/script") + "</script></body></html>")
print(out)
PY
