// time.mjs times ONNX graphs with ONNX Runtime's Node.js binding (onnxruntime-node, found
// in $HFSTATIC_ORT_NODE_DIR as for check.mjs):
//
//   node time.mjs THREADS REPEATS MODEL.onnx...
//
// Each model has one float32 input "x" whose shape comes from the graph; it runs 3 times
// to warm up, then REPEATS times, and one JSON line per model gives the microseconds per
// run, wall and process CPU (user+system): {"model", "wall_us", "cpu_us"}.
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.HFSTATIC_ORT_NODE_DIR;
if (!dir) {
  console.error('time.mjs: set HFSTATIC_ORT_NODE_DIR to the folder holding node_modules/onnxruntime-node');
  process.exit(2);
}
const ort = createRequire(path.join(path.resolve(dir), 'index.js'))('onnxruntime-node');
const [threads, repeats, ...models] = process.argv.slice(2);
for (const model of models) {
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: +threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const dims = s.inputMetadata.find((m) => m.name === 'x').shape;
  const n = dims.reduce((a, b) => a * b, 1);
  const x = new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => Math.sin(i)), dims);
  for (let i = 0; i < 3; i++) await s.run({ x });
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < +repeats; i++) await s.run({ x });
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / +repeats;
  const c = process.cpuUsage(c0);
  console.log(JSON.stringify({ model: path.basename(model), wall_us: Math.round(wall), cpu_us: Math.round((c.user + c.system) / +repeats) }));
  await s.release();
}
