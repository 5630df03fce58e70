// check.mjs runs ONNX graphs with ONNX Runtime's own Node.js binding (onnxruntime-node)
// and prints their outputs, so that graphs hfstatic extracted can be checked outside Go.
//
//   node check.mjs CASES.json > OUTPUTS.json
//
// The package is found in $HFSTATIC_ORT_NODE_DIR (a folder holding
// node_modules/onnxruntime-node, e.g. after `npm install --ignore-scripts onnxruntime-node@1.30.0`).
// CASES.json is a list of {"model": path, "feeds": [{"name", "type", "dims", "data"}],
// "outputs": [names]}: type is int64, bool, float32 or float16; data is the little-endian
// bytes in base64, or absent for zeros. The output is a list (one entry per case) of
// {name: {"dims": [...], "data": base64}}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.HFSTATIC_ORT_NODE_DIR;
if (!dir) {
  console.error('check.mjs: set HFSTATIC_ORT_NODE_DIR to the folder holding node_modules/onnxruntime-node');
  process.exit(2);
}
const ort = createRequire(path.join(path.resolve(dir), 'index.js'))('onnxruntime-node');

const arrays = {
  int64: BigInt64Array, bool: Uint8Array, float32: Float32Array, float16: Uint16Array,
};

function tensor(feed) {
  const Array = arrays[feed.type];
  if (!Array) throw new Error(`feed ${feed.name}: unknown type ${feed.type}`);
  const n = feed.dims.reduce((a, b) => a * b, 1);
  let data = new Array(n);
  if (feed.data) {
    const bytes = Buffer.from(feed.data, 'base64');
    if (bytes.length !== n * Array.BYTES_PER_ELEMENT) {
      throw new Error(`feed ${feed.name}: ${bytes.length} bytes for ${feed.type} ${feed.dims}`);
    }
    data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }
  return new ort.Tensor(feed.type, data, feed.dims);
}

const cases = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const sessions = new Map();
const results = [];
for (const c of cases) {
  if (!sessions.has(c.model)) {
    sessions.set(c.model, await ort.InferenceSession.create(c.model, { intraOpNumThreads: 1 }));
  }
  const feeds = {};
  for (const f of c.feeds) feeds[f.name] = tensor(f);
  const out = await sessions.get(c.model).run(feeds, c.outputs);
  const r = {};
  for (const name of c.outputs) {
    const t = out[name];
    const d = t.data;
    r[name] = { dims: t.dims, data: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('base64') };
  }
  results.push(r);
}
process.stdout.write(JSON.stringify(results));
