// The official openai client against ignis serve (stories260K, a trained model with a reference text).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { BASE, MODEL, referenceContinuation, post } from './helpers.mjs';

const client = new OpenAI({ baseURL: BASE + '/v1', apiKey: 'unused', maxRetries: 0 });
const ref = referenceContinuation();

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, MODEL);
  assert.equal(list.data[0].object, 'model');
});

test('greedy completion reproduces the reference text', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 48, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  const text = r.choices[0].text;
  assert.ok(text.length > 40, text);
  assert.ok(ref.startsWith(text), `not a prefix of the reference:\n${text}\n---\n${ref}`);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 48);
  assert.equal(r.usage.prompt_tokens, 5);  // [BOS, Once, upon, a, time]
  assert.equal(r.usage.total_tokens, 53);
});

test('streamed completion equals the non-streamed one', async () => {
  const params = { model: MODEL, prompt: 'Once upon a time', max_tokens: 30, temperature: 0 };
  const whole = await client.completions.create(params);
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].text;
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 30);
});

test('chat completion, streamed and not, agree', async () => {
  const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Once upon a time' }];
  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0 });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.equal(whole.choices[0].finish_reason, 'length');
  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 24, temperature: 0, stream: true });
  let text = '';
  let sawRole = false;
  let finish = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    const d = chunk.choices[0].delta;
    if (d.role) { assert.equal(d.role, 'assistant'); sawRole = true; }
    if (d.content) text += d.content;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.ok(sawRole);
  assert.equal(finish, 'length');
  assert.equal(text, whole.choices[0].message.content);
});

test('content given as a list of text parts is accepted', async () => {
  const a = await client.chat.completions.create({ model: MODEL, max_tokens: 8, temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Once upon a time' }] }] });
  const b = await client.chat.completions.create({ model: MODEL, max_tokens: 8, temperature: 0,
    messages: [{ role: 'user', content: 'Once upon a time' }] });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

test('n > 1 with a seed is reproducible and the choices differ', async () => {
  const params = { model: MODEL, prompt: 'Once upon a time', max_tokens: 24, temperature: 1.0, n: 3, seed: 1234 };
  const a = await client.completions.create(params);
  const b = await client.completions.create(params);
  assert.equal(a.choices.length, 3);
  assert.deepEqual(a.choices.map((c) => c.index), [0, 1, 2]);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.ok(new Set(a.choices.map((c) => c.text)).size > 1, 'three samples should not all be equal');
  assert.equal(a.usage.completion_tokens, 72);
});

test('chat logprobs: top_logprobs per token, greedy token is the top one', async () => {
  const r = await client.chat.completions.create({ model: MODEL, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3,
    messages: [{ role: 'user', content: 'Once upon a time' }] });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 6);
  for (const t of content) {
    assert.equal(t.top_logprobs.length, 3);
    assert.ok(t.logprob <= 0);
    assert.equal(t.logprob, t.top_logprobs[0].logprob);
    assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
    assert.ok(Array.isArray(t.bytes));
  }
});

test('completions echo with logprobs scores the prompt', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 4, temperature: 0, echo: true, logprobs: 2 });
  const c = r.choices[0];
  assert.ok(c.text.startsWith('Once upon a time'));
  const lp = c.logprobs;
  assert.equal(lp.tokens.length, 5 + 4);
  assert.equal(lp.token_logprobs[0], null);
  for (let i = 1; i < lp.tokens.length; i++) assert.ok(lp.token_logprobs[i] <= 0);
  assert.equal(lp.text_offset.length, lp.tokens.length);
});

test('a stop string ends the text before it', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 60, temperature: 0, stop: [' Lily'] });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].text, ref.slice(0, ref.indexOf(' Lily')));
});

test('a greedy request gives the same tokens alone and batched with others', async () => {
  const params = { model: MODEL, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
  const alone = await client.completions.create(params);
  const others = ['The cat', 'Tom had a', 'One day', 'Lily and Ben', 'The sun was', 'A big dog', 'Mom said'].map((p) =>
    client.completions.create({ ...params, prompt: p }));
  const together = await Promise.all([client.completions.create(params), ...others]);
  assert.equal(together[0].choices[0].text, alone.choices[0].text);
});

test('tokenize and detokenize round trip', async () => {
  const t = await post(BASE, '/tokenize', { prompt: 'Once upon a time' });
  assert.equal(t.status, 200);
  assert.deepEqual(t.json.tokens, [1, 403, 407, 261, 378]);
  const d = await post(BASE, '/detokenize', { tokens: t.json.tokens.slice(1) });
  assert.equal(d.status, 200);
  assert.equal(d.json.prompt, 'Once upon a time');
});
