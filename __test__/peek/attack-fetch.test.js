'use strict';
// The fetch guard, attacked from plain JavaScript (issue 24, item 5): a
// worker granted allowed.example tries to reach a loopback server. Each probe
// is a real fork-per-run; the server on 127.0.0.1 counts what reaches it, and
// the log must name where the request really went. Then the guard alone,
// with the name lookup injected (allowed.example does not resolve here, and a
// run's process has no switch for its lookup): a replaced Request or
// dispatcher, a granted name that resolves to a private address, one whose
// second answer differs from the first, and Node without its HTTP client.
// Serial: forks compete for 2 cores. Unsandboxed: these attack the guard in
// the run's own process; a sandboxed run's fetch is made by the supervisor
// with the same guard (peek/attack-sandbox.test.js).
const test = require('ava');
const { codes } = require('durable-workers/peek');
const { guardedFetch } = require('../../js/peek/node/guarded-fetch');
const { worker, setup, command, httpServer } = require('../helpers/peek');

const GRANT = { capabilities: { network: { domains: ['allowed.example'] } } };

/** A loopback server that records every request reaching it. */
async function loopback(t) {
  const hits = [];
  const origin = await httpServer(t, (req, res) => {
    hits.push(`${req.method} ${req.headers.host}${req.url}`);
    res.end('loopback secret');
  });
  return { origin, port: new URL(origin).port, hits };
}

/** Runs `body` (the inside of an async function of (api, ctx, loop, port)) as a worker granted `manifest`. */
async function probe(t, name, body, manifest = GRANT, params = {}) {
  const server = await loopback(t);
  const { dir, host, logs } = setup(t, { sandbox: 'off' });
  const file = worker(
    dir,
    name,
    `export default async (api, ctx) => {
      const { loop, port } = ctx.trigger.params;
      const out = [];
      const attempt = async (label, f) => {
        try { const r = await f(); out.push(label + ': ' + r.status + ' ' + (await r.text())); }
        catch (err) { out.push(label + ': ' + (err.code ?? err.name)); }
      };
      ${body}
      return out;
    };`,
    manifest,
  );
  const r = await host.run(file, command({ loop: server.origin, port: server.port, ...params }));
  t.true(r.ok, r.error?.message);
  const net = logs.filter((l) => l.worker === name && l.args[0] === 'fetch').map((l) => `${l.args[1]} ${l.args[2]} ${l.args[3]}`);
  return { out: r.value, hits: server.hits, net, origin: server.origin };
}

test.serial('1. a Request whose url says allowed.example while it is for loopback: the guard reads the url the platform fetches', async (t) => {
  const p = await probe(
    t,
    'requrl',
    `const req = new Request(loop + '/secret');
     Object.defineProperty(req, 'url', { value: 'http://allowed.example/' });
     await attempt('request', () => fetch(req));`,
  );
  t.deepEqual(p.hits, [], 'the loopback server was never reached');
  t.deepEqual(p.out, [`request: ${codes.NETWORK_DENIED}`]);
  t.deepEqual(p.net, [`GET ${p.origin}/secret denied`], 'the log names the real destination');
});

test.serial('2. an input whose toString answers differently each time: converted once, and that string is what is fetched', async (t) => {
  const p = await probe(
    t,
    'tostring',
    `let n = 0;
     const input = { toString: () => (n++ === 0 ? 'http://allowed.example:' + port + '/' : loop + '/secret') };
     await attempt('tostring', () => fetch(input));
     let k = 0;
     await attempt('valueOf', () => fetch({ [Symbol.toPrimitive]: () => (k++ === 0 ? 'http://allowed.example/a' : loop + '/a') }, { method: 'GET' }));`,
  );
  t.deepEqual(p.hits, [], 'the loopback server was never reached');
  t.is(p.out.length, 2);
  t.false(p.out.some((o) => o.includes('loopback secret')));
  // What was checked is what was fetched (allowed.example, which does not resolve), and the log says so.
  t.deepEqual(p.net, [`GET http://allowed.example:${new URL(p.origin).port}/ allowed`, 'GET http://allowed.example/a allowed']);
});

test.serial('3. globalThis.URL and URL.prototype replaced by the worker: the guard parses with the platform URL taken before the worker ran', async (t) => {
  const p = await probe(
    t,
    'urlswap',
    `// Each lies once: to the first reader (the guard), not to the platform reading after it.
     const Real = URL;
     let n = 0;
     globalThis.URL = class extends Real {
       constructor(...a) { super(...a); this.lie = n++ === 0; }
       get hostname() { return this.lie ? 'allowed.example' : super.hostname; }
     };
     await attempt('global URL', () => fetch(loop + '/one'));
     globalThis.URL = Real;
     const d = Object.getOwnPropertyDescriptor(URL.prototype, 'hostname');
     let m = 0;
     Object.defineProperty(URL.prototype, 'hostname', { get() { return m++ === 0 ? 'allowed.example' : d.get.call(this); }, configurable: true });
     await attempt('URL.prototype', () => fetch(loop + '/two'));
     Object.defineProperty(URL.prototype, 'hostname', d);`,
  );
  t.deepEqual(p.hits, [], 'the loopback server was never reached');
  t.deepEqual(p.out, [`global URL: ${codes.NETWORK_DENIED}`, `URL.prototype: ${codes.NETWORK_DENIED}`]);
  t.deepEqual(p.net, [`GET ${p.origin}/one denied`, `GET ${p.origin}/two denied`], 'the log names the real destination');
});

test.serial('6. a grant of * is not a grant of loopback, in any spelling of the address', async (t) => {
  const p = await probe(
    t,
    'spellings',
    `for (const u of [loop + '/plain', 'http://2130706433:' + port + '/decimal', 'http://0x7f.1:' + port + '/hex', 'http://[::ffff:127.0.0.1]:' + port + '/mapped', 'http://localhost:' + port + '/name', 'http://127.1:' + port + '/short', 'http://allowed.example@127.0.0.1:' + port + '/userinfo']) {
       await attempt(u, () => fetch(u));
     }`,
    { capabilities: { network: { domains: ['*'] } } },
  );
  t.deepEqual(p.hits, [], 'the loopback server was never reached');
  t.is(p.out.length, 7);
  for (const o of p.out) t.true(o.endsWith(codes.NETWORK_DENIED), o);
});

test.serial('7. a redirect from a granted loopback address to another one, under a grant of *, is checked per hop by address', async (t) => {
  // 127.0.0.1 is granted as such; 127.0.0.2 (the same machine, spelled in hex by the redirect) is not, and * does not grant it.
  const hits = [];
  const http = require('node:http');
  const other = http.createServer((req, res) => {
    hits.push(req.url);
    res.end('other loopback secret');
  });
  await new Promise((resolve) => other.listen(0, '127.0.0.2', resolve));
  t.teardown(() => new Promise((resolve) => other.close(resolve)));
  const port = other.address().port;
  const { dir, host, logs } = setup(t, { sandbox: 'off' });
  const first = await httpServer(t, (req, res) => res.writeHead(302, { location: `http://0x7f000002:${port}/secret` }).end());
  const file = worker(
    dir,
    'hop',
    `export default async (api, ctx) => {
      try { const r = await fetch(ctx.trigger.params.first + '/go'); return r.status + ' ' + (await r.text()); } catch (err) { return err.code ?? err.name; }
    };`,
    { capabilities: { network: { domains: ['127.0.0.1', '*'] } } },
  );
  const r = await host.run(file, command({ first }));
  t.true(r.ok, r.error?.message);
  t.deepEqual(hits, [], '127.0.0.2 was never reached');
  t.is(r.value, codes.NETWORK_DENIED);
  t.deepEqual(
    logs.filter((l) => l.args[0] === 'fetch').map((l) => `${l.args[2]} ${l.args[3]}`),
    [`${first}/go allowed`, `http://127.0.0.2:${port}/secret denied`],
  );
});

test.serial('10. the platform told another port by a replaced URL class: the connection goes only where the guard checked', async (t) => {
  // 127.0.0.1 is granted as such, so both servers are "allowed" by host; the guard checks the port asked for, the platform (parsing with the worker's URL) asks for the other.
  const other = await loopback(t);
  const p = await probe(
    t,
    'portswap',
    `const Real = URL;
     globalThis.URL = class extends Real {
       constructor(u, b) { super(String(u).replace(':' + port + '/', ':' + ctx.trigger.params.other + '/'), b); }
     };
     await attempt('port', () => fetch(loop + '/checked'));
     globalThis.URL = Real;`,
    { capabilities: { network: { domains: ['127.0.0.1'] } } },
    { other: other.port },
  );
  t.deepEqual(other.hits, [], 'the port not checked was never reached');
  t.deepEqual(p.out, [`port: ${codes.NETWORK_DENIED}`]);
  t.deepEqual(p.net, [`GET ${p.origin}/checked allowed`, `CONNECT http://127.0.0.1:${other.port} denied`], 'the log names the connection refused');
});

test.serial('11. String.prototype patched for the length of the call: the guard matches with functions taken before the worker ran', async (t) => {
  const p = await probe(
    t,
    'primordials',
    `const saved = { replace: String.prototype.replace, toLowerCase: String.prototype.toLowerCase, endsWith: String.prototype.endsWith };
     const lie = () => { String.prototype.replace = function () { return 'allowed.example'; }; String.prototype.toLowerCase = function () { return 'allowed.example'; }; String.prototype.endsWith = () => true; };
     const restore = () => Object.assign(String.prototype, saved);
     lie();
     let pending;
     try { pending = fetch(loop + '/secret'); } finally { restore(); }
     await attempt('string', () => pending);`,
  );
  t.deepEqual(p.hits, [], 'the loopback server was never reached');
  t.deepEqual(p.out, [`string: ${codes.NETWORK_DENIED}`]);
  t.deepEqual(p.net, [`GET ${p.origin}/secret denied`]);
});

// The guard alone, its name lookup injected: no resolver is needed to make a
// granted name answer a private address.

/** A guard over `domains` whose lookup is `answers` (called with the host name); the reports collected. */
function guard(domains, lookup) {
  const reports = [];
  const fetch = guardedFetch({ domains, signal: new AbortController().signal, report: (r) => reports.push(r), lookup });
  return { fetch, reports };
}

test.serial('8. a granted name that resolves to a loopback or private address is refused unless that address is granted as such', async (t) => {
  const server = await loopback(t);
  const answers = { 'inside.example': ['127.0.0.1'], 'ten.example': ['10.1.2.3'], 'mixed.example': ['93.184.215.14', '127.0.0.1'], 'mapped.example': ['::ffff:127.0.0.1'], 'six.example': ['fd00::1'] };
  const lookup = (hostname, cb) =>
    cb(
      null,
      (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  const { fetch, reports } = guard(Object.keys(answers), lookup);
  for (const name of Object.keys(answers)) {
    const err = await t.throwsAsync(fetch(`http://${name}:${server.port}/`));
    t.is(err.code, codes.NETWORK_DENIED, `${name}: ${err.message}`);
  }
  t.deepEqual(server.hits, []);
  t.true(
    reports.every((r) => r.allowed === false),
    JSON.stringify(reports),
  );
  // Granted as such: the name and its address both in the list.
  const granted = guard(['inside.example', '127.0.0.1'], lookup);
  const res = await granted.fetch(`http://inside.example:${server.port}/ok`);
  t.is(await res.text(), 'loopback secret');
  t.deepEqual(server.hits, [`GET inside.example:${server.port}/ok`]);
  t.like(granted.reports[0], { url: `http://inside.example:${server.port}/ok`, allowed: true, address: '127.0.0.1' });
});

test.serial('9. the address checked is the address connected to: a second, different DNS answer is never asked for', async (t) => {
  const server = await loopback(t);
  let calls = 0;
  // First answer granted (127.0.0.1 as such); any later answer would be 10.0.0.1.
  const lookup = (hostname, cb) => cb(null, [{ address: calls++ === 0 ? '127.0.0.1' : '10.0.0.1', family: 4 }]);
  const { fetch, reports } = guard(['rebind.example', '127.0.0.1'], lookup);
  for (const p of ['/a', '/b', '/c']) t.is(await (await fetch(`http://rebind.example:${server.port}${p}`)).text(), 'loopback secret');
  t.is(calls, 1, 'one lookup for the run');
  t.is(server.hits.length, 3);
  t.deepEqual(
    reports.map((r) => r.address),
    ['127.0.0.1', '127.0.0.1', '127.0.0.1'],
  );
});

/** A lookup answering 127.0.0.2 (granted as such below) for every name. */
const toChecked = (hostname, cb) => cb(null, [{ address: '127.0.0.2', family: 4 }]);

/**
 * Two servers on one port: 127.0.0.2, the address the guard checks, and
 * 127.0.0.1, the loopback server a lying Request or lookup points at. Each
 * records `METHOD host/path[ body]`.
 */
async function twoServers(t, handler = (req, res) => res.end('checked')) {
  const http = require('node:http');
  const loop = await loopback(t);
  const hits = [];
  const checked = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      hits.push(`${req.method} ${req.headers.host}${req.url}${body ? ` ${body}` : ''}`);
      handler(req, res);
    });
  });
  await new Promise((resolve, reject) => {
    checked.once('error', reject);
    checked.listen(+loop.port, '127.0.0.2', resolve);
  });
  t.teardown(() => new Promise((resolve) => checked.close(resolve)));
  return { port: loop.port, loopHits: loop.hits, hits };
}

test.serial('4. globalThis.Request and Request.prototype.clone replaced after the guard was made: it builds and replays with the platform Request', async (t) => {
  const s = await twoServers(t, (req, res) => (req.url === '/start' ? res.writeHead(307, { location: '/end' }).end() : res.end('checked')));
  const { fetch, reports } = guard(['allowed.example', '127.0.0.2'], toChecked);
  const base = `http://allowed.example:${s.port}`;
  const Real = Request;
  const clone = Real.prototype.clone;
  const out = [];
  try {
    globalThis.Request = function Request(input, init) {
      return new Real(`http://127.0.0.1:${s.port}/secret`, init);
    };
    globalThis.Request.prototype = Real.prototype;
    out.push(await (await fetch(`${base}/global`)).text());
    globalThis.Request = Real;
    // The replay of a redirected POST: a patched clone would send its own body on.
    Real.prototype.clone = function () {
      return new Real(`http://127.0.0.1:${s.port}/clone`, { method: 'POST', body: 'evil' });
    };
    out.push(await (await fetch(`${base}/start`, { method: 'POST', body: 'x' })).text());
  } finally {
    globalThis.Request = Real;
    Real.prototype.clone = clone;
  }
  t.deepEqual(s.loopHits, [], 'the loopback server was never reached');
  t.deepEqual(out, ['checked', 'checked']);
  t.deepEqual(s.hits, [`GET allowed.example:${s.port}/global`, `POST allowed.example:${s.port}/start x`, `POST allowed.example:${s.port}/end x`]);
  t.deepEqual(
    reports.map((r) => `${r.method} ${r.url} ${r.allowed} ${r.address}`),
    [`GET ${base}/global true 127.0.0.2`, `POST ${base}/start true 127.0.0.2`, `POST ${base}/end true 127.0.0.2`],
  );
});

test.serial("5. the platform's dispatcher handed a lookup that answers 127.0.0.1 for allowed.example: the guard connects where it checked", async (t) => {
  const s = await twoServers(t);
  const { fetch, reports } = guard(['allowed.example', '127.0.0.2'], toChecked);
  const base = `http://allowed.example:${s.port}`;
  void Request; // loads the platform's HTTP client
  const sym = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')].find((k) => globalThis[k]?.constructor.name === 'Agent');
  const saved = globalThis[sym];
  const Agent = saved.constructor;
  const lying = () => new Agent({ connect: { lookup: (host, o, cb) => (o && o.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) } });
  const out = [];
  const attempt = async (label, f) => {
    try {
      const r = await f();
      out.push(`${label}: ${r.status} ${await r.text()}`);
    } catch (err) {
      out.push(`${label}: ${err.code ?? err.name}`);
    }
  };
  try {
    await attempt('init.dispatcher', () => fetch(`${base}/init`, { dispatcher: lying() }));
    globalThis[sym] = lying();
    await attempt('global dispatcher', () => fetch(`${base}/global`));
    await attempt('Request dispatcher', () => fetch(new Request(`${base}/request`, { dispatcher: lying() })));
    Object.prototype.dispatcher = lying();
    await attempt('Object.prototype.dispatcher', () => fetch(`${base}/inherited`));
  } finally {
    delete Object.prototype.dispatcher;
    globalThis[sym] = saved;
  }
  t.deepEqual(s.loopHits, [], 'the loopback server was never reached');
  t.deepEqual(out, ['init.dispatcher: 200 checked', 'global dispatcher: 200 checked', 'Request dispatcher: 200 checked', 'Object.prototype.dispatcher: 200 checked']);
  t.deepEqual(
    s.hits,
    ['/init', '/global', '/request', '/inherited'].map((p) => `GET allowed.example:${s.port}${p}`),
  );
  t.true(
    reports.every((r) => r.allowed === true && r.address === '127.0.0.2'),
    JSON.stringify(reports),
  );
});

test.serial("12. on Node, with Node's HTTP client not found (another dispatcher in its place), the guard refuses rather than fetch unchecked", async (t) => {
  const server = await loopback(t);
  void Request; // Node's undici, and its global dispatcher, loaded
  // A copy of the module of its own, whose first guard finds no Agent: the switch is this process's globals, set by the test before the guard is made.
  const file = require.resolve('../../js/peek/node/guarded-fetch');
  const cached = require.cache[file];
  const syms = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')].filter((k) => k in globalThis);
  const saved = syms.map((k) => globalThis[k]);
  const made = [];
  try {
    delete require.cache[file];
    const fresh = require(file);
    for (const k of syms) globalThis[k] = { constructor: function ProxyAgent() {} };
    const reports = [];
    const make = (lookup) => fresh.guardedFetch({ domains: ['allowed.example', '127.0.0.1'], signal: new AbortController().signal, report: (r) => reports.push(r), lookup });
    made.push(
      make(undefined),
      make((hostname, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }])),
    );
    made.reports = reports;
  } finally {
    syms.forEach((k, i) => (globalThis[k] = saved[i]));
    require.cache[file] = cached;
  }
  for (const fetch of made) {
    for (const u of [`http://allowed.example:${server.port}/name`, `${server.origin}/address`]) {
      const err = await t.throwsAsync(fetch(u));
      t.is(err.code, codes.NETWORK_DENIED, err.message);
      t.regex(err.message, /HTTP client .* was not found/);
    }
  }
  t.deepEqual(server.hits, [], 'the loopback server was never reached');
  t.is(made.reports.length, 4);
  t.true(
    made.reports.every((r) => r.allowed === false),
    JSON.stringify(made.reports),
  );
});
