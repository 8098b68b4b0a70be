// Reference outputs of the quantized TFLite test models
// (tools/models/make_tflite_quant.py), from TFLite's own kernels: LiteRT.js
// (npm @litertjs/core, built to WebAssembly) in Node, on the CPU.
//   node litert_quant_ref.mjs LITERT_DIR MODEL.tflite INPUT.nhwc OUT.npy
// INPUT.nhwc: the first input's raw bytes in the model's layout and type
// (float32, int8 or uint8, as the model declares). OUT.npy: the first
// output, in its type and shape; OUT.K.npy: output K > 0. LITERT_DIR holds node_modules/@litertjs/core
// (npm install @litertjs/core there); the shims give its browser loader
// what it expects, as tools/models/litert_ref.mjs does.
import fs from 'fs';
import {createRequire} from 'module';
import path from 'path';

const [litert, model, input, out] = process.argv.slice(2);
const wasmDir = path.join(path.resolve(litert), 'node_modules/@litertjs/core/wasm/');
globalThis.require = createRequire(path.join(path.resolve(litert), 'package.json'));
globalThis.self = globalThis;
globalThis.__dirname = wasmDir;
globalThis.importScripts = (url) => {
  (0, eval)(fs.readFileSync(url.toString(), 'utf8'));
};
globalThis.Module = {locateFile: (f) => wasmDir + f};
const {loadLiteRt, loadAndCompile, Tensor} =
    await import(path.join(path.resolve(litert), 'node_modules/@litertjs/core/dist/index.js'));

await loadLiteRt(wasmDir);
const m = await loadAndCompile(new Uint8Array(fs.readFileSync(model)), {accelerator: 'wasm'});
const shape = (s) => Object.keys(s).sort((a, b) => a - b).map((k) => s[k]);
const inputs = m.getInputDetails(), outputs = m.getOutputDetails();
const buf = fs.readFileSync(input);
const kinds = {float32: Float32Array, int8: Int8Array, uint8: Uint8Array};
const T = kinds[inputs[0].dtype];
if (!T) throw new Error(`input type ${inputs[0].dtype}`);
const x = new T(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
const res = await m.run([new Tensor(x, shape(inputs[0].shape))]);
for (let k = 0; k < res.length; ++k) {
  const t = await res[k].moveTo('wasm');
  const a = t.toTypedArray();
  const descr = {Float32Array: '<f4', Int8Array: '|i1', Uint8Array: '|u1'}[a.constructor.name];
  const dims = shape(outputs[k].shape);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length == 1 ? ',' : ''}), }`;
  header += ' '.repeat(63 - ((header.length + 10) % 64)) + '\n';
  const h = Buffer.alloc(10);
  h.write('\x93NUMPY', 0, 'latin1');
  h[6] = 1, h[7] = 0, h.writeUInt16LE(header.length, 8);
  const file = k == 0 ? out : out.replace(/\.npy$/, `.${k}.npy`);
  fs.writeFileSync(file, Buffer.concat([h, Buffer.from(header, 'latin1'), Buffer.from(a.buffer, a.byteOffset, a.byteLength)]));
  console.log(path.basename(model), inputs[0].dtype, '->', outputs[k].name, a.constructor.name, dims.join('x'));
}
