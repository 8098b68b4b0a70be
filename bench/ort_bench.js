// node bench/ort_bench.js MODEL.onnx [--threads N] [--loops 50] [--warmup 5]
//                        [--input NAME=FILE.npy] [--state OUT=IN]
// onnxruntime-node (npm) on the CPU: the reference kiln-bench is compared
// with. Prints one JSON object: {"model", "threads", "median_ms", "min_ms",
// "max_ms", "session_ms"}. Inputs are random (symbolic dims 1) unless
// --input gives them; --state OUT=IN feeds each run's OUT back as the next
// run's IN (from zeros), as an app calls a streaming model with
// onnxruntime: the timed runs include that hand-over.
'use strict';
const path = require('path');
let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('ort_bench: onnxruntime-node is not installed: ' +
                '(cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)');
  process.exit(2);
}

// A .npy file as an ort.Tensor.
function readNpy(file) {
  const t = require('./npy').readNpy(file);
  return new ort.Tensor(t.dtype, t.data, t.shape);
}

async function main() {
  const args = process.argv.slice(2);
  const opt = {threads: 1, loops: 50, warmup: 5};
  const given = {}, states = [];
  let model = null;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--threads' || a === '--loops' || a === '--warmup') opt[a.slice(2)] = parseInt(args[++i], 10);
    else if (a === '--input') { const [n, f] = args[++i].split('='); given[n] = f; }
    else if (a === '--state') { const [o, n] = args[++i].split('='); states.push([o, n]); }
    else if (!model) model = a;
    else { console.error('usage: ort_bench.js MODEL.onnx [--threads N] [--loops N] [--warmup N]'); process.exit(2); }
  }
  if (!model) { console.error('usage: ort_bench.js MODEL.onnx [--threads N] [--loops N] [--warmup N]'); process.exit(2); }
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: opt.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'});
  const sessionMs = performance.now() - t0;
  const feeds = {};
  for (const name of session.inputNames) {
    if (given[name]) { feeds[name] = readNpy(given[name]); continue; }
    const meta = session.inputMetadata.find((m) => m.name === name);
    const dims = (meta && meta.shape ? meta.shape : [1]).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    let s = 1;
    const state = states.some(([, inName]) => inName === name);  // from zeros
    for (let i = 0; i < n && !state; ++i) { s = (s * 1103515245 + 12345) % 2147483648; data[i] = s / 1073741824 - 1; }
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  const step = async () => {
    const out = await session.run(feeds);
    for (const [o, n] of states) feeds[n] = out[o];
  };
  for (let i = 0; i < opt.warmup; ++i) await step();
  const times = [];
  for (let i = 0; i < opt.loops; ++i) {
    const t = performance.now();
    await step();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({model: path.basename(model), threads: opt.threads, session_ms: sessionMs,
                              median_ms: times[Math.floor(times.length / 2)], min_ms: times[0],
                              max_ms: times[times.length - 1]}));
}
main().catch((e) => { console.error('ort_bench: ' + e.message); process.exit(1); });
