#!/usr/bin/env bash
# The viewer's numbers (benches/RESULTS.md, the interactive map): file size and write time of `sgtsne view` at 1M and
# 10M points (ten Gaussian blobs, one 10-class label), first full paint in headless Chromium
# (software WebGL) of the 1M file and of the 10M map served by `--serve`; for the 10M file
# also a frame while the view moves and the full redraw once it rests.
# Needs what scripts/test/browser.sh sets up (chromium, the browser venv) and a release build.
# `regl` (not part of all) times the same 1M and 10M files drawn by regl-scatterplot instead
# (scripts/bench/view_regl/, needs node and npm).
#   scripts/bench/view.sh [ROW]     ROW: size | write | paint1m | serve10m | file10m | regl (default: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${SGTSNE_BIN:-target/release/sgtsne}
py=${SGTSNE_BROWSER_VENV:-$HOME/.cache/sgtsne/browser-venv}/bin/python
dir=.bench/view
mkdir -p "$dir"
row=${1:-all}

for n in 1000000 10000000; do
  [ -f "$dir/y$n.npy" ] || "$py" scripts/bench/view_blobs.py "$n" "$dir/y$n.npy" "$dir/l$n.npy"
done

if [ "$row" = all ] || [ "$row" = size ] || [ "$row" = write ]; then
  for n in 1000000 10000000; do
    for run in 1 2 3; do
      /usr/bin/time -f "view $n points: %e s wall, %M KiB peak" "$bin" view "$dir/y$n.npy" --labels "$dir/l$n.npy" -o "$dir/m$n.html" --quiet
    done
    echo "view $n points: $(stat -c %s "$dir/m$n.html") bytes, $(python3 -c "print(round($(stat -c %s "$dir/m$n.html") / $n, 2))") bytes per point"
  done
fi
if [ "$row" = all ] || [ "$row" = paint1m ]; then
  [ -f "$dir/m1000000.html" ] || "$bin" view "$dir/y1000000.npy" --labels "$dir/l1000000.npy" -o "$dir/m1000000.html" --quiet
  echo "1M file: $("$py" scripts/bench/view_paint.py "$dir/m1000000.html" --runs 5)"
fi
if [ "$row" = all ] || [ "$row" = file10m ]; then
  [ -f "$dir/m10000000.html" ] || "$bin" view "$dir/y10000000.npy" --labels "$dir/l10000000.npy" -o "$dir/m10000000.html" --quiet
  echo "10M file: $("$py" scripts/bench/view_paint.py "$dir/m10000000.html" --runs 3 --frames)"
fi
if [ "$row" = all ] || [ "$row" = serve10m ]; then
  rm -f "$dir/url"
  "$bin" view "$dir/y10000000.npy" --labels "$dir/l10000000.npy" --serve --port 0 --quiet > "$dir/url" &
  server=$!
  trap 'kill $server 2>/dev/null' EXIT
  for _ in $(seq 100); do [ -s "$dir/url" ] && break; sleep 0.1; done
  echo "10M served: $("$py" scripts/bench/view_paint.py "$(head -1 "$dir/url")" --runs 3)"
fi
if [ "$row" = regl ]; then
  for n in 1000000 10000000; do
    [ -f "$dir/m$n.html" ] || "$bin" view "$dir/y$n.npy" --labels "$dir/l$n.npy" -o "$dir/m$n.html" --quiet
    scripts/bench/view_regl/build.sh "$dir/m$n.html" >/dev/null
    echo "regl-scatterplot $n: $("$py" scripts/bench/view_paint.py "$dir/m$n-regl.html" --runs "$([ "$n" = 1000000 ] && echo 5 || echo 1)")"
  done
fi
