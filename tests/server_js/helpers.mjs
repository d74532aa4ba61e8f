// Shared helpers for the server tests: where the server is, and the reference text.
import { readFileSync } from 'node:fs';

export const BASE = process.env.IGNIS_URL;          // e.g. http://127.0.0.1:PORT
export const KEY_BASE = process.env.IGNIS_KEY_URL;  // a second server started with --api-key
export const KEY = process.env.IGNIS_KEY;
export const SMALL_BASE = process.env.IGNIS_SMALL_URL;  // --max-seqs 1 --max-queue 1
export const MODEL = process.env.IGNIS_MODEL_NAME;

// karpathy's published greedy output of stories260K (the reference), after "Once upon a time".
export function referenceContinuation() {
  const md = readFileSync(process.env.IGNIS_SHARED_DIR + '/models/stories260K.md', 'utf8');
  const m = md.match(/-t 0\.0\n([\s\S]*?)\n```/);
  const text = m[1];
  return text.slice('Once upon a time'.length);
}

export async function post(base, path, body, headers = {}) {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* SSE or error */ }
  return { status: r.status, headers: r.headers, text, json };
}

export async function metrics(base) {
  const r = await fetch(base + '/metrics');
  const text = await r.text();
  const get = (name) => {
    const line = text.split('\n').find((l) => l.startsWith(name + '{') || l.startsWith(name + ' '));
    return line ? Number(line.split(' ').pop()) : NaN;
  };
  return { text, get };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
