#!/usr/bin/env node
// Resident-memory check for a long-running server: N sequential short requests (completions and chat,
// streamed and not, each with its own prompt), sampling the server process's VmRSS from
// /proc/PID/status every --every requests. Prints one line per sample and the growth from the first
// sample after --warmup requests to the last; exits 1 if that growth exceeds --max-growth-kb (when given).
//
//   node bench/serve_rss.mjs --url http://127.0.0.1:8080 --pid PID [--requests 10000] [--every 500]
//        [--warmup 1000] [--max-tokens 4] [--max-growth-kb N]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    pid: { type: 'string' },
    requests: { type: 'string', default: '10000' },
    every: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '1000' },
    'max-tokens': { type: 'string', default: '4' },
    'max-growth-kb': { type: 'string', default: '' },
  },
});
if (!a.pid) { console.error('serve_rss.mjs: --pid is required'); process.exit(2); }

function rss_kb() {
  const m = readFileSync(`/proc/${a.pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  if (!m) throw new Error(`/proc/${a.pid}/status has no VmRSS line`);
  return Number(m[1]);
}

const words = 'once upon a time there was a little girl who liked to play in the park with her dog'.split(' ');
function prompt(i) {
  const s = [];
  let x = (Math.imul(i + 1, 0x9e3779b1) >>> 0) || 1;
  const n = 3 + (i % 13);
  for (let k = 0; k < n; k++) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; s.push(words[x % words.length]); }
  return s.join(' ');
}

async function one(i) {
  const chat = i % 2 === 1;
  const stream = i % 4 >= 2;
  const body = { max_tokens: Number(a['max-tokens']), temperature: i % 3 === 0 ? 0 : 0.8, seed: i, stream };
  if (chat) body.messages = [{ role: 'user', content: prompt(i) }];
  else body.prompt = prompt(i);
  const res = await fetch(a.url + (chat ? '/v1/chat/completions' : '/v1/completions'), {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`request ${i}: HTTP ${res.status}: ${text}`);
}

const n = Number(a.requests), every = Number(a.every), warmup = Number(a.warmup);
const samples = [];
const t0 = performance.now();
console.log(`requests  rss_kb  (pid ${a.pid})`);
samples.push([0, rss_kb()]);
console.log(`${0}  ${samples[0][1]}`);
for (let i = 0; i < n; i++) {
  await one(i);
  if ((i + 1) % every === 0 || i + 1 === n) {
    samples.push([i + 1, rss_kb()]);
    console.log(`${i + 1}  ${samples.at(-1)[1]}`);
  }
}
const dur = (performance.now() - t0) / 1000;
const base = samples.find(([k]) => k >= warmup) ?? samples[0];
const last = samples.at(-1);
const growth = last[1] - base[1];
console.log(`${n} requests in ${dur.toFixed(1)} s (${(n / dur).toFixed(0)} req/s); RSS ${base[1]} kB after ${base[0]} ` +
  `requests -> ${last[1]} kB after ${last[0]}: growth ${growth} kB (${(100 * growth / base[1]).toFixed(2)}%)`);
if (a['max-growth-kb'] !== '' && growth > Number(a['max-growth-kb'])) {
  console.error(`serve_rss.mjs: RSS grew by ${growth} kB, more than --max-growth-kb ${a['max-growth-kb']}`);
  process.exit(1);
}
