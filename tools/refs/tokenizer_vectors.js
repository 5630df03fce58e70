// Writes tokenizer test vectors with the official Hugging Face tokenizers
// library (npm tokenizers@0.23.2, the Rust library's Node binding):
//
//   node tools/refs/tokenizer_vectors.js TOKENIZER_JSON STRINGS_JSONL OUT_JSONL
//
// STRINGS_JSONL has one {"text": ...} per line (a line may also carry "b",
// the second text of a pair). For each text it writes ids without and with
// special tokens, type ids, tokens, and the decodes with and without special
// tokens; for each pair, ids and type ids untruncated and truncated
// (longest_first) to several lengths. Run it from a folder where
// `npm install tokenizers@0.23.2` was run (NODE_PATH may point there).
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
  const [tokPath, stringsPath, outPath] = process.argv.slice(2);
  const json = fs.readFileSync(tokPath, "utf8");
  const out = [];
  for (const line of fs.readFileSync(stringsPath, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const tok = Tokenizer.fromString(json);
    if (c.b === undefined) {
      const plain = await tok.encode(c.text, null, { addSpecialTokens: false });
      const full = await tok.encode(c.text, null, { addSpecialTokens: true });
      out.push({
        text: c.text,
        ids: plain.getIds(),
        ids_with_special: full.getIds(),
        type_ids: full.getTypeIds(),
        tokens: plain.getTokens(),
        decoded: await tok.decode(full.getIds(), false),
        decoded_skip_special: await tok.decode(full.getIds(), true),
      });
      continue;
    }
    const pair = { text: c.text, b: c.b, truncated: {} };
    const full = await tok.encode(c.text, c.b, { addSpecialTokens: true });
    pair.ids = full.getIds();
    pair.type_ids = full.getTypeIds();
    for (const max of [8, 9, 12, 16, 33]) {
      const t = Tokenizer.fromString(json);
      t.setTruncation(max, { strategy: "LongestFirst" });
      const e = await t.encode(c.text, c.b, { addSpecialTokens: true });
      pair.truncated[max] = { ids: e.getIds(), type_ids: e.getTypeIds() };
    }
    out.push(pair);
  }
  fs.writeFileSync(outPath, out.map((o) => JSON.stringify(o)).join("\n") + "\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
