// The map's data: the manifest, the buffers (base64 in the page, or binary from the
// server), and the colours of categories and numbers.

const MANIFEST = JSON.parse(document.getElementById("sgtsne-manifest").textContent);

/** The bytes of buffer `i`: decoded from the page once, or fetched from `buffer/i`. */
async function loadBuffer(i) {
  if (!MANIFEST.inline) {
    const r = await fetch("buffer/" + i);
    if (!r.ok) throw new Error("buffer " + i + ": HTTP " + r.status);
    return new Uint8Array(await r.arrayBuffer());
  }
  const el = document.getElementById("sgtsne-buffer-" + i);
  const text = el.textContent;
  el.textContent = "";
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k);
  return out;
}

/**
 * The coordinates as u16 steps with `comps` per point (2 or 3). A 1-D map gets a second
 * axis of deterministic jitter (a tenth of its width), so that its points spread out.
 */
async function loadCoordinates() {
  const bytes = await loadBuffer(MANIFEST.coords);
  const q = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  if (MANIFEST.dims > 1) return { q, comps: MANIFEST.dims };
  const n = MANIFEST.n, two = new Uint16Array(2 * n);
  for (let i = 0; i < n; i++) {
    let h = Math.imul(i + 1, 2654435761) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
    two[2 * i] = q[i];
    two[2 * i + 1] = h & 0xffff;
  }
  return { q: two, comps: 2 };
}

/** Column `c`'s values, loaded at first use: codes (typed by width) or Float32Array. */
function columnValues(c) {
  if (!c.loading) {
    c.loading = loadBuffer(c.buffer).then((bytes) => {
      if (c.kind === "numbers") {
        const v = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
        c.values = v;
        // The shader's missing value (it has no NaN test that every GPU honours).
        const g = new Float32Array(v.length);
        for (let i = 0; i < v.length; i++) g[i] = v[i] === v[i] ? v[i] : -1e30;
        c.gpu = g;
      } else {
        const T = c.bytes === 1 ? Uint8Array : c.bytes === 2 ? Uint16Array : Uint32Array;
        c.values = new T(bytes.buffer, bytes.byteOffset, bytes.byteLength / c.bytes);
      }
      return c.values;
    });
  }
  return c.loading;
}

/** Distinct colours for categories: Tableau's 20, then golden-angle hues. */
const TABLEAU = [
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
  "#9c755f", "#bab0ac", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

function categoryColour(k) {
  if (k < TABLEAU.length) return hexRgb(TABLEAU[k]);
  const hue = (k * 137.508) % 360, light = 0.45 + 0.15 * ((k >> 1) % 2);
  return hslRgb(hue, 0.65, light);
}

function hexRgb(hex) {
  const v = parseInt(hex.slice(1), 16);
  return [v >> 16, (v >> 8) & 255, v & 255];
}

function hslRgb(h, s, l) {
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/** Viridis at 9 stops, interpolated to 256 RGBA texels. */
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];

function ramp() {
  const stops = VIRIDIS.map(hexRgb), out = new Uint8Array(256 * 4);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1), k = Math.min(Math.floor(t), stops.length - 2), f = t - k;
    for (let c = 0; c < 3; c++) out[4 * i + c] = Math.round(stops[k][c] * (1 - f) + stops[k + 1][c] * f);
    out[4 * i + 3] = 255;
  }
  return out;
}

function rgbCss(c) {
  return "rgb(" + c[0] + "," + c[1] + "," + c[2] + ")";
}

/** A number for the hover box and the colour bar: short, but exact for whole numbers. */
function formatNumber(v) {
  if (v !== v) return "NA";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  return Number(v.toPrecision(5)).toString();
}
