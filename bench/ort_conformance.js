// node bench/ort_conformance.js [--data DIR] [--filter REGEX] [--list-passing FILE]
//                               [--json FILE] [--jobs N] [--timeout SECONDS] [--verbose]
// node bench/ort_conformance.js --one CASE_DIR      (runs one case, prints one JSON line)
//
// onnxruntime-node (npm, CPU) on Debian's ONNX backend test cases
// (libonnx-testdata: data/{node,pytorch-converted,pytorch-operator,simple}/CASE/
// model.onnx and test_data_set_*/{input,output}_*.pb): the reference that
// build/bin/kiln-conformance is compared with, on the same data and rules:
// input_k.pb feeds the k-th graph input that is not an initializer
// (session.inputNames), output_k.pb is compared with the k-th output; every
// test_data_set must pass; shapes and element types must match; values pass
// when |got - want| <= 1e-7 + 1e-3 * |want| (NaN == NaN, equal infinities
// pass), strings must be equal. Each case runs in its own child process
// (timeout 60 s), so a hang or crash is a failed case, not a dead runner.
// Sequence / optional / map inputs or outputs (SequenceProto, OptionalProto
// .pb files) can't be fed through onnxruntime-node's tensor-only API: such
// cases are counted as unsupported, as are element types ort-node lacks
// (bfloat16, complex) and models whose session creation throws.
//
// --list-passing FILE writes the passing cases as suite/case, one a line
// (the format of tests/conformance/expected_host.txt).
// Needs onnxruntime-node: (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)
'use strict';
const fs = require('fs');
const path = require('path');
const childProcess = require('child_process');

const kDefaultData = '/usr/include/onnx/backend/test/data';
const kSuites = ['node', 'pytorch-converted', 'pytorch-operator', 'simple'];

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    console.error('ort_conformance: onnxruntime-node is not installed: ' +
                  '(cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node)');
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------
// Minimal protobuf wire-format reader for onnx.TensorProto.

class Reader {
  constructor(buf) { this.buf = buf; this.pos = 0; }
  eof() { return this.pos >= this.buf.length; }
  // Varint as an unsigned 64-bit BigInt.
  varint() {
    let result = 0n, shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return BigInt.asUintN(64, result);
      shift += 7n;
      if (shift > 63n) throw new Error('varint too long');
    }
  }
  // Varint as a Number (for tags, lengths, small enums).
  uint() {
    let result = 0, mul = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * mul;
      if (!(b & 0x80)) return result;
      mul *= 128;
      if (mul > 2 ** 63) throw new Error('varint too long');
    }
  }
  bytes() {
    const n = this.uint();
    if (this.pos + n > this.buf.length) throw new Error('truncated field');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  fixed32() {
    if (this.pos + 4 > this.buf.length) throw new Error('truncated fixed32');
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  fixed64() {
    if (this.pos + 8 > this.buf.length) throw new Error('truncated fixed64');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error('unsupported wire type ' + wire);
    if (this.pos > this.buf.length) throw new Error('truncated field');
  }
}

// Repeated varint field, packed (wire 2) or not (wire 0).
function readVarints(r, wire, out) {
  if (wire === 0) { out.push(r.varint()); return; }
  if (wire !== 2) throw new Error('bad wire type for varint field');
  const sub = new Reader(r.bytes());
  while (!sub.eof()) out.push(sub.varint());
}

function readFixed(r, wire, out, is64) {
  if (wire === (is64 ? 1 : 5)) { out.push(is64 ? r.fixed64() : r.fixed32()); return; }
  if (wire !== 2) throw new Error('bad wire type for fixed field');
  const sub = new Reader(r.bytes());
  while (!sub.eof()) out.push(is64 ? sub.fixed64() : sub.fixed32());
}

function decodeTensorProto(buf) {
  const r = new Reader(buf);
  const t = {dims: [], dataType: 0, floatData: [], int32Data: [], stringData: [], int64Data: [],
             name: '', rawData: null, doubleData: [], uint64Data: [], dataLocation: 0, hasExternal: false};
  while (!r.eof()) {
    const tag = r.uint();
    const field = Math.floor(tag / 8), wire = tag & 7;
    switch (field) {
      case 1: {  // dims
        const v = [];
        readVarints(r, wire, v);
        for (const d of v) t.dims.push(Number(BigInt.asIntN(64, d)));
        break;
      }
      case 2: t.dataType = Number(r.varint()); break;
      case 4: readFixed(r, wire, t.floatData, false); break;
      case 5: {
        const v = [];
        readVarints(r, wire, v);
        for (const x of v) t.int32Data.push(Number(BigInt.asIntN(32, x)));
        break;
      }
      case 6: if (wire !== 2) throw new Error('bad string_data'); t.stringData.push(Buffer.from(r.bytes())); break;
      case 7: {
        const v = [];
        readVarints(r, wire, v);
        for (const x of v) t.int64Data.push(BigInt.asIntN(64, x));
        break;
      }
      case 8: if (wire !== 2) throw new Error('bad name'); t.name = r.bytes().toString('utf8'); break;
      case 9: if (wire !== 2) throw new Error('bad raw_data'); t.rawData = Buffer.from(r.bytes()); break;
      case 10: readFixed(r, wire, t.doubleData, true); break;
      case 11: {
        const v = [];
        readVarints(r, wire, v);
        for (const x of v) t.uint64Data.push(x);
        break;
      }
      case 13: t.hasExternal = true; r.skip(wire); break;
      case 14: t.dataLocation = Number(r.varint()); break;
      default: r.skip(wire);
    }
  }
  return t;
}

// ONNX TensorProto.DataType -> [ort tensor type, typed array constructor, field holding the data].
const kTypes = {
  1: ['float32', Float32Array, 'floatData'],
  2: ['uint8', Uint8Array, 'int32Data'],
  3: ['int8', Int8Array, 'int32Data'],
  4: ['uint16', Uint16Array, 'int32Data'],
  5: ['int16', Int16Array, 'int32Data'],
  6: ['int32', Int32Array, 'int32Data'],
  7: ['int64', BigInt64Array, 'int64Data'],
  8: ['string', null, 'stringData'],
  9: ['bool', Uint8Array, 'int32Data'],
  10: ['float16', Uint16Array, 'int32Data'],  // bits
  11: ['float64', Float64Array, 'doubleData'],
  12: ['uint32', Uint32Array, 'uint64Data'],
  13: ['uint64', BigUint64Array, 'uint64Data'],
};
const kTypeNames = {14: 'complex64', 15: 'complex128', 16: 'bfloat16'};

class Unsupported extends Error {}

// TensorProto bytes -> {type, dims, data} (data as ort-node wants it).
function tensorFromProto(buf) {
  const t = decodeTensorProto(buf);
  if (t.dataLocation === 1 || t.hasExternal) throw new Unsupported('external data');
  const info = kTypes[t.dataType];
  if (!info) throw new Unsupported('element type ' + (kTypeNames[t.dataType] || t.dataType));
  const [type, Ctor, field] = info;
  const dims = t.dims;
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (type === 'string') {
    data = t.stringData.map((b) => b.toString('utf8'));
  } else if (t.rawData) {
    const bytes = new Uint8Array(t.rawData.length);  // copy: aligned, owned
    bytes.set(t.rawData);
    if (bytes.length !== count * Ctor.BYTES_PER_ELEMENT)
      throw new Error(`raw_data has ${bytes.length} bytes, want ${count * Ctor.BYTES_PER_ELEMENT}`);
    data = new Ctor(bytes.buffer, 0, count);
  } else {
    const src = t[field];
    data = new Ctor(src.length);
    if (Ctor === BigInt64Array || Ctor === BigUint64Array) {
      for (let i = 0; i < src.length; ++i) data[i] = BigInt(src[i]);
    } else if (Ctor === Uint32Array) {
      for (let i = 0; i < src.length; ++i) data[i] = Number(src[i]);
    } else {
      for (let i = 0; i < src.length; ++i) data[i] = src[i];
    }
  }
  if (data.length !== count) throw new Error(`${data.length} elements, dims [${dims}] want ${count}`);
  return {type, dims, data};
}

// ---------------------------------------------------------------------------
// One case.

function halfToNumber(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function element(t, i) {
  if (t.type === 'float16') return halfToNumber(t.data[i]);
  const v = t.data[i];
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function listDir(dir, prefix = '') {
  let names;
  try { names = fs.readdirSync(dir); } catch (e) { return []; }
  return names.filter((n) => n.startsWith(prefix)).sort();
}

async function runCase(dir) {
  const ort = loadOrt();
  const sets = listDir(dir, 'test_data_set_');
  let session;
  try {
    session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', logSeverityLevel: 3});
  } catch (e) {
    return ['unsupported', 'session: ' + e.message];
  }
  for (const m of session.inputMetadata)
    if (m.isTensor === false) return ['unsupported', `input '${m.name}' is not a tensor (sequence/optional/map)`];
  for (const m of session.outputMetadata)
    if (m.isTensor === false) return ['unsupported', `output '${m.name}' is not a tensor (sequence/optional/map)`];
  if (!sets.length) return ['failed', 'no test_data_set_*'];
  for (const set of sets) {
    const sd = path.join(dir, set);
    const feeds = {};
    for (let k = 0; k < session.inputNames.length; ++k) {
      const file = path.join(sd, `input_${k}.pb`);
      if (!fs.existsSync(file)) return ['failed', `${set}: missing input_${k}.pb`];
      let t;
      try {
        t = tensorFromProto(fs.readFileSync(file));
      } catch (e) {
        return [e instanceof Unsupported ? 'unsupported' : 'failed', `input ${k}: ${e.message}`];
      }
      try {
        feeds[session.inputNames[k]] = new ort.Tensor(t.type, t.data, t.dims);
      } catch (e) {
        return ['unsupported', `input ${k}: ${e.message}`];
      }
    }
    let results;
    try {
      results = await session.run(feeds);
    } catch (e) {
      return ['failed', 'run: ' + e.message];
    }
    for (let k = 0; k < session.outputNames.length; ++k) {
      const name = session.outputNames[k];
      let want;
      try {
        want = tensorFromProto(fs.readFileSync(path.join(sd, `output_${k}.pb`)));
      } catch (e) {
        return [e instanceof Unsupported ? 'unsupported' : 'failed', `expected output ${k}: ${e.message}`];
      }
      const got = results[name];
      if (!got) return ['failed', `output ${k} '${name}' missing`];
      const gotDims = Array.from(got.dims, Number);
      if (got.type !== want.type || gotDims.length !== want.dims.length ||
          gotDims.some((d, i) => d !== want.dims[i]))
        return ['failed', `output ${k} '${name}': got ${got.type} [${gotDims}], want ${want.type} [${want.dims}]`];
      const n = want.data.length;
      if (got.data.length !== n) return ['failed', `output ${k} '${name}': ${got.data.length} elements, want ${n}`];
      for (let i = 0; i < n; ++i) {
        if (want.type === 'string') {
          if (got.data[i] !== want.data[i])
            return ['failed', `output ${k} '${name}' [${i}]: got ${JSON.stringify(got.data[i])}, ` +
                              `want ${JSON.stringify(want.data[i])} (${set})`];
          continue;
        }
        const g = element(got, i), w = element(want, i);
        if (Number.isNaN(g) && Number.isNaN(w)) continue;
        if (!Number.isFinite(w) && !Number.isNaN(w) && g === w) continue;
        if (!(Math.abs(g - w) <= 1e-7 + 1e-3 * Math.abs(w)))
          return ['failed', `output ${k} '${name}' [${i}]: got ${g}, want ${w} (${set})`];
      }
    }
  }
  return ['passed', ''];
}

// ---------------------------------------------------------------------------
// Driver.

function usage() {
  console.error('usage: ort_conformance.js [--data DIR] [--filter REGEX] [--list-passing FILE] [--json FILE]\n' +
                '                          [--jobs N] [--timeout SECONDS] [--verbose]\n' +
                '       ort_conformance.js --one CASE_DIR');
  process.exit(2);
}

function runChild(dir, timeoutS) {
  return new Promise((resolve) => {
    const child = childProcess.spawn(process.execPath, [__filename, '--one', dir],
                                     {stdio: ['ignore', 'pipe', 'pipe']});
    let out = '', err = '', timedOut = false;
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { if (err.length < 4096) err += d; });
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return resolve(['failed', `timed out after ${timeoutS} s`]);
      const lines = out.trim().split('\n');
      try {
        const r = JSON.parse(lines[lines.length - 1]);
        return resolve([r.result, r.error]);
      } catch (e) {
        const why = signal ? `crashed (signal ${signal})` : `no result (exit ${code})`;
        return resolve(['failed', why + (err ? ': ' + err.trim().split('\n').pop() : '')]);
      }
    });
  });
}

async function main() {
  const args = process.argv.slice(2);
  const opt = {data: kDefaultData, filter: '', list: '', json: '', jobs: 1, timeout: 60, verbose: false};
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--one' && i + 1 < args.length) {
      const [result, error] = await runCase(args[++i]).catch((e) => ['failed', 'error: ' + e.message]);
      process.stdout.write(JSON.stringify({result, error}) + '\n');
      return;
    } else if (a === '--data' && i + 1 < args.length) opt.data = args[++i];
    else if (a === '--filter' && i + 1 < args.length) opt.filter = args[++i];
    else if (a === '--list-passing' && i + 1 < args.length) opt.list = args[++i];
    else if (a === '--json' && i + 1 < args.length) opt.json = args[++i];
    else if (a === '--jobs' && i + 1 < args.length) opt.jobs = Math.max(1, parseInt(args[++i], 10) || 1);
    else if (a === '--timeout' && i + 1 < args.length) opt.timeout = parseFloat(args[++i]);
    else if (a === '--verbose') opt.verbose = true;
    else usage();
  }
  loadOrt();  // fail early with the install hint
  const re = new RegExp(opt.filter || '.*');
  const cases = [];
  for (const suite of kSuites)
    for (const name of listDir(path.join(opt.data, suite)))
      if (re.test(`${suite}/${name}`)) cases.push({suite, name});

  const t0 = Date.now();
  let next = 0;
  async function worker() {
    while (next < cases.length) {
      const c = cases[next++];
      [c.result, c.error] = await runChild(path.join(opt.data, c.suite, c.name), opt.timeout);
      if (opt.verbose) console.error(`${c.result.padEnd(11)} ${c.suite}/${c.name}${c.error ? ': ' + c.error : ''}`);
    }
  }
  await Promise.all(Array.from({length: Math.min(opt.jobs, cases.length)}, worker));
  const seconds = (Date.now() - t0) / 1000;

  const perSuite = new Map();
  const total = {cases: 0, passed: 0, failed: 0, unsupported: 0};
  for (const c of cases) {
    if (!perSuite.has(c.suite)) perSuite.set(c.suite, {cases: 0, passed: 0, failed: 0, unsupported: 0});
    for (const s of [perSuite.get(c.suite), total]) { s.cases++; s[c.result]++; }
  }
  const line = (name, s) => console.log(`${name.padEnd(18)} ${String(s.cases).padStart(4)} cases, passed ` +
      `${String(s.passed).padStart(4)}, failed ${String(s.failed).padStart(4)}, ` +
      `unsupported ${String(s.unsupported).padStart(4)}`);
  const ort = loadOrt();
  console.log(`onnxruntime-node ${ort.env.versions.node} (cpu), ${opt.data}`);
  for (const [suite, s] of perSuite) line(suite, s);
  line('total', total);
  console.log(`${seconds.toFixed(1)} s`);

  if (opt.list) {
    const passing = cases.filter((c) => c.result === 'passed').map((c) => `${c.suite}/${c.name}`).sort();
    fs.writeFileSync(opt.list, passing.map((p) => p + '\n').join(''));
  }
  if (opt.json) {
    fs.writeFileSync(opt.json, JSON.stringify({
      runtime: `onnxruntime-node ${ort.env.versions.node}`,
      cases: cases.map((c) => ({case: `${c.suite}/${c.name}`, result: c.result, error: c.error}))}, null, 1) + '\n');
  }
}

main().catch((e) => { console.error('ort_conformance: ' + e.stack); process.exit(1); });
