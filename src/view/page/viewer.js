// The page: view state (pan, zoom, 3-D rotation), mouse handling, the panel (colour by,
// legend, search, colour bar, lasso, export) and `window.sgtsneView`, the hook through
// which tests find points on screen.

const $ = (id) => document.getElementById(id);

const state = {
  n: MANIFEST.n,
  dims: MANIFEST.dims,
  q: null, comps: 2,
  // CSS pixels per map unit (the map's longest side is one unit), and the map point at
  // the canvas centre.
  scale: 1, cx: 0, cy: 0,
  yaw: 0.6, pitch: 0.4, axes: MANIFEST.dims === 3 ? "rotate" : "xy",
  column: null,
  hidden: null, // per category of the column shown: true when toggled off
  search: "",
  selection: new Uint32Array(0),
  lasso: false,
  style: { size: defaultSize(MANIFEST.n), opacity: 1, density: false },
  frames: 0,
};

/** Points of 4 px up to 10k points, 3 px to 100k, 2 px to 1M, 1 px beyond: each size
 * keeps the clusters' shapes legible without merging them. */
function defaultSize(n) {
  return n <= 10000 ? 4 : n <= 100000 ? 3 : n <= 1000000 ? 2 : 1;
}

/** Map units per step, per axis (the longest side one unit), and the offset centring it. */
const UNIT = (() => {
  const spans = MANIFEST.lo.map((lo, k) => MANIFEST.hi[k] - lo);
  if (MANIFEST.dims === 1) spans.push(spans[0] / 10);
  const longest = Math.max(...spans) || 1;
  const step = spans.map((s) => s / longest / 65535);
  const off = spans.map((s) => -0.5 * s / longest);
  while (step.length < 3) { step.push(0); off.push(0); }
  return { step, off };
})();

/** The rows of the 3 × 3 rotation (only the first two are drawn). */
function rotation() {
  if (state.dims < 3 || state.axes === "xy") return [[1, 0, 0], [0, 1, 0]];
  if (state.axes === "xz") return [[1, 0, 0], [0, 0, 1]];
  if (state.axes === "yz") return [[0, 1, 0], [0, 0, 1]];
  const cy = Math.cos(state.yaw), sy = Math.sin(state.yaw), cp = Math.cos(state.pitch), sp = Math.sin(state.pitch);
  return [[cy, 0, sy], [sy * sp, cp, -cy * sp]];
}

/** The affine map from stored steps q to CSS pixels in the canvas: s = A q + b. */
function transform() {
  const r = rotation(), rect = canvasSize();
  const ax = [0, 1, 2].map((k) => state.scale * r[0][k] * UNIT.step[k]);
  const ay = [0, 1, 2].map((k) => -state.scale * r[1][k] * UNIT.step[k]);
  const ox = r[0][0] * UNIT.off[0] + r[0][1] * UNIT.off[1] + r[0][2] * UNIT.off[2];
  const oy = r[1][0] * UNIT.off[0] + r[1][1] * UNIT.off[1] + r[1][2] * UNIT.off[2];
  return {
    ax, ay,
    bx: rect.w / 2 + state.scale * (ox - state.cx),
    by: rect.h / 2 - state.scale * (oy - state.cy),
  };
}

function canvasSize() {
  const c = $("map");
  return { w: c.clientWidth, h: c.clientHeight };
}

function resetView() {
  const rect = canvasSize();
  state.scale = 0.92 * Math.min(rect.w, rect.h);
  state.cx = 0;
  state.cy = 0;
}

/** Whether point i is drawn (its category not toggled off). */
function visibleTest() {
  const c = state.column;
  if (!c || c.kind !== "categories" || !c.values) return () => true;
  const codes = c.values, hidden = state.hidden;
  if (!hidden.includes(true)) return () => true;
  return (i) => !hidden[codes[i]];
}

/** Calls f(i, x, y) with each drawn point's CSS-pixel position. */
function forEachOnScreen(f) {
  const t = transform(), q = state.q, m = state.comps, visible = visibleTest();
  const [a0, a1, a2] = t.ax, [b0, b1, b2] = t.ay;
  for (let i = 0, o = 0; i < state.n; i++, o += m) {
    const q0 = q[o], q1 = q[o + 1], q2 = m === 3 ? q[o + 2] : 0;
    const x = a0 * q0 + a1 * q1 + a2 * q2 + t.bx, y = b0 * q0 + b1 * q1 + b2 * q2 + t.by;
    if (f(i, x, y, visible) === false) return;
  }
}

/** The drawn point nearest (x, y) within `radius` CSS pixels, or -1. */
function nearest(x, y, radius) {
  let best = -1, bestD = radius * radius;
  forEachOnScreen((i, px, py, visible) => {
    const dx = px - x, dy = py - y, d = dx * dx + dy * dy;
    if (d <= bestD && visible(i)) { bestD = d; best = i; }
  });
  return best;
}

/** The drawn points inside the polygon (CSS pixels), by the even-odd rule. */
function insidePolygon(poly) {
  const xs = poly.map((p) => p[0]), ys = poly.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const out = [];
  forEachOnScreen((i, x, y, visible) => {
    if (x < x0 || x > x1 || y < y0 || y > y1 || !visible(i)) return;
    let inside = false;
    for (let a = 0, b = poly.length - 1; a < poly.length; b = a++) {
      const [xa, ya] = poly[a], [xb, yb] = poly[b];
      if ((ya > y) !== (yb > y) && x < ((xb - xa) * (y - ya)) / (yb - ya) + xa) inside = !inside;
    }
    if (inside) out.push(i);
  });
  return Uint32Array.from(out);
}

let renderer = null, frameQueued = false, moving = false, settle = 0;

/** Points drawn while the view moves, on maps larger than this (all of them once it rests
 * for `SETTLE_MS`): software WebGL draws about 2M points a second, a GPU far more. */
const PREVIEW_POINTS = 500000;
const SETTLE_MS = 200;

function background() {
  return state.style.density ? [0.07, 0.07, 0.09] : [1, 1, 1];
}

function draw() {
  frameQueued = false;
  const c = $("map"), dpr = window.devicePixelRatio || 1, rect = canvasSize();
  const w = Math.max(1, Math.round(rect.w * dpr)), h = Math.max(1, Math.round(rect.h * dpr));
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
  const faded = state.search !== "" && state.column && state.column.kind === "categories";
  renderer.draw(transform(), dpr, { ...state.style, faded, background: background() }, moving);
  state.frames++;
}

function redraw() {
  if (!frameQueued) { frameQueued = true; requestAnimationFrame(draw); }
}

/** A redraw while the view moves (pan, zoom, rotate): the preview now, everything when the
 * motion stops. */
function redrawMoving() {
  moving = true;
  redraw();
  clearTimeout(settle);
  settle = setTimeout(() => { moving = false; redraw(); }, SETTLE_MS);
}

/** The palette of the column shown: toggled-off categories transparent, those the search
 * does not match faint. */
function palette(c) {
  const rgba = new Uint8Array(c.names.length * 4), s = state.search.toLowerCase();
  c.names.forEach((name, k) => {
    rgba.set(categoryColour(k), 4 * k);
    const match = !s || name.toLowerCase().includes(s);
    rgba[4 * k + 3] = state.hidden[k] ? 0 : match ? 255 : 20;
  });
  return rgba;
}

async function showColumn(c) {
  state.column = c;
  state.search = "";
  $("search").value = "";
  if (c) {
    await columnValues(c);
    if (c.kind === "categories") state.hidden = c.names.map(() => false);
  }
  applyColumn();
  updateLegend();
  redraw();
}

/** Hands the column shown (its values loaded) to the renderer. */
function applyColumn() {
  const c = state.column;
  if (!c) renderer.setPlain();
  else if (c.kind === "categories") renderer.setCategories(c.values, palette(c));
  else renderer.setNumbers(c.gpu, [c.lo, c.hi], ramp());
}

/** Most legend entries listed; the search reaches the rest. */
const LEGEND_MAX = 300;

function updateLegend() {
  const c = state.column, ul = $("legend");
  ul.replaceChildren();
  const categorical = c && c.kind === "categories";
  $("search").hidden = !categorical;
  $("legend-tools").hidden = !categorical;
  $("colour-bar").hidden = !c || categorical;
  if (!c) return;
  if (!categorical) {
    const bar = $("bar"), ctx = bar.getContext("2d"), g = ctx.createLinearGradient(0, 0, bar.width, 0);
    VIRIDIS.forEach((hex, k) => g.addColorStop(k / (VIRIDIS.length - 1), hex));
    ctx.fillStyle = g;
    ctx.fillRect(0, 0, bar.width, bar.height);
    $("bar-lo").textContent = formatNumber(c.lo);
    $("bar-hi").textContent = formatNumber(c.hi);
    return;
  }
  const s = state.search.toLowerCase();
  let listed = 0, more = 0;
  c.names.forEach((name, k) => {
    if (s && !name.toLowerCase().includes(s)) return;
    if (listed >= LEGEND_MAX) { more++; return; }
    listed++;
    const li = document.createElement("li");
    li.dataset.category = name;
    li.className = state.hidden[k] ? "off" : "";
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = rgbCss(categoryColour(k));
    const label = document.createElement("span");
    label.className = "name";
    label.textContent = name;
    label.title = name;
    const count = document.createElement("span");
    count.className = "n";
    count.textContent = c.counts[k].toLocaleString("en-US");
    li.append(sw, label, count);
    li.addEventListener("click", () => toggle(k));
    ul.append(li);
  });
  if (more) {
    const li = document.createElement("li");
    li.textContent = "… " + more + " more (search to find them)";
    ul.append(li);
  }
}

function toggle(k) {
  state.hidden[k] = !state.hidden[k];
  applyPalette();
}

function applyPalette() {
  renderer.setPalette(palette(state.column));
  updateLegend();
  redraw();
}
