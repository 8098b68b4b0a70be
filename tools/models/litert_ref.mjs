// Reference outputs for tools/models/mediapipe_check.py: runs a .tflite model
// with LiteRT.js (npm @litertjs/core: TFLite's own kernels, XNNPack, built
// to WebAssembly) in Node, on the CPU.
//   node litert_ref.mjs MODEL.tflite INPUT.f32 OUTDIR
// INPUT.f32: the first input's values, raw little-endian float32 in the
// model's own (NHWC) layout. Writes OUTDIR/meta.json (input and output names
// and shapes) and OUTDIR/<k>.f32 for output k.
//
// LiteRT.js is made for browsers: its loader runs the Emscripten script with
// importScripts and reads `self`; the shims below give it those in Node.
import fs from 'fs';
import {createRequire} from 'module';
import path from 'path';

const here = path.dirname(new URL(import.meta.url).pathname);
const wasmDir = path.join(here, 'node_modules/@litertjs/core/wasm/');
globalThis.require = createRequire(import.meta.url);
globalThis.self = globalThis;
globalThis.__dirname = wasmDir;
globalThis.importScripts = (url) => {
  (0, eval)(fs.readFileSync(url.toString(), 'utf8'));
};
globalThis.Module = {locateFile: (f) => wasmDir + f};
const {loadLiteRt, loadAndCompile, Tensor} = await import('@litertjs/core');

const [model, input, outdir] = process.argv.slice(2);
await loadLiteRt(wasmDir);
const m = await loadAndCompile(new Uint8Array(fs.readFileSync(model)), {accelerator: 'wasm'});
const shape = (s) => Object.keys(s).sort((a, b) => a - b).map((k) => s[k]);
const inputs = m.getInputDetails(), outputs = m.getOutputDetails();
const buf = fs.readFileSync(input);
const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
const res = await m.run([new Tensor(x, shape(inputs[0].shape))]);
fs.mkdirSync(outdir, {recursive: true});
fs.writeFileSync(path.join(outdir, 'meta.json'), JSON.stringify({
  inputs: inputs.map((d) => ({name: d.name, shape: shape(d.shape)})),
  outputs: outputs.map((d) => ({name: d.name, shape: shape(d.shape)})),
}));
for (let i = 0; i < res.length; ++i) {
  const t = await res[i].moveTo('wasm');
  const a = t.toTypedArray();
  fs.writeFileSync(path.join(outdir, `${i}.f32`), Buffer.from(a.buffer, a.byteOffset, a.byteLength));
}
