# quant-pure.py IN-f32.gguf OUT.gguf Q8_0|Q4_0: every 2-D weight to the one type, as `llama-quantize --pure`
# does, with llama.cpp's gguf-py only (no llama.cpp build needed; numpy's rounding, so scales may differ
# from llama-quantize's in the last bit). Run: PYTHONPATH=$PEER_HOME/llama.cpp/gguf-py /usr/bin/python3 quant-pure.py ...
import sys, numpy as np, gguf
src, dst, qn = sys.argv[1], sys.argv[2], sys.argv[3]
qt = gguf.GGMLQuantizationType[qn]
r = gguf.GGUFReader(src)
arch = r.fields["general.architecture"]; arch = bytes(arch.parts[arch.data[0]]).decode()
w = gguf.GGUFWriter(dst, arch)
for f in r.fields.values():
    if f.name.startswith("GGUF.") or f.name == "general.architecture": continue
    vt = f.types[0]
    if vt == gguf.GGUFValueType.ARRAY:
        et = f.types[1]
        if et == gguf.GGUFValueType.STRING:
            val = [bytes(f.parts[i]).decode("utf-8", "surrogateescape") for i in f.data]
        else:
            val = [f.parts[i][0].item() for i in f.data]
        w.add_key_value(f.name, val, vt, sub_type=et)
    elif vt == gguf.GGUFValueType.STRING:
        w.add_key_value(f.name, bytes(f.parts[f.data[0]]).decode(), vt)
    else:
        v = f.parts[f.data[0]][0].item()
        if f.name == "general.file_type": v = {"Q8_0": 7, "Q4_0": 2}[qn]
        w.add_key_value(f.name, v, vt)
for t in r.tensors:
    a = np.asarray(t.data).reshape([int(x) for x in reversed(t.shape)])
    if a.ndim == 2:
        q = gguf.quants.quantize(a.astype(np.float32), qt)
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=qt)
    else:
        w.add_tensor(t.name, a.astype(np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print("wrote", dst)
