// The map of `sgtsne view` (its manifest and inline buffers) drawn by regl-scatterplot, to
// time its first full paint against the page's own renderer (benches/RESULTS.md).
import createScatterplot from "regl-scatterplot";

const hook = { firstPaintMs: null };
window.sgtsneView = hook;

function buffer(i) {
  const text = document.getElementById("sgtsne-buffer-" + i).textContent;
  return Uint8Array.fromBase64 ? Uint8Array.fromBase64(text)
    : Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

const m = JSON.parse(document.getElementById("sgtsne-manifest").textContent);
const bytes = buffer(m.coords);
const q = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
const n = m.n;
// regl-scatterplot takes coordinates in [-1, 1] and categories as integers.
const x = new Float32Array(n), y = new Float32Array(n);
for (let i = 0; i < n; i++) {
  x[i] = (q[2 * i] / 65535) * 2 - 1;
  y[i] = (q[2 * i + 1] / 65535) * 2 - 1;
}
const codes = buffer(m.columns[0].buffer);
const canvas = document.getElementById("map");
const scatterplot = createScatterplot({
  canvas,
  width: canvas.clientWidth,
  height: canvas.clientHeight,
  pointSize: 2,
  pointColor: ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"],
  colorBy: "valueA",
});
scatterplot.draw({ x, y, valueA: Array.from(codes) }).then(() => {
  const gl = scatterplot.get("regl")._gl;
  gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));
  hook.firstPaintMs = performance.now();
});
