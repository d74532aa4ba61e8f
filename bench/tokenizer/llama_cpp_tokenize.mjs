// Times llama.cpp's tokenizer (through node-llama-cpp, vocab-only load) on a text file, best of R,
// and writes the ids of the last run (one per line).
//   node llama_cpp_tokenize.mjs VOCAB.gguf TEXT_FILE [REPEATS] [IDS_OUT]
import fs from "node:fs";
import {getLlama} from "node-llama-cpp";

const [modelPath, textPath, repeatsArg, idsOut] = process.argv.slice(2);
const repeats = Math.max(1, parseInt(repeatsArg ?? "5", 10));
const text = fs.readFileSync(textPath, "utf8");
const llama = await getLlama({gpu: false, build: "never"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
let best = Infinity, ids = [];
for (let r = 0; r < repeats; r++) {
  const t0 = process.hrtime.bigint();
  ids = model.tokenize(text, false);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  best = Math.min(best, ms);
}
const bytes = Buffer.byteLength(text, "utf8");
console.log(`llama.cpp: ${bytes} bytes -> ${ids.length} tokens, tokenize best of ${repeats}: ${best.toFixed(1)} ms (${(bytes / best / 1e3).toFixed(1)} MB/s)`);
if (idsOut) fs.writeFileSync(idsOut, Array.from(ids).join("\n") + "\n");
await model.dispose();
await llama.dispose();
