// time.mjs times ONNX graphs with ONNX Runtime's Node.js binding (onnxruntime-node, found
// in $HFSTATIC_ORT_NODE_DIR as for check.mjs):
//
//   node time.mjs THREADS REPEATS MODEL.onnx...
//
// Each model has one float32 input "x" whose shape comes from the graph; it runs 3 times
// to warm up, then REPEATS times, and one JSON line per model gives the microseconds per
// run, wall and process CPU (user+system): {"model", "wall_us", "cpu_us"}.
//
// A file MODEL.onnx.json beside a model, when there is one, adds to it:
//   {"options": {...}}   session options merged over the defaults (e.g. "extra":
//                        {"session": {"disable_prepacking": "1"}}, "graphOptimizationLevel")
//   {"inputs": [{"name", "type", "dims", "file"}]}  other inputs, fed from raw files
//   {"ref": FILE}        float64 little-endian reference of the output: the line then has
//                        "max_err" (largest |y − ref|) and "rel_err" (that ÷ largest |ref|)
// and the line has the process's RSS before the session ("rss0_mib"), its peak after the
// timed runs ("peak_mib") and, from a second session made after those, the op types of
// ORT's optimized graph ("ops": type → count).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dir = process.env.HFSTATIC_ORT_NODE_DIR;
if (!dir) {
  console.error('time.mjs: set HFSTATIC_ORT_NODE_DIR to the folder holding node_modules/onnxruntime-node');
  process.exit(2);
}
const ort = createRequire(path.join(path.resolve(dir), 'index.js'))('onnxruntime-node');
const arrays = { float32: Float32Array, int8: Int8Array, uint8: Uint8Array };

// opTypes counts the op_type fields (NodeProto field 4) of a serialized model's main graph.
function opTypes(buf) {
  const ops = {};
  let i = 0;
  const varint = () => { let v = 0, s = 1; for (;;) { const b = buf[i++]; v += (b & 0x7f) * s; s *= 128; if (b < 0x80) return v; } };
  const fields = (end, f) => { while (i < end) { const key = varint(); const wt = key & 7, no = Math.floor(key / 8);
    if (wt === 0) { varint(); continue; } if (wt === 5) { i += 4; continue; } if (wt === 1) { i += 8; continue; }
    const n = varint(); const start = i; f(no, start, start + n); i = start + n; } };
  fields(buf.length, (no, s, e) => { if (no !== 7) return; i = s; fields(e, (gno, ns, ne) => { if (gno !== 1) return; i = ns;
    fields(ne, (fno, a, b) => { if (fno === 4) { const t = buf.subarray(a, b).toString(); ops[t] = (ops[t] || 0) + 1; } }); }); });
  return ops;
}

const [threads, repeats, ...models] = process.argv.slice(2);
for (const model of models) {
  let side = {};
  if (fs.existsSync(model + '.json')) side = JSON.parse(fs.readFileSync(model + '.json'));
  const opt = path.join(os.tmpdir(), `time-mjs-${process.pid}.onnx`);
  const rss0 = process.memoryUsage().rss;
  const options = {
    intraOpNumThreads: +threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    ...(side.options || {}),
  };
  const s = await ort.InferenceSession.create(model, options);
  const dims = s.inputMetadata.find((m) => m.name === 'x').shape;
  const n = dims.reduce((a, b) => a * b, 1);
  const feeds = { x: new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => Math.sin(i)), dims) };
  for (const inp of side.inputs || []) {
    const b = fs.readFileSync(path.join(path.dirname(model), inp.file));
    const A = arrays[inp.type];
    feeds[inp.name] = new ort.Tensor(inp.type, new A(b.buffer, b.byteOffset, b.length / A.BYTES_PER_ELEMENT), inp.dims);
  }
  let out;
  for (let i = 0; i < 3; i++) out = await s.run(feeds);
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < +repeats; i++) await s.run(feeds);
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / +repeats;
  const c = process.cpuUsage(c0);
  const line = { model: path.basename(model), wall_us: Math.round(wall), cpu_us: Math.round((c.user + c.system) / +repeats),
    rss0_mib: Math.round(rss0 / 1048576), peak_mib: Math.round(process.resourceUsage().maxRSS / 1024) };
  if (side.ref) {
    const b = fs.readFileSync(path.join(path.dirname(model), side.ref));
    const ref = new Float64Array(b.buffer, b.byteOffset, b.length / 8);
    const y = out[s.outputNames[0]].data;
    let e = 0, m = 0;
    for (let i = 0; i < ref.length; i++) { e = Math.max(e, Math.abs(y[i] - ref[i])); m = Math.max(m, Math.abs(ref[i])); }
    line.max_err = e; line.rel_err = e / m;
  }
  await s.release();
  if (side.ref) { // a second session, after the peak was read, only to see ORT's optimized graph
    await (await ort.InferenceSession.create(model, { ...options, optimizedModelFilePath: opt })).release();
    if (fs.existsSync(opt)) { line.ops = opTypes(fs.readFileSync(opt)); fs.rmSync(opt); }
  }
  console.log(JSON.stringify(line));
}
