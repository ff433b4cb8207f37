// The official OpenAI Node SDK (npm's openai) against the relay, whose account speaks only Chat
// Completions, so that every Response it gets is one the relay made. Run by sdknode_test.go:
//
//   OPENAI_NODE_MODULES=.../node_modules node responses.mjs http://127.0.0.1:PORT/v1
//
// It creates, streams (the SDK's stream helper and a raw stream), parses a structured answer,
// and runs a tool round trip over HTTP with previous_response_id, checking what the SDK makes of
// each answer. Every body the SDK received is printed, raw, on the last line as JSON
// ({"calls": N, "bodies": [{status, type, text}]}), for the Go test to check each Response in it
// against the full schema. It exits 1 with the reason on the first check that fails.
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(process.env.OPENAI_NODE_MODULES + '/');
const { OpenAI } = require('openai');

const bodies = [];
const client = new OpenAI({
  baseURL: process.argv[2],
  apiKey: 'unused',
  maxRetries: 0,
  timeout: 20_000,
  // Every answer as the relay sent it, read from a copy while the SDK reads the original.
  fetch: async (url, init) => {
    const res = await fetch(url, init);
    const copy = res.clone();
    bodies.push(copy.text().then((text) => ({ status: res.status, type: res.headers.get('content-type'), text })));
    return res;
  },
});

const tools = [{
  type: 'function', name: 'shell', description: 'Runs a command.', strict: false,
  parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
}];
const params = {
  model: 'gpt-5', instructions: 'Be brief.', temperature: 0.3, top_p: 0.8, metadata: { run: 'sdk' },
  prompt_cache_key: 'sdk-conv', max_output_tokens: 200,
};
let calls = 0;

// echoes checks what every Response made for params repeats of them.
function echoes(r, what) {
  assert.equal(r.object, 'response', what);
  assert.equal(r.instructions, 'Be brief.', what + ': instructions');
  assert.equal(r.temperature, 0.3, what + ': temperature');
  assert.equal(r.top_p, 0.8, what + ': top_p');
  assert.deepEqual(r.metadata, { run: 'sdk' }, what + ': metadata');
  assert.equal(r.prompt_cache_key, 'sdk-conv', what + ': prompt_cache_key');
  assert.equal(r.max_output_tokens, 200, what + ': max_output_tokens');
  assert.equal(r.store, true, what + ': store');
  assert.deepEqual(r.text, { format: { type: 'text' } }, what + ': text');
}

// create: a whole answer.
{
  const r = await client.responses.create({ ...params, input: 'Say hello.' });
  calls++;
  echoes(r, 'create');
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, 'Hello from the relay.');
  assert.equal(typeof r.completed_at, 'number');
  assert.ok(r.completed_at >= r.created_at, 'completed_at before created_at');
  assert.equal(r.previous_response_id, null);
  assert.equal(r.usage.total_tokens, 13);
}

// stream: the SDK's helper accumulates the events into the final response.
{
  const stream = client.responses.stream({ ...params, input: 'Say hello.' });
  calls++;
  const types = [];
  let deltas = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') deltas += ev.delta;
    if (ev.type === 'response.created' || ev.type === 'response.in_progress') {
      echoes(ev.response, ev.type);
      assert.equal(ev.response.completed_at, null, ev.type + ': completed_at');
    }
  }
  const final = await stream.finalResponse();
  echoes(final, 'stream final');
  assert.equal(deltas, 'Hello from the relay.');
  assert.equal(final.output_text, 'Hello from the relay.');
  assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.equal(types.at(-1), 'response.completed');
}

// A raw stream (create with stream: true), as most clients read one.
{
  const stream = await client.responses.create({ ...params, input: 'Say hello.', stream: true });
  calls++;
  let completed = null;
  for await (const ev of stream) {
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.ok(completed, 'no response.completed');
  echoes(completed, 'raw stream');
}

// parse: a structured answer (text.format json_schema), echoed and parsed.
{
  const format = {
    type: 'json_schema', name: 'answer', strict: true,
    schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false },
  };
  const r = await client.responses.parse({ ...params, input: 'What is six times seven?', text: { format } });
  calls++;
  assert.deepEqual(r.output_parsed, { answer: 42 });
  // The API fills the members the client left out (description: null), as the relay's echo does.
  const { description, ...echoed } = r.text.format;
  assert.equal(description, null, 'parse: text.format description not filled with null');
  assert.deepEqual(echoed, format, 'parse: text.format not echoed');
}

// A tool round trip over HTTP: the second request carries only the tool's result and names
// the first response; the relay replays the conversation (a Chat server refuses a tool result
// without its call).
{
  const first = await client.responses.create({ ...params, input: 'List the files.', tools });
  calls++;
  echoes(first, 'tool call');
  assert.equal(first.tools.length, 1);
  assert.equal(first.tools[0].name, 'shell');
  assert.equal(first.tool_choice, 'auto');
  const call = first.output.find((it) => it.type === 'function_call');
  assert.ok(call, 'no function call in ' + JSON.stringify(first.output));
  assert.equal(call.name, 'shell');
  assert.deepEqual(JSON.parse(call.arguments), { cmd: 'ls' });

  const stream = client.responses.stream({
    ...params, tools, previous_response_id: first.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a.txt b.txt' }],
  });
  calls++;
  const second = await stream.finalResponse();
  echoes(second, 'tool result');
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.output_text, 'The tool said: a.txt b.txt');

  // And a third turn after the second, not streamed.
  const third = await client.responses.create({ ...params, previous_response_id: second.id, input: 'Thanks.' });
  calls++;
  assert.equal(third.previous_response_id, second.id);
  assert.equal(third.status, 'completed');
}

// A response the relay never made is not found, in the API's words.
{
  await assert.rejects(
    client.responses.create({ ...params, previous_response_id: 'resp_unknown', input: 'Again.' }),
    (err) => err.status === 400 && err.code === 'previous_response_not_found' && err.param === 'previous_response_id',
  );
  calls++;
}

console.log(JSON.stringify({ calls, bodies: await Promise.all(bodies) }));
