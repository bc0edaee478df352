// SPDX-License-Identifier: Apache-2.0
// tests/node/openai_client.cjs: the official OpenAI Node client (npm package `openai`,
// installed by scripts/setup.sh test into the build tree) against `tandem serve` on a tiny
// synthetic Qwen3: chat and completions, whole and streamed (the streamed text equals the
// whole one), logprobs, /v1/models, eight parallel streams each equal to the request alone,
// tools (accepted, shown, streamed in the shape of the whole reply, arguments streamed in
// pieces; a tool round trip), the deprecated functions / function_call, echo (with the
// prompt's logprobs: whole, streamed, max_tokens 0, n = 2, from the prefix cache) and best_of,
// n = 3 choices (whole, streamed, and cancelled together by a hang-up), logit_bias and the
// penalties, the gateway metrics in vLLM's names, and the client's error classes for a wrong
// model, a bad value, a wrong API key and an overlong request; images (image_url parts with
// data: URLs) to a synthetic GLM-OCR with its vision tower give the text of `tandem ocr` on
// the same image, whole and streamed (and a one-page PDF as a file part the text of `tandem
// ocr` on that PDF), and a two-image request beside a text-only one each give their text
// alone, while a model without an image encoder refuses images with a 400 and keeps serving.
// Run by ctest; exits 77 (skipped) when the client is not installed.
//
//   TANDEM_BIN=build/bin/tandem OPENAI_MODULE=build/node/node_modules/openai node openai_client.cjs
'use strict';

const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const assert = require('node:assert/strict');

const bin = process.env.TANDEM_BIN;
const modulePath = process.env.OPENAI_MODULE;
if (!bin || !modulePath) {
  console.error('set TANDEM_BIN and OPENAI_MODULE');
  process.exit(2);
}
if (!fs.existsSync(modulePath)) {
  console.error(`the openai client is not installed at ${modulePath} (scripts/setup.sh test installs it)`);
  process.exit(77);
}
const { OpenAI } = require(path.resolve(modulePath));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tandem-openai-'));
const model = path.join(dir, 'tiny.gguf');
execFileSync(bin, ['synth', '-o', model, '--type', 'f16'], { stdio: 'ignore' });

// Starts `tandem serve` on a free port; resolves with { proc, port } once it listens.
function serve(extra, served = model) {
  const proc = spawn(bin, ['serve', '-m', served, '--port', '0', '--temp', '0', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) resolve({ proc, port: Number(m[1]), log: () => log });
    });
    proc.on('exit', (code) => reject(new Error(`tandem serve exited with ${code}: ${log}`)));
  });
}

function stop(server) {
  return new Promise((resolve) => {
    server.proc.removeAllListeners('exit');
    server.proc.on('exit', (code) => resolve(code));
    server.proc.kill('SIGTERM');
  });
}

async function expectError(promise, cls, status, what) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof cls, `${what}: expected ${cls.name}, got ${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, status, `${what}: status`);
    return e;
  }
  assert.fail(`${what}: no error`);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('models lists the served model', async (client) => {
  const models = await client.models.list();
  const ids = [];
  for await (const m of models) ids.push(m.id);
  assert.deepEqual(ids, ['tiny']);
});

test('a chat completion streamed gives the text of the whole one', async (client) => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Say something' }], max_tokens: 16 };
  const whole = await client.chat.completions.create(req);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 0);
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (!chunk.choices.length) continue;
    text += chunk.choices[0].delta.content || '';
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
});

test('a completion streamed gives the text of the whole one', async (client) => {
  const req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 20, ignore_eos: true };
  const whole = await client.completions.create(req);
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.usage.completion_tokens, 20);
  let text = '';
  for await (const chunk of await client.completions.create({ ...req, stream: true })) text += chunk.choices[0].text;
  assert.equal(text, whole.choices[0].text);
});

test('logprobs come with each token of a chat completion', async (client) => {
  const r = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, ignore_eos: true,
    logprobs: true, top_logprobs: 3,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, 5);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].logprob, t.logprob, 'greedy takes the most likely token');
  }
  assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
});

test('eight parallel streams each give the text of the request alone', async (client) => {
  const prompts = Array.from({ length: 8 }, (_, i) => `Stream ${i}: ${'xyz'.repeat(i + 1)}`);
  const alone = [];
  for (const p of prompts)
    alone.push((await client.completions.create({ model: 'tiny', prompt: p, max_tokens: 16, ignore_eos: true })).choices[0].text);
  const together = await Promise.all(prompts.map(async (p) => {
    let text = '';
    const s = await client.completions.create({ model: 'tiny', prompt: p, max_tokens: 16, ignore_eos: true, stream: true });
    for await (const chunk of s) text += chunk.choices[0].text;
    return text;
  }));
  assert.deepEqual(together, alone);
});

// Tool calls with tool_choice 'auto': a random model writes no calls, so these check that the requests
// are taken and the replies keep their shape (the parsing of calls is proven by tool_call_parser_test).
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather at a place.',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

function checkCalls(calls) {
  for (const c of calls || []) {
    assert.match(c.id, /^call_/);
    assert.equal(c.type, 'function');
    assert.ok(['get_weather', 'get_time'].includes(c.function.name));
    assert.equal(typeof JSON.parse(c.function.arguments), 'object');
  }
}

test('tools are shown to the model and its reply streams as it comes whole', async (client) => {
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  const plain = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 1 });
  const req = { model: 'tiny', messages, tools, max_tokens: 12, ignore_eos: true };
  const whole = await client.chat.completions.create(req);
  assert.ok(whole.usage.prompt_tokens > plain.usage.prompt_tokens + 20, 'the tools are in the prompt');
  const msg = whole.choices[0].message;
  checkCalls(msg.tool_calls);
  assert.ok(['length', 'tool_calls'].includes(whole.choices[0].finish_reason));
  let text = '';
  const calls = [];
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
    const d = chunk.choices[0].delta;
    text += d.content || '';
    for (const tc of d.tool_calls || []) {
      if (tc.id) calls[tc.index] = { id: tc.id, type: tc.type, function: { name: tc.function.name, arguments: '' } };
      calls[tc.index].function.arguments += tc.function.arguments || '';
    }
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, msg.content || '');
  assert.equal(calls.length, (msg.tool_calls || []).length);
  checkCalls(calls);
  assert.equal(finish, whole.choices[0].finish_reason);

  const none = await client.chat.completions.create({ ...req, tool_choice: 'none', max_tokens: 1 });
  assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens, "tool_choice 'none' shows no tools");
});

test('a tool round trip in the history is accepted', async (client) => {
  const r = await client.chat.completions.create({
    model: 'tiny', max_tokens: 4, parallel_tool_calls: false,
    messages: [
      { role: 'user', content: 'Weather in Paris and the time?' },
      { role: 'assistant', content: null, tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"location": "Paris"}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '{"temp": 21}' },
      { role: 'tool', tool_call_id: 'call_b', content: '10:00' },
    ],
  });
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.choices[0].message.tool_calls === undefined || r.choices[0].message.tool_calls.length <= 1);
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'x' }], tools };
  const e = await expectError(client.chat.completions.create({ ...req, tool_choice: { type: 'function', function: { name: 'nope' } } }),
    OpenAI.BadRequestError, 400, 'a tool_choice naming no offered tool');
  assert.equal(e.param, 'tool_choice');
  const f = await expectError(client.chat.completions.create({ ...req, tools: [{ type: 'function', function: { name: 'a b' } }] }),
    OpenAI.BadRequestError, 400, 'a bad tool name');
  assert.equal(f.param, 'tools[0].function.name');
});

// tool_choice "required" and a named function hold the output to the family's call syntax
// with a grammar, so even a random model calls a tool, with arguments valid for its schema.
// One call each (parallel_tool_calls false) and bounded strings, so that every reply closes
// within the tiny model's context, which the two tools' definitions mostly fill.
test("tool_choice 'required' and a named function make the model call, whole and streamed", async (client) => {
  const bounded = [
    { type: 'function', function: { name: 'get_weather',
      parameters: { type: 'object', properties: { location: { type: 'string', maxLength: 10 } }, required: ['location'] } } },
    { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
  ];
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Weather?' }], tools: bounded, parallel_tool_calls: false };
  const required = await client.chat.completions.create({ ...req, tool_choice: 'required' });
  assert.equal(required.choices[0].finish_reason, 'tool_calls');
  const calls = required.choices[0].message.tool_calls;
  assert.equal(calls.length, 1);
  checkCalls(calls);
  for (const c of calls)
    if (c.function.name === 'get_weather') assert.equal(typeof JSON.parse(c.function.arguments).location, 'string');

  const named = await client.chat.completions.create({ ...req,
    tool_choice: { type: 'function', function: { name: 'get_weather' } } });
  assert.equal(named.choices[0].finish_reason, 'tool_calls');
  const [call] = named.choices[0].message.tool_calls;
  assert.equal(named.choices[0].message.tool_calls.length, 1);
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments).location, 'string');

  const streamed = [];
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...req, tool_choice: 'required', stream: true })) {
    for (const tc of chunk.choices[0].delta.tool_calls || []) {
      if (tc.id) streamed[tc.index] = { name: tc.function.name, arguments: '' };
      streamed[tc.index].arguments += tc.function.arguments || '';
    }
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(streamed, calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments })));

  // Qwen3's Hermes JSON calls stream their arguments as they are generated: the pieces grow
  // the string, and add up to the arguments of the whole reply
  const pieces = [];
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true,
    tool_choice: { type: 'function', function: { name: 'get_weather' } } })) {
    for (const tc of chunk.choices[0].delta.tool_calls || []) if (!tc.id) pieces.push(tc.function.arguments);
  }
  assert.ok(pieces.length > 2, `the arguments came in ${pieces.length} pieces`);
  assert.equal(pieces.join(''), call.function.arguments);
});

// The deprecated functions / function_call: tools and tool_choice under OpenAI's legacy reply
// shape (message.function_call, finish_reason 'function_call').
test('functions and function_call give the legacy function_call reply, whole and streamed', async (client) => {
  const functions = [{ name: 'get_weather',
    parameters: { type: 'object', properties: { location: { type: 'string', maxLength: 10 } }, required: ['location'] } }];
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'Weather?' }], functions,
    function_call: { name: 'get_weather' } };
  const whole = await client.chat.completions.create(req);
  const msg = whole.choices[0].message;
  assert.equal(whole.choices[0].finish_reason, 'function_call');
  assert.equal(msg.tool_calls, undefined);
  assert.equal(msg.content, null);
  assert.equal(msg.function_call.name, 'get_weather');
  assert.equal(typeof JSON.parse(msg.function_call.arguments).location, 'string');

  const streamed = { name: '', arguments: '' };
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
    const fc = chunk.choices[0].delta.function_call;
    if (fc && fc.name) streamed.name += fc.name;
    if (fc) streamed.arguments += fc.arguments || '';
    assert.equal(chunk.choices[0].delta.tool_calls, undefined);
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(finish, 'function_call');
  assert.deepEqual(streamed, msg.function_call);

  // a function result in the history, in the deprecated form
  const turn = await client.chat.completions.create({ model: 'tiny', max_tokens: 2, functions, function_call: 'none',
    messages: [{ role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"location": "Oslo"}' } },
      { role: 'function', name: 'get_weather', content: '{"temp": 3}' }] });
  assert.equal(turn.object, 'chat.completion');
  const both = await expectError(client.chat.completions.create({ ...req, tools }), OpenAI.BadRequestError, 400,
    'functions beside tools');
  assert.equal(both.param, 'functions');
  assert.match(both.message, /'functions' and 'tools'/);
});

// echo: the prompt before the completion, whole and streamed (in the first chunk); a prompt
// of token ids echoes their text.
test('echo puts the prompt before the completion, whole and streamed', async (client) => {
  const req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 6, ignore_eos: true };
  const plain = await client.completions.create(req);
  const echoed = await client.completions.create({ ...req, echo: true });
  assert.equal(echoed.choices[0].text, 'Once upon a time' + plain.choices[0].text);
  assert.equal(echoed.usage.completion_tokens, 6);
  const chunks = [];
  for await (const chunk of await client.completions.create({ ...req, echo: true, stream: true }))
    chunks.push(chunk.choices[0].text);
  assert.equal(chunks[0], 'Once upon a time');
  assert.equal(chunks.join(''), echoed.choices[0].text);

  const ids = await (await fetch(`http://127.0.0.1:${client.port}/tokenize`, {
    method: 'POST', body: JSON.stringify({ content: 'Once upon a time' }) })).json();
  const byIds = await client.completions.create({ ...req, prompt: ids.tokens, echo: true });
  assert.equal(byIds.choices[0].text, echoed.choices[0].text);
});

// echo with logprobs: the prompt's tokens' logprobs first (the first token's null: nothing
// predicts it), then the generated ones'; the same streamed (in the echoed prompt's chunk),
// for each of n = 2 choices, with max_tokens 0 (the prompt scored alone), and again once the
// prompt is in a slot's KV (computed whole again: no row comes from the prefix cache).
test('echo with logprobs scores the prompt, whole, streamed, for n choices and from the cache', async (client) => {
  const req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 6, ignore_eos: true, logprobs: 2 };
  const ids = await (await fetch(`http://127.0.0.1:${client.port}/tokenize`, {
    method: 'POST', body: JSON.stringify({ content: req.prompt }) })).json();
  const n = ids.tokens.length;
  const plain = await client.completions.create(req);
  const whole = await client.completions.create({ ...req, echo: true });
  const lp = whole.choices[0].logprobs;
  assert.equal(whole.choices[0].text, req.prompt + plain.choices[0].text);
  assert.equal(lp.tokens.length, n + 6);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  for (let i = 1; i < n; i++) {
    assert.ok(lp.token_logprobs[i] <= 0, `prompt token ${i}`);
    const alternatives = Object.values(lp.top_logprobs[i]);
    assert.ok(alternatives.length >= 1 && alternatives.length <= 2, `prompt token ${i}`);
    assert.ok(Math.max(...alternatives) >= lp.token_logprobs[i], `prompt token ${i}`);
  }
  assert.deepEqual(lp.token_logprobs.slice(n), plain.choices[0].logprobs.token_logprobs);
  assert.deepEqual(lp.tokens.slice(n), plain.choices[0].logprobs.tokens);
  assert.equal(lp.text_offset[0], 0);
  for (let i = 1; i <= n; i++)  // the prompt's pieces are ASCII: a byte is a character
    assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + lp.tokens[i - 1].length);

  // the prompt alone: max_tokens 0
  const scored = await client.completions.create({ ...req, echo: true, max_tokens: 0 });
  assert.equal(scored.choices[0].text, req.prompt);
  assert.equal(scored.choices[0].finish_reason, 'length');
  assert.equal(scored.usage.completion_tokens, 0);
  assert.deepEqual(scored.choices[0].logprobs.token_logprobs, lp.token_logprobs.slice(0, n));
  assert.deepEqual(scored.choices[0].logprobs.top_logprobs, lp.top_logprobs.slice(0, n));

  // streamed: the echoed prompt's chunk carries its logprobs
  const chunks = [];
  for await (const chunk of await client.completions.create({ ...req, echo: true, stream: true })) chunks.push(chunk);
  assert.equal(chunks[0].choices[0].text, req.prompt);
  assert.deepEqual(chunks[0].choices[0].logprobs.token_logprobs, lp.token_logprobs.slice(0, n));
  const streamed = chunks.flatMap((c) => (c.choices[0].logprobs ? c.choices[0].logprobs.token_logprobs : []));
  assert.deepEqual(streamed, lp.token_logprobs);

  // n = 2: the first choice computes the prompt's logprobs, both report them
  const two = await client.completions.create({ ...req, echo: true, n: 2 });
  assert.equal(two.choices.length, 2);
  for (const c of two.choices) assert.deepEqual(c.logprobs, lp);

  // the prompt is in a slot's KV by now: the same answer, no token taken from the cache
  const again = await client.completions.create({ ...req, echo: true });
  assert.deepEqual(again.choices[0].logprobs, lp);
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, 0);
});

// Hostile: more alternatives than the limit is a 400; a prompt as long as the context with the
// most alternatives gives one entry per token, each with at most that many.
test('echo with logprobs refuses too many alternatives and scores a long prompt', async (client) => {
  const e = await expectError(client.completions.create({ model: 'tiny', prompt: 'a', echo: true, logprobs: 21 }),
    OpenAI.BadRequestError, 400, 'logprobs 21');
  assert.equal(e.param, 'logprobs');
  const nothing = await expectError(client.completions.create({ model: 'tiny', prompt: 'a', max_tokens: 0 }),
    OpenAI.BadRequestError, 400, 'max_tokens 0 without echo');
  assert.equal(nothing.param, 'max_tokens');
  const prompt = Array.from({ length: 1000 }, (_, i) => (i * 37 + 11) % 500);
  const long = await client.completions.create({ model: 'tiny', prompt, echo: true, logprobs: 20, max_tokens: 0 });
  const lp = long.choices[0].logprobs;
  assert.equal(lp.tokens.length, prompt.length);
  assert.equal(lp.top_logprobs[0], null);
  for (let i = 1; i < prompt.length; i++) assert.ok(Object.keys(lp.top_logprobs[i]).length <= 20, `token ${i}`);
});

// best_of: best_of sequences (sequence i sampling with seed + i, as the n choices do), the n
// with the highest sum of token logprobs returned. No end-of-turn here (ignore_eos), so the
// sums of the n = 3 request's logprobs are the ones best_of ranks by.
test('best_of returns the most likely of its sequences and counts them all', async (client) => {
  const req = { model: 'tiny', prompt: 'Pick one', max_tokens: 6, ignore_eos: true,
    temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, seed: 5, speculative: { type: 'none' } };
  const all = await client.completions.create({ ...req, n: 3, logprobs: 0 });
  const sums = all.choices.map((c) => c.logprobs.token_logprobs.reduce((a, b) => a + b, 0));
  const order = [0, 1, 2].sort((a, b) => sums[b] - sums[a] || a - b);
  const best = await client.completions.create({ ...req, n: 2, best_of: 3 });
  assert.deepEqual(best.choices.map((c) => c.text), order.slice(0, 2).map((i) => all.choices[i].text));
  assert.deepEqual(best.choices.map((c) => c.index), [0, 1]);
  assert.equal(best.usage.completion_tokens, 18, 'every generated sequence is counted');
  const e = await expectError(client.completions.create({ ...req, best_of: 3, stream: true }), OpenAI.BadRequestError,
    400, 'best_of streamed');
  assert.equal(e.param, 'best_of');
});

// A schema a random model must still satisfy: every generation closes within its bounds.
const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    tags: { type: 'array', items: { enum: ['red', 'green'] }, maxItems: 3 },
  },
  required: ['name', 'age'],
  additionalProperties: false,
};

function checkPerson(text) {
  const v = JSON.parse(text);
  assert.equal(typeof v, 'object');
  assert.deepEqual(Object.keys(v).filter((k) => !['name', 'age', 'tags'].includes(k)), [], 'no other members');
  assert.equal(typeof v.name, 'string');
  assert.ok([...v.name].length <= 8, `name ${v.name} is at most 8 characters`);
  assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 120, `age ${v.age}`);
  if (v.tags !== undefined) {
    assert.ok(Array.isArray(v.tags) && v.tags.length <= 3);
    for (const t of v.tags) assert.ok(['red', 'green'].includes(t));
  }
}

test('response_format json_schema and json_object give JSON that parses and validates', async (client) => {
  const req = { model: 'tiny', messages: [{ role: 'user', content: 'A person, as JSON.' }], max_tokens: 300,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personSchema } } };
  const whole = await client.chat.completions.create(req);
  assert.equal(whole.choices[0].finish_reason, 'stop', 'the schema closed the output');
  checkPerson(whole.choices[0].message.content);
  const plain = await client.chat.completions.create({ ...req, speculative: { type: 'none' } });
  assert.equal(plain.choices[0].message.content, whole.choices[0].message.content, 'speculation changes nothing');
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true }))
    text += chunk.choices[0].delta.content || '';
  assert.equal(text, whole.choices[0].message.content);

  const object = await client.chat.completions.create({ ...req, max_tokens: 40, response_format: { type: 'json_object' } });
  if (object.choices[0].finish_reason === 'stop') assert.equal(typeof JSON.parse(object.choices[0].message.content), 'object');
  else assert.match(object.choices[0].message.content, /^\s*\{/);

  const bad = await expectError(client.chat.completions.create({ ...req,
    response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'string', pattern: '^a+$' } } } }),
  OpenAI.BadRequestError, 400, 'an unsupported keyword');
  assert.match(bad.message, /pattern/);
});

test('errors arrive as the client error classes', async (client) => {
  const msg = [{ role: 'user', content: 'x' }];
  const nf = await expectError(client.chat.completions.create({ model: 'gpt-4o', messages: msg }), OpenAI.NotFoundError, 404, 'unknown model');
  assert.match(nf.message, /gpt-4o/);
  const bad = await expectError(client.chat.completions.create({ model: 'tiny', messages: msg, top_p: 1.5 }),
    OpenAI.BadRequestError, 400, 'top_p 1.5');
  assert.equal(bad.param, 'top_p');
  await expectError(client.chat.completions.create({ model: 'tiny', messages: [] }), OpenAI.BadRequestError, 400, 'no messages');
  const long = await expectError(client.completions.create({ model: 'tiny', prompt: 'x', max_tokens: 100000000 }),
    OpenAI.BadRequestError, 400, 'max_tokens beyond the context');
  assert.equal(long.code, 'context_length_exceeded');
});

// Sampled (the server's default is greedy), without drafts: with a fixed seed the n choices
// are the same every time, choice i being the request with seed + i alone.
test('n = 3 choices, whole and streamed, with their indices and the usage summed', async (client) => {
  const req = {
    model: 'tiny', prompt: 'Three ways to say hello', max_tokens: 10, ignore_eos: true,
    temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, seed: 7, speculative: { type: 'none' },
  };
  const one = await client.completions.create(req);
  const whole = await client.completions.create({ ...req, n: 3 });
  assert.deepEqual(whole.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(whole.usage.prompt_tokens, one.usage.prompt_tokens, 'the prompt is counted once');
  assert.equal(whole.usage.completion_tokens, 30);
  assert.equal(whole.choices[0].text, one.choices[0].text, 'choice 0 samples with the seed itself');
  const eighth = await client.completions.create({ ...req, seed: 9 });
  assert.equal(whole.choices[2].text, eighth.choices[0].text, 'choice 2 samples with seed + 2');
  assert.ok(new Set(whole.choices.map((c) => c.text)).size > 1, 'the choices differ');
  const again = await client.completions.create({ ...req, n: 3 });
  assert.deepEqual(again.choices.map((c) => c.text), whole.choices.map((c) => c.text), 'a fixed seed reproduces them');

  const texts = ['', '', ''];
  const finish = [null, null, null];
  const roles = [0, 0, 0];
  let usage = null;
  const chat = { model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, ignore_eos: true,
    temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, seed: 11, speculative: { type: 'none' }, n: 3 };
  const chatWhole = await client.chat.completions.create(chat);
  for await (const chunk of await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      texts[c.index] += c.delta.content || '';
      if (c.delta.role) roles[c.index]++;
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  assert.deepEqual(texts, chatWhole.choices.map((c) => c.message.content));
  assert.deepEqual(roles, [1, 1, 1], 'each choice opens with the role once');
  assert.deepEqual(finish, ['length', 'length', 'length']);
  assert.equal(usage.completion_tokens, 24);
  assert.equal(usage.prompt_tokens, chatWhole.usage.prompt_tokens);
});

test('logit_bias forces a token and the penalties change a greedy reply', async (client) => {
  const base = `http://127.0.0.1:${client.port}`;
  const tokenize = async (content) => (await (await fetch(`${base}/tokenize`, {
    method: 'POST', body: JSON.stringify({ content }),
  })).json()).tokens;
  const [a] = await tokenize('a');
  const forced = await client.completions.create({
    model: 'tiny', prompt: 'Once upon a time', max_tokens: 6, ignore_eos: true, logit_bias: { [a]: 100 },
  });
  assert.equal(forced.choices[0].text, 'aaaaaa');
  const req = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 24, ignore_eos: true, logprobs: 1 };
  const plain = await client.completions.create(req);
  const penalised = await client.completions.create({ ...req, frequency_penalty: 2, presence_penalty: 2 });
  const repeats = (r) => r.choices[0].logprobs.tokens.length - new Set(r.choices[0].logprobs.tokens).size;
  assert.notEqual(penalised.choices[0].text, plain.choices[0].text);
  assert.ok(repeats(penalised) <= repeats(plain), `repeats: ${repeats(penalised)} with penalties, ${repeats(plain)} without`);
});

test('bad penalties, biases and choices are 400s naming the field', async (client) => {
  const msg = [{ role: 'user', content: 'x' }];
  const cases = [
    [{ presence_penalty: 2.5 }, 'presence_penalty'],
    [{ frequency_penalty: -3 }, 'frequency_penalty'],
    [{ logit_bias: { 5: 101 } }, 'logit_bias.5'],
    [{ logit_bias: { 99999999: 1 } }, 'logit_bias.99999999'],
    [{ n: 17 }, 'n'],
    [{ n: 2, best_of: 3 }, 'best_of'],
  ];
  for (const [fields, param] of cases) {
    const e = await expectError(client.chat.completions.create({ model: 'tiny', messages: msg, ...fields }),
      OpenAI.BadRequestError, 400, JSON.stringify(fields));
    assert.equal(e.param, param, JSON.stringify(fields));
  }
  // each choice fits its context of 1024, but 16 of them do not fit the pool (8 slots of 1024)
  const wide = await expectError(client.chat.completions.create({ model: 'tiny', messages: msg, n: 16, max_tokens: 600 }),
    OpenAI.BadRequestError, 400, 'n * max_tokens beyond the KV cache');
  assert.equal(wide.code, 'context_length_exceeded');
});

test('a client that hangs up cancels every choice', async (client) => {
  const metric = async (name) => {
    const text = await (await fetch(`http://127.0.0.1:${client.port}/metrics`)).text();
    return Number(text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm'))[1]);
  };
  const before = await metric('tandem_generation_tokens_total');
  const abort = new AbortController();
  const stream = await client.completions.create({ model: 'tiny', prompt: 'Go on and on', max_tokens: 450,
    ignore_eos: true, n: 3, stream: true }, { signal: abort.signal });
  try {
    for await (const chunk of stream) { if (chunk.choices.length) abort.abort(); }
  } catch (e) {
    assert.ok(abort.signal.aborted, `the stream failed by itself: ${e.message}`);
  }
  for (let i = 0; i < 100 && (await metric('tandem_requests_running')) > 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await metric('vllm:num_requests_running'), 0);
  const made = (await metric('tandem_generation_tokens_total')) - before;
  assert.ok(made < 3 * 450, `${made} tokens: the choices ran to the end`);
});

test('/metrics has the gateway metrics in vLLM names', async (client) => {
  const text = await (await fetch(`http://127.0.0.1:${client.port}/metrics`)).text();
  for (const name of ['vllm:num_requests_waiting{model_name="tiny"}', 'vllm:num_requests_running{model_name="tiny"}',
    'vllm:kv_cache_usage_perc{model_name="tiny"}', 'vllm:gpu_cache_usage_perc{model_name="tiny"}',
    'vllm:cache_config_info{model_name="tiny",block_size="16"', 'vllm:spec_decode_num_drafts_total{model_name="tiny"}',
    'vllm:spec_decode_num_draft_tokens_total{model_name="tiny"}',
    'vllm:spec_decode_num_accepted_tokens_total{model_name="tiny"}'])
    assert.ok(text.includes(name), `${name} is missing`);
  const usage = Number(text.match(/^vllm:kv_cache_usage_perc\{[^}]*\} (\S+)$/m)[1]);
  assert.ok(usage > 0 && usage <= 1, `KV usage ${usage} is a fraction`);
});

const fixtures = path.join(__dirname, '..', 'fixtures', 'images');
const dataUrl = (file, type) => `data:${type};base64,${fs.readFileSync(path.join(fixtures, file)).toString('base64')}`;
const png = dataUrl('rgb8.png', 'image/png');
const jpeg = dataUrl('baseline.jpg', 'image/jpeg');
const imagePart = (url) => ({ type: 'image_url', image_url: { url, detail: 'auto' } });

test('a model without an image encoder refuses images and keeps serving', async (client) => {
  const e = await expectError(client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: [imagePart(png), { type: 'text', text: 'Read it' }] }],
  }), OpenAI.BadRequestError, 400, 'an image to a text model');
  assert.match(e.message, /takes no images/);
  const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
  assert.ok(r.usage.completion_tokens > 0);
});

// GLM-OCR (tiny synthetic, with its vision tower and MTP layer: the server drafts with it by
// default): a few short requests are enough to show the images reach the model exactly.
const imageTests = [];
const imageTest = (name, fn) => imageTests.push({ name, fn });
const glm = path.join(dir, 'glm');
const glmTokens = 12;
const ocrText = (file) => {
  const out = execFileSync(bin, ['ocr', '-m', glm, '-n', String(glmTokens), '--ignore-eos', '--output-format', 'json',
    path.join(fixtures, file)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out).pages[0].text;
};
const readPage = (parts) => ({
  model: 'glm', messages: [{ role: 'user', content: parts }], max_tokens: glmTokens, ignore_eos: true,
});

imageTest('an image request gives the text of tandem ocr on that image, whole and streamed', async (client) => {
  const req = readPage([imagePart(png), { type: 'text', text: 'Text Recognition:' }]);
  const whole = await client.chat.completions.create(req);
  assert.equal(whole.choices[0].message.content, ocrText('rgb8.png'));
  assert.equal(whole.usage.completion_tokens, glmTokens);
  assert.equal(whole.timings.images, 1);
  assert.ok(whole.timings.image_encode_ms > 0);
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content || '';
  }
  assert.equal(text, whole.choices[0].message.content);
  const bad = await expectError(client.chat.completions.create(readPage([imagePart('data:image/png;base64,iVBO!!==')])),
    OpenAI.BadRequestError, 400, 'bad base64');
  assert.equal(bad.param, 'messages[0].content[0].image_url.url');
  const http = await expectError(client.chat.completions.create(readPage([imagePart('https://example.com/a.png')])),
    OpenAI.BadRequestError, 400, 'an http URL');
  assert.match(http.message, /does not fetch URLs/);
});

imageTest('a one-page PDF as a file part gives the text of tandem ocr on that PDF', async (client) => {
  const pdf = { type: 'file', file: { file_data: dataUrl('cropped.pdf', 'application/pdf'), filename: 'cropped.pdf' } };
  const r = await client.chat.completions.create(readPage([pdf, { type: 'text', text: 'Text Recognition:' }]));
  assert.equal(r.choices[0].message.content, ocrText('cropped.pdf'));
  assert.equal(r.timings.images, 1);
  const id = await expectError(client.chat.completions.create(readPage([{ type: 'file', file: { file_id: 'file-1' } }])),
    OpenAI.BadRequestError, 400, 'a file_id');
  assert.equal(id.param, 'messages[0].content[0].file.file_id');
});

imageTest('a two-image request and a text-only one running together each give their text alone', async (client) => {
  const two = readPage([imagePart(png), { type: 'text', text: 'and' }, imagePart(jpeg), { type: 'text', text: 'Table Recognition:' }]);
  const plain = readPage('Say something');
  const alone = [];
  for (const req of [two, plain]) alone.push((await client.chat.completions.create(req)).choices[0].message.content);
  const together = await Promise.all([two, plain].map(async (req) => (await client.chat.completions.create(req)).choices[0].message.content));
  assert.deepEqual(together, alone);
});

(async () => {
  let failed = 0;
  const server = await serve(['--parallel', '8', '-c', '1024', '--alias', 'tiny']);
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused', maxRetries: 0 });
  client.port = server.port;  // for the endpoints outside /v1 (/tokenize, /metrics)
  for (const t of tests) {
    try {
      await t.fn(client);
      console.log(`ok   ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${e.stack}`);
    }
  }
  assert.equal(await stop(server), 0, 'SIGTERM ends the server with status 0');

  // The API key: the client's key is sent as a Bearer token.
  const guarded = await serve(['--api-key', 'sesame', '--alias', 'tiny']);
  try {
    const base = `http://127.0.0.1:${guarded.port}/v1`;
    const wrong = new OpenAI({ baseURL: base, apiKey: 'open-up', maxRetries: 0 });
    await expectError(wrong.models.list(), OpenAI.AuthenticationError, 401, 'a wrong API key');
    const right = new OpenAI({ baseURL: base, apiKey: 'sesame', maxRetries: 0 });
    const r = await right.completions.create({ model: 'tiny', prompt: 'a', max_tokens: 2 });
    assert.equal(r.usage.completion_tokens, 2);
    console.log('ok   the API key is checked');
  } catch (e) {
    failed++;
    console.log(`FAIL the API key is checked\n     ${e.stack}`);
  }
  await stop(guarded);

  execFileSync(bin, ['synth', '--arch', 'glm4', '--format', 'hf', '--vision', 'true', '-o', glm], { stdio: 'ignore' });
  const ocr = await serve(['--parallel', '2', '-c', '1024', '--alias', 'glm'], glm);
  const glmClient = new OpenAI({ baseURL: `http://127.0.0.1:${ocr.port}/v1`, apiKey: 'unused', maxRetries: 0 });
  for (const t of imageTests) {
    try {
      await t.fn(glmClient);
      console.log(`ok   ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name}\n     ${e.stack}\n${ocr.log()}`);
    }
  }
  await stop(ocr);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(failed ? `${failed} failed` : `all ${tests.length + imageTests.length + 1} passed`);
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
