// check.mjs runs hfstatic's ONNX graphs (hfstatic inspect X.hfs --extract-onnx DIR) with
// ONNX Runtime's own Node.js binding, onnxruntime-node, outside Go.
//
//   node check.mjs DIR/decode.onnx TOKEN   one decode step of TOKEN at position 0 from zero
//                                          caches; prints {"logits": [V numbers]}
//   node check.mjs CASES.json              runs the cases and prints their outputs (below)
//
// The package is found in $HFSTATIC_ORT_NODE_DIR, a folder holding
// node_modules/onnxruntime-node (`npm install --ignore-scripts onnxruntime-node@1.30.0`).
//
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

const arrays = { int64: BigInt64Array, bool: Uint8Array, float32: Float32Array, float16: Uint16Array };
const sessionOptions = { intraOpNumThreads: 1 };

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

// decodeStep feeds the contract's inputs of one decode step of token at position 0 over
// zero caches, reading every input's name, type and shape from the graph itself.
async function decodeStep(model, token) {
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const feeds = {};
  for (const m of session.inputMetadata) {
    const dims = m.shape.map(Number);
    const t = tensor({ name: m.name, type: m.type, dims });
    switch (m.name) {
      case 'input_ids': t.data[0] = BigInt(token); break;
      case 'position_ids': t.data[0] = 0n; break;
      case 'attention_mask': t.data[0] = 1; break; // row 0 sees position 0 only
      default: if (!/^[kv]_cache_\d+$/.test(m.name)) throw new Error(`unexpected input ${m.name}`);
    }
    feeds[m.name] = t;
  }
  const out = await session.run(feeds, ['logits']);
  return { logits: Array.from(out.logits.data) };
}

async function runCases(file) {
  const cases = JSON.parse(readFileSync(file, 'utf8'));
  const sessions = new Map();
  const results = [];
  for (const c of cases) {
    if (!sessions.has(c.model)) {
      // cases come grouped by program: release the sessions of the previous one
      const folder = path.dirname(c.model);
      for (const [model, s] of sessions) {
        if (path.dirname(model) !== folder) {
          await s.release();
          sessions.delete(model);
        }
      }
      sessions.set(c.model, await ort.InferenceSession.create(c.model, sessionOptions));
    }
    const feeds = {};
    for (const f of c.feeds) feeds[f.name] = tensor(f);
    const out = await sessions.get(c.model).run(feeds, c.outputs);
    const r = {};
    for (const name of c.outputs) {
      const d = out[name].data;
      r[name] = { dims: out[name].dims, data: Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('base64') };
    }
    results.push(r);
  }
  return results;
}

const [arg, token] = process.argv.slice(2);
const result = arg.endsWith('.onnx') ? await decodeStep(arg, Number(token)) : await runCases(arg);
process.stdout.write(JSON.stringify(result));
