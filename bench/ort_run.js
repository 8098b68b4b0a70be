// node bench/ort_run.js MODEL.onnx OUT_DIR IN.npy... [--threads N] [--optimize all|disabled]
// Runs onnxruntime-node (npm, CPU) on each input file (a single-input
// model) and writes OUT_DIR/<input file name> with the first output: the
// reference outputs tools/models/eval_quant.py compares Kiln's with.
// --optimize disabled: onnxruntime's graph optimizations off, so a QDQ
// model runs as its DequantizeLinear / op / QuantizeLinear nodes say
// (the reference semantics) instead of its fused int8 kernels.
'use strict';
const fs = require('fs');
const path = require('path');
const {readNpy, writeNpy} = require('./npy');
let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('ort_run: onnxruntime-node is not installed: (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)');
  process.exit(2);
}

async function main() {
  const args = process.argv.slice(2);
  let threads = 1, optimize = 'all';
  const pos = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--threads') threads = parseInt(args[++i], 10);
    else if (args[i] === '--optimize') optimize = args[++i];
    else pos.push(args[i]);
  }
  if (pos.length < 3) {
    console.error('usage: ort_run.js MODEL.onnx OUT_DIR IN.npy... [--threads N] [--optimize all|disabled]');
    process.exit(2);
  }
  const [model, out, ...inputs] = pos;
  fs.mkdirSync(out, {recursive: true});
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: threads, graphOptimizationLevel: optimize});
  if (session.inputNames.length !== 1) throw new Error(`${model} has ${session.inputNames.length} inputs, not 1`);
  for (const f of inputs) {
    const t = readNpy(f);
    const res = await session.run({[session.inputNames[0]]: new ort.Tensor(t.dtype, t.data, t.shape)});
    const y = res[session.outputNames[0]];
    writeNpy(path.join(out, path.basename(f)), y.type, y.data, y.dims);
  }
}
main().catch((e) => { console.error('ort_run: ' + e.message); process.exit(1); });
