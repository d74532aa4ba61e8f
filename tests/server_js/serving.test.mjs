// Serving behaviour: SSE framing, disconnects, metrics, prefix reuse, many connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { BASE, MODEL, post, metrics, sleep } from './helpers.mjs';

test('SSE framing: data lines, then data: [DONE]', async () => {
  const r = await post(BASE, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 5, temperature: 0, stream: true });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const events = r.text.split('\n\n').filter((e) => e.length);
  assert.equal(events[events.length - 1], 'data: [DONE]');
  for (const e of events.slice(0, -1)) {
    assert.ok(e.startsWith('data: '), e);
    const j = JSON.parse(e.slice(6));
    assert.equal(j.object, 'text_completion');
    assert.equal(j.model, MODEL);
  }
});

test('a client that disconnects mid-stream frees its KV blocks', async () => {
  const ac = new AbortController();
  try {
    const res = await fetch(BASE + '/v1/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 2000, temperature: 0, stream: true, ignore_eos: true }),
    });
    const reader = res.body.getReader();
    await reader.read();
    const m = await metrics(BASE);
    assert.ok(m.get('ignis:kv_cache_usage_perc') > 0, 'the request should hold KV blocks while it runs');
    assert.equal(m.get('ignis:num_requests_running'), 1);
  } finally {
    ac.abort();
  }
  let freed = false;
  let m;
  for (let i = 0; i < 100 && !freed; i++) {
    await sleep(20);
    m = await metrics(BASE);
    freed = m.get('ignis:num_requests_running') === 0 && m.get('ignis:kv_cache_usage_perc') === 0;
  }
  assert.ok(freed, m.text.split('\n').filter((l) => /running|usage/.test(l)).join('\n'));
  // Cancelled, not finished: it stopped long before its 2000 tokens.
  const cancelled = Number((m.text.match(/ignis:request_success_total\{[^}]*finished_reason="cancelled"\} (\d+)/) || [])[1]);
  assert.ok(cancelled >= 1, 'the disconnected request should count as cancelled');
});

test('metrics expose the vLLM set and count tokens', async () => {
  const before = await metrics(BASE);
  await post(BASE, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 7, temperature: 0 });
  const after = await metrics(BASE);
  for (const name of ['ignis:num_requests_running', 'ignis:num_requests_waiting', 'ignis:kv_cache_usage_perc',
    'ignis:prefix_cache_queries_total', 'ignis:prefix_cache_hits_total', 'ignis:prompt_tokens_total',
    'ignis:generation_tokens_total', 'ignis:time_to_first_token_seconds_count', 'ignis:inter_token_latency_seconds_count',
    'ignis:e2e_request_latency_seconds_count', 'ignis:request_queue_time_seconds_count']) {
    assert.ok(!Number.isNaN(after.get(name)), name);
  }
  assert.equal(after.get('ignis:generation_tokens_total') - before.get('ignis:generation_tokens_total'), 7);
  assert.match(after.text, /ignis:request_success_total\{[^}]*finished_reason="length"\} \d+/);
  assert.ok(after.get('ignis:e2e_request_latency_seconds_count') > before.get('ignis:e2e_request_latency_seconds_count'));
});

test('a repeated system prompt is prefilled once (prefix cache hits)', async () => {
  const system = 'Once upon a time, there was a little girl named Lily. '.repeat(12);
  const ask = (q) => post(BASE, '/v1/chat/completions', {
    messages: [{ role: 'system', content: system }, { role: 'user', content: q }], max_tokens: 2, temperature: 0 });
  await ask('She loved to play.');
  const m0 = await metrics(BASE);
  const r = await ask('One day, she saw a ball.');
  assert.equal(r.status, 200);
  const m1 = await metrics(BASE);
  const hits = m1.get('ignis:prefix_cache_hits_total') - m0.get('ignis:prefix_cache_hits_total');
  const prompt = r.json.usage.prompt_tokens;
  assert.ok(hits >= 0.8 * prompt - 32, `hits ${hits} of ${prompt} prompt tokens`);
  assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, hits);
});

test('1000 idle keep-alive connections and 256 concurrent streams', async () => {
  const url = new URL(BASE);
  const idle = [];
  for (let i = 0; i < 1000; i++) {
    idle.push(await new Promise((resolve, reject) => {
      const s = net.connect(Number(url.port), url.hostname, () => resolve(s));
      s.on('error', reject);
    }));
  }
  const one = () => post(BASE, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0, stream: true });
  const rs = await Promise.all(Array.from({ length: 256 }, one));
  for (const r of rs) {
    assert.equal(r.status, 200);
    assert.ok(r.text.endsWith('data: [DONE]\n\n'));
  }
  const h = await fetch(BASE + '/health');
  assert.equal(h.status, 200);
  for (const s of idle) s.destroy();
});
