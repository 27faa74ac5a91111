'use strict';
// workerd's Response on Node (js/do/response.js) keeps a body made from a
// string or bytes as it is: every public member must still behave as Node's
// own Response does, which each case checks side by side.
const test = require('ava');
const { Response, NodeResponse } = require('../../js/do/response');

const BODIES = {
  string: () => 'hello, wörld',
  empty: () => '',
  bom: () => '\ufeffstarts with a BOM',
  'lone surrogate': () => 'a\ud800b',
  json: () => '{"a":[1,2,{"b":null}]}',
  'bad json': () => '{"a":',
  form: () => 'a=1&b=two+words&a=3',
  Uint8Array: () => new Uint8Array([104, 105, 0, 255]),
  ArrayBuffer: () => new Uint8Array([1, 2, 3]).buffer,
  'DataView of a part': () => new DataView(new Uint8Array([9, 8, 7, 6, 5]).buffer, 1, 3),
};
const INITS = {
  none: undefined,
  'status and text': { status: 201, statusText: 'Made' },
  'a content type': { headers: { 'content-type': 'application/x-www-form-urlencoded' } },
  'a JSON type': {
    headers: [
      ['Content-Type', 'application/json'],
      ['x-a', '1'],
    ],
  },
};

/** What a read of the body settles to: a value or the error's kind and message. */
async function settle(p) {
  try {
    const v = await p;
    if (v instanceof Blob) return { blob: v.type, bytes: [...new Uint8Array(await v.arrayBuffer())] };
    if (v instanceof FormData) return { form: [...v] };
    if (v instanceof ArrayBuffer) return { arrayBuffer: [...new Uint8Array(v)] };
    if (v instanceof Uint8Array) return { bytes: [...v] };
    return { value: v };
  } catch (err) {
    return { error: err.constructor.name, message: err.message };
  }
}

async function readStream(stream) {
  const out = [];
  for await (const chunk of stream) out.push(...chunk);
  return out;
}

/** Every observable of a response, then of a second read and of a clone. */
async function observe(make, read) {
  const r = make();
  const seen = { status: r.status, statusText: r.statusText, ok: r.ok, headers: [...r.headers], used0: r.bodyUsed, type: r.type, url: r.url };
  const copy = r.clone();
  seen.first = read === 'body' ? await settle(readStream(r.body)) : await settle(r[read]());
  seen.used1 = r.bodyUsed;
  seen.again = await settle(r.text());
  seen.cloneAfter = await settle(
    Promise.resolve()
      .then(() => r.clone())
      .then(() => 'cloned'),
  );
  seen.copy = { headers: [...copy.headers], status: copy.status, text: await settle(copy.text()), used: copy.bodyUsed };
  return seen;
}

for (const [bodyName, body] of Object.entries(BODIES)) {
  for (const [initName, init] of Object.entries(INITS)) {
    test(`a body from ${bodyName}, ${initName}: every read as Node's Response gives it`, async (t) => {
      for (const read of ['text', 'json', 'arrayBuffer', 'blob', 'formData', 'body', ...(typeof NodeResponse.prototype.bytes === 'function' ? ['bytes'] : [])]) {
        const ours = await observe(() => new Response(body(), init), read);
        const node = await observe(() => new NodeResponse(body(), init), read);
        t.deepEqual(ours, node, read);
      }
    });
  }
}

test('bytes are copied when the response is made, as Node copies them', async (t) => {
  const bytes = new Uint8Array([1, 2, 3]);
  const r = new Response(bytes);
  bytes[0] = 99;
  t.deepEqual([...new Uint8Array(await r.arrayBuffer())], [1, 2, 3]);
});

test('headers changed after the response was made decide blob() and formData(), as on Node', async (t) => {
  for (const R of [Response, NodeResponse]) {
    const r = new R('a=1');
    r.headers.set('content-type', 'application/x-www-form-urlencoded');
    t.deepEqual([...(await r.formData())], [['a', '1']], R.name);
  }
});

test('a null-body status with a body is refused, as Node refuses it; without one it is kept', (t) => {
  for (const status of [204, 205, 304, '204', 204.5, 65740]) {
    const node = t.throws(() => new NodeResponse('x', { status }));
    t.throws(() => new Response('x', { status }), { instanceOf: node.constructor, message: node.message });
    t.is(new Response(null, { status }).status, new NodeResponse(null, { status }).status);
  }
});

test('takeWhole() gives a kept body once, and the response reads as used afterwards', async (t) => {
  const r = new Response('abc');
  t.true(Response.isWhole(r));
  t.is(Response.takeWhole(r), 'abc');
  t.is(Response.takeWhole(r), undefined);
  t.true(r.bodyUsed);
  t.false(Response.isWhole(r));
  await t.throwsAsync(r.text(), { instanceOf: TypeError });
  // Anything else is not kept: a stream, a Response Node made, a body already asked for.
  t.is(Response.takeWhole(new Response(new Blob(['x']).stream())), undefined);
  t.is(Response.takeWhole(NodeResponse.json({})), undefined);
  const asked = new Response('x');
  void asked.body;
  t.is(Response.takeWhole(asked), undefined);
});

test('instanceof Response holds for Node-made responses; status 101 needs a webSocket', (t) => {
  t.true(NodeResponse.json({}) instanceof Response);
  t.throws(() => new Response(null, { status: 101 }), { instanceOf: RangeError });
  t.is(Response.socketOf(new Response('x')), null);
  t.is(Response.socketOf(NodeResponse.json({})), null);
});
