// Error answers: OpenAI's error JSON with the right status, and the server survives all of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { BASE, KEY_BASE, KEY, SMALL_BASE, MODEL, post } from './helpers.mjs';

const client = new OpenAI({ baseURL: BASE + '/v1', apiKey: 'unused', maxRetries: 0 });

function isOpenAiError(j) {
  assert.ok(j && j.error && typeof j.error.message === 'string' && j.error.message.length > 0, JSON.stringify(j));
  assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error);
}

test('malformed JSON is 400', async () => {
  const r = await post(BASE, '/v1/chat/completions', '{"model": ');
  assert.equal(r.status, 400);
  isOpenAiError(r.json);
});

test('a field of the wrong type is 400 naming it', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], temperature: 'hot' }),
    (e) => e.status === 400 && /temperature/.test(e.message));
  const r = await post(BASE, '/v1/completions', { prompt: 'x', max_tokens: 'many' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'max_tokens');
  const m = await post(BASE, '/v1/chat/completions', { messages: 'hello' });
  assert.equal(m.status, 400);
  assert.equal(m.json.error.param, 'messages');
});

test('prompt plus max_tokens beyond the context is 400 context_length_exceeded', async () => {
  await assert.rejects(
    client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 1000000 }),
    (e) => e.status === 400 && e.code === 'context_length_exceeded');
  const long = 'Once upon a time '.repeat(2000);
  const r = await post(BASE, '/v1/completions', { prompt: long, max_tokens: 1 });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'context_length_exceeded');
});

test('unknown model is 404', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e.status === 404 && e.code === 'model_not_found');
});

test('missing or wrong API key is 401; the right one works', async () => {
  const none = await post(KEY_BASE, '/v1/models', {});
  assert.equal((await fetch(KEY_BASE + '/v1/models')).status, 401);
  const wrong = await fetch(KEY_BASE + '/v1/models', { headers: { authorization: 'Bearer nope' } });
  assert.equal(wrong.status, 401);
  isOpenAiError(await wrong.json());
  const good = new OpenAI({ baseURL: KEY_BASE + '/v1', apiKey: KEY, maxRetries: 0 });
  const list = await good.models.list();
  assert.equal(list.data.length, 1);
  const bad = new OpenAI({ baseURL: KEY_BASE + '/v1', apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e.status === 401);
  assert.ok(none.status === 401 || none.status === 405);
  assert.equal((await fetch(KEY_BASE + '/health')).status, 200);
});

test('a body over the limit is 413', async () => {
  const big = JSON.stringify({ prompt: 'x'.repeat(9 << 20) });
  const r = await post(BASE, '/v1/completions', big);
  assert.equal(r.status, 413);
  isOpenAiError(r.json);
});

test('a full queue answers 429 with Retry-After', async () => {
  const body = { prompt: 'Once upon a time', max_tokens: 200, temperature: 0 };
  const rs = await Promise.all(Array.from({ length: 8 }, () => post(SMALL_BASE, '/v1/completions', body)));
  const statuses = rs.map((r) => r.status);
  assert.ok(statuses.includes(200), statuses.join(','));
  const refused = rs.filter((r) => r.status === 429);
  assert.ok(refused.length > 0, statuses.join(','));
  for (const r of refused) {
    assert.equal(r.headers.get('retry-after'), '1');
    isOpenAiError(r.json);
  }
});

test('unknown routes are 404 and the server still answers afterwards', async () => {
  const r = await fetch(BASE + '/v1/nothing');
  assert.equal(r.status, 404);
  const bad = await post(BASE, '/v1/completions', { prompt: [[-5, 99999999]] });
  assert.equal(bad.status, 400);
  const nan = await post(BASE, '/v1/completions', '{"prompt": "x", "temperature": 1e999}');
  assert.ok(nan.status === 400);
  const h = await fetch(BASE + '/health');
  assert.equal(h.status, 200);
});
