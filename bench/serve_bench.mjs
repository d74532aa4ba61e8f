#!/usr/bin/env node
// Load generator for an OpenAI-compatible server (ignis serve, llama-server, vLLM), in the style of
// vLLM's `bench serve`: N requests at a fixed concurrency, streamed, reporting request throughput,
// output tokens/s, and TTFT / inter-token latency percentiles.
//
//   node bench/serve_bench.mjs --url http://127.0.0.1:8080 --concurrency 1,4,16,64 --requests 64 \
//        --max-tokens 128 [--prompt-tokens 32] [--system-tokens 0] [--seed 0] [--model NAME] [--json]
//
// Prompts are synthetic text (about one token per word), different for every request of every run
// (concurrency level) and --seed, so no server is served from a prompt cache filled by an earlier run;
// with --system-tokens N every request starts with the same N-word system prompt (to measure prefix
// reuse). Output tokens are counted from the server's usage (include_usage). When the server has
// Prometheus /metrics (ignis; llama-server with --metrics), the table also shows the prompt tokens it
// computed during each run and, for ignis, its prefix-cache hits / queries (in tokens).
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    concurrency: { type: 'string', default: '1,4,16' },
    requests: { type: 'string', default: '32' },
    'max-tokens': { type: 'string', default: '64' },
    'prompt-tokens': { type: 'string', default: '32' },
    'system-tokens': { type: 'string', default: '0' },
    seed: { type: 'string', default: '0' },
    model: { type: 'string', default: '' },
    chat: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});

const words = 'the quick brown fox jumps over a lazy dog while seven small birds sing near an old river'.split(' ');
function text(n, seed) {
  const s = [];
  let x = (Math.imul(seed | 0, 0x9e3779b1) + 1) >>> 0;
  for (let i = 0; i < n; i++) {  // mulberry32
    x = (x + 0x6d2b79f5) >>> 0;
    let t = Math.imul(x ^ (x >>> 15), 1 | x);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    s.push(words[((t ^ (t >>> 14)) >>> 0) % words.length]);
  }
  return s.join(' ');
}

// Counters of a Prometheus /metrics page whose names end in one of `suffixes`, summed over labels.
async function counters() {
  const want = ['prompt_tokens_total', 'prefix_cache_queries_total', 'prefix_cache_hits_total'];
  const out = {};
  try {
    const res = await fetch(a.url + '/metrics');
    if (res.status !== 200) return null;
    for (const line of (await res.text()).split('\n')) {
      if (line.startsWith('#')) continue;
      const m = line.match(/^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+([-+0-9.eE]+)/);
      if (!m) continue;
      const key = want.find((w) => m[1].endsWith(w));
      if (key) out[key] = (out[key] ?? 0) + Number(m[3]);
    }
  } catch { return null; }
  return out;
}

function pct(xs, p) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function one(i, run) {
  const system = Number(a['system-tokens']) > 0 ? text(Number(a['system-tokens']), 7) : '';
  const user = text(Number(a['prompt-tokens']), 1 + i + 100000 * run + 10000000 * Number(a.seed));
  const path = a.chat ? '/v1/chat/completions' : '/v1/completions';
  const body = { max_tokens: Number(a['max-tokens']), temperature: 0, stream: true, ignore_eos: true,
    stream_options: { include_usage: true } };
  if (a.model) body.model = a.model;
  if (a.chat) body.messages = [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: user }];
  else body.prompt = system + (system ? '\n' : '') + user;
  const t0 = performance.now();
  const res = await fetch(a.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const dec = new TextDecoder();
  let buf = '';
  let first = null;
  let last = null;
  const itl = [];
  let usage = null;
  for await (const part of res.body) {
    buf += dec.decode(part, { stream: true });
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k);
      buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) usage = j.usage;
      const got = j.choices && j.choices.length && ((j.choices[0].text ?? j.choices[0].delta?.content ?? '') !== '');
      if (got) {
        const now = performance.now();
        if (first === null) first = now; else itl.push((now - last) / 1000);
        last = now;
      }
    }
  }
  const t1 = performance.now();
  return { ttft: (first - t0) / 1000, itl, e2e: (t1 - t0) / 1000, out: usage ? usage.completion_tokens : 0 };
}

async function run(conc, n, run_index) {
  let next = 0;
  const results = [];
  const m0 = await counters();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < n) { const i = next++; results.push(await one(i, run_index)); }
  }));
  const dur = (performance.now() - t0) / 1000;
  const m1 = await counters();
  const delta = (k) => (m0 && m1 && k in m0 && k in m1) ? m1[k] - m0[k] : null;
  const out = results.reduce((s, r) => s + r.out, 0);
  const itl = results.flatMap((r) => r.itl);
  return {
    concurrency: conc, requests: n, duration_s: dur, request_throughput: n / dur, output_tok_s: out / dur,
    ttft_p50_ms: 1000 * pct(results.map((r) => r.ttft), 50), ttft_p99_ms: 1000 * pct(results.map((r) => r.ttft), 99),
    itl_p50_ms: 1000 * pct(itl, 50), itl_p99_ms: 1000 * pct(itl, 99),
    prompt_tokens_computed: delta('prompt_tokens_total'), prefix_queries: delta('prefix_cache_queries_total'),
    prefix_hits: delta('prefix_cache_hits_total'),
  };
}

const rows = [];
for (const [k, c] of a.concurrency.split(',').map(Number).entries()) rows.push(await run(c, Math.max(Number(a.requests), c), k));
const opt = (x) => (x === null ? '-' : String(x));
if (a.json) {
  for (const r of rows) console.log(JSON.stringify(r));
} else {
  console.log('| concurrency | requests | req/s | output tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | prompt tokens computed | prefix hits / queries |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(`| ${r.concurrency} | ${r.requests} | ${r.request_throughput.toFixed(2)} | ${r.output_tok_s.toFixed(1)} | ` +
      `${r.ttft_p50_ms.toFixed(1)} | ${r.ttft_p99_ms.toFixed(1)} | ${r.itl_p50_ms.toFixed(1)} | ${r.itl_p99_ms.toFixed(1)} | ` +
      `${opt(r.prompt_tokens_computed)} | ${opt(r.prefix_hits)} / ${opt(r.prefix_queries)} |`);
}
