#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// scripts/serve-load.cjs: a load run against a `tandem serve` that is already listening:
// C clients send N requests in all (each client its next one when its last one ends),
// half streamed, half whole, and the script counts errors, requests that never finished
// and the server's resident memory (VmRSS of PID) at the start, every 10% and the end.
//
//   scripts/serve-load.cjs --url http://127.0.0.1:8080 --pid PID [--clients 16]
//                          [--requests 1000] [--max-tokens 16]
// Prints one JSON object; exits 1 if any request failed or was lost.
'use strict';

const fs = require('node:fs');

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const url = args.url || 'http://127.0.0.1:8080';
const pid = args.pid;
const clients = Number(args.clients || 16);
const total = Number(args.requests || 1000);
const maxTokens = Number(args['max-tokens'] || 16);

function rssBytes() {
  if (!pid) return null;
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) * 1024 : null;
}

async function one(i) {
  const stream = i % 2 === 0;
  const body = JSON.stringify({ prompt: `Load request ${i}: ${'abc '.repeat(1 + (i % 13))}`, max_tokens: maxTokens,
    ignore_eos: true, temperature: 0, stream });
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`request ${i}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  if (stream) {
    if (!text.endsWith('data: [DONE]\n\n')) throw new Error(`request ${i}: the stream did not end with [DONE]`);
    if (text.includes('"error"')) throw new Error(`request ${i}: an error event: ${text.slice(0, 200)}`);
  } else if (JSON.parse(text).usage.completion_tokens !== maxTokens) {
    throw new Error(`request ${i}: ${JSON.parse(text).usage.completion_tokens} tokens, not ${maxTokens}`);
  }
}

(async () => {
  const rss = [rssBytes()];
  let next = 0, done = 0, failed = 0;
  const errors = [];
  const t0 = Date.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < total) {
      const i = next++;
      try {
        await one(i);
      } catch (e) {
        failed++;
        if (errors.length < 5) errors.push(e.message);
      }
      done++;
      if (done % Math.max(1, Math.floor(total / 10)) === 0) rss.push(rssBytes());
    }
  }));
  const out = { clients, requests: total, max_tokens: maxTokens, finished: done, failed, lost: total - done,
    seconds: (Date.now() - t0) / 1e3, rss_bytes: rss, errors };
  console.log(JSON.stringify(out, null, 2));
  process.exit(failed || done !== total ? 1 : 0);
})();
