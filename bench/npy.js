// .npy files (v1-v3, little-endian, C order) for the Node tools: read into
// {dtype, data (typed array), shape}, write float32 / int arrays back.
'use strict';
const fs = require('fs');

const TYPES = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
               '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array]};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((x) => x.trim()).filter((x) => x).map(Number);
  const body = buf.subarray(start + hlen);
  if (!TYPES[descr]) throw new Error(file + ': dtype ' + descr + ' is not supported');
  const [dtype, Type] = TYPES[descr];
  return {dtype, data: new Type(body.buffer.slice(body.byteOffset, body.byteOffset + body.length)), shape};
}

function writeNpy(file, dtype, data, shape) {
  const descr = Object.keys(TYPES).find((k) => TYPES[k][0] === dtype);
  if (!descr) throw new Error('writeNpy: dtype ' + dtype + ' is not supported');
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'),
                                        Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = {readNpy, writeNpy};
