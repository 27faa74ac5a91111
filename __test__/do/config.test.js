'use strict';
// The Wrangler config (js/do/config.js, jsonc.js, dotenv.js): found where
// wrangler finds it, read in JSONC or TOML, and everything serve cannot run
// refused by key and binding name.
const test = require('ava');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const fc = require('fast-check');
const { loadConfig } = require('../../js/do/config');
const { parseJsonc } = require('../../js/do/jsonc');
const { parseDotenv } = require('../../js/do/dotenv');

/** A temporary directory holding `files` (name → text), removed after the test. */
function project(t, files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-do-config-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** The config error for `config` (an object, written as wrangler.json). */
function refusal(t, config, files = {}) {
  const dir = project(t, { 'wrangler.json': JSON.stringify(config), ...files });
  const err = t.throws(() => loadConfig({ cwd: dir }));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  return err.message;
}

const CHAT = `{
  // The chat app: one SQLite-backed class.
  "$schema": "node_modules/wrangler/config-schema.json",
  "name": "chat",
  "main": "src/index.ts", /* relative to this file */
  "compatibility_date": "2026-11-01",
  "compatibility_flags": ["nodejs_compat",],
  "observability": { "enabled": true },
  "routes": ["chat.example.com/*"],
  "durable_objects": {
    "bindings": [
      { "name": "Chat", "class_name": "Chat" },
      { "name": "Legacy", "class_name": "Counter", "script_name": "chat" },
    ],
  },
  "migrations": [
    { "tag": "v1", "new_classes": ["Counter"] },
    { "tag": "v2", "new_sqlite_classes": ["Chat"] },
  ],
  "vars": { "GREETING": "hi // not a comment", "LIMITS": { "max": 3 } },
}
`;

test('a wrangler.jsonc with comments and trailing commas: main resolved, classes SQLite or not by migration, vars kept', (t) => {
  const dir = project(t, { 'wrangler.jsonc': CHAT });
  const c = loadConfig({ cwd: dir });
  t.like(c, { file: path.join(dir, 'wrangler.jsonc'), name: 'chat', main: path.join(dir, 'src', 'index.ts'), compatibilityDate: '2026-11-01' });
  t.deepEqual(c.compatibilityFlags, ['nodejs_compat']);
  t.deepEqual(c.objects, [
    { binding: 'Chat', className: 'Chat', sql: true },
    { binding: 'Legacy', className: 'Counter', sql: false },
  ]);
  t.deepEqual(c.vars, { GREETING: 'hi // not a comment', LIMITS: { max: 3 } });
  t.deepEqual(c.warnings, []);
});

test('a wrangler.toml reads the same; vars are plain objects; a syntax error names file and line', (t) => {
  const toml = `name = "chat"
main = "src/index.ts"
compatibility_date = "2026-11-01"

[[durable_objects.bindings]]
name = "Chat"
class_name = "Chat"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["Chat"]

[vars]
GREETING = "hi"
LIMITS = { max = 3 }
`;
  const dir = project(t, { 'wrangler.toml': toml });
  const c = loadConfig({ cwd: dir });
  t.deepEqual(c.objects, [{ binding: 'Chat', className: 'Chat', sql: true }]);
  t.deepEqual(c.vars, { GREETING: 'hi', LIMITS: { max: 3 } });
  t.is(Object.getPrototypeOf(c.vars.LIMITS), Object.prototype);
  const bad = project(t, { 'wrangler.toml': 'name = "x"\nmain = \n' });
  const err = t.throws(() => loadConfig({ cwd: bad }));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  t.true(err.message.startsWith(`${path.join(bad, 'wrangler.toml')}:2:`), err.message);
});

test('wrangler’s precedence: wrangler.json, then .jsonc, then .toml, each searched upwards; --config wins; none is an error', (t) => {
  const cfg = (name) => JSON.stringify({ name });
  const dir = project(t, { 'wrangler.toml': 'name = "toml"', 'wrangler.jsonc': cfg('jsonc'), 'app/wrangler.toml': 'name = "app-toml"', 'app/src/.keep': '' });
  t.is(loadConfig({ cwd: dir }).name, 'jsonc');
  // Each name is searched up the whole tree before the next name: the
  // parent's wrangler.jsonc beats the nearer app/wrangler.toml, as in wrangler.
  t.is(loadConfig({ cwd: path.join(dir, 'app', 'src') }).name, 'jsonc');
  fs.writeFileSync(path.join(dir, 'app', 'wrangler.json'), cfg('app-json'));
  t.is(loadConfig({ cwd: path.join(dir, 'app', 'src') }).name, 'app-json');
  t.is(loadConfig({ cwd: dir, config: 'app/wrangler.toml' }).name, 'app-toml');
  const empty = project(t, {});
  // (Assumes no wrangler config in the temporary directory's parents.)
  const err = t.throws(() => loadConfig({ cwd: empty }));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  t.regex(err.message, /no Wrangler config: none of wrangler\.json, wrangler\.jsonc, wrangler\.toml in .* \(pass the path with --config\)/);
  t.regex(t.throws(() => loadConfig({ cwd: dir, config: 'wrangler.yaml' })).message, /must end in \.json, \.jsonc or \.toml/);
  t.is(t.throws(() => loadConfig({ cwd: dir, config: 'missing.json' })).code, 'ERR_DURABLE_CONFIG');
});

test('a bound class in no migration is refused, naming binding and class', (t) => {
  const m = refusal(t, { durable_objects: { bindings: [{ name: 'ROOMS', class_name: 'Room' }] }, migrations: [{ tag: 'v1', new_sqlite_classes: ['Other'] }] });
  t.regex(m, /Durable Object binding "ROOMS" \(class "Room"\) is in no migration: add "Room" to a migration's "new_sqlite_classes"/);
});

test('the declarative `exports` map declares classes too; tombstone states are refused', (t) => {
  const dir = project(t, {
    'wrangler.json': JSON.stringify({
      durable_objects: {
        bindings: [
          { name: 'A', class_name: 'A' },
          { name: 'B', class_name: 'B' },
        ],
      },
      exports: { A: { type: 'durable-object', storage: 'sqlite' }, B: { type: 'durable-object', storage: 'legacy-kv' }, Api: { type: 'worker' } },
    }),
  });
  t.deepEqual(
    loadConfig({ cwd: dir }).objects.map((o) => o.sql),
    [true, false],
  );
  t.regex(refusal(t, { exports: { Old: { type: 'durable-object', state: 'deleted' } } }), /"exports\.Old": state "deleted" is not supported yet/);
});

test('migrations that rename, delete or transfer are refused by name; re-adding a class is an error', (t) => {
  const m = refusal(t, {
    migrations: [
      { tag: 'v1', new_sqlite_classes: ['A', 'B', 'C'] },
      { tag: 'v2', renamed_classes: [{ from: 'A', to: 'A2' }], deleted_classes: ['B'] },
      { tag: 'v3', transferred_classes: [{ from: 'C', from_script: 'x', to: 'C' }], new_classes: ['A2'] },
      { tag: 'v4', new_classes: ['C'] },
    ],
  });
  t.regex(m, /migration 2 \(tag "v2"\): "renamed_classes" \(A → A2\) is not supported yet/);
  t.regex(m, /migration 2 \(tag "v2"\): "deleted_classes" \(B\) is not supported yet/);
  t.regex(m, /migration 3 \(tag "v3"\): "transferred_classes" \(C → C\) is not supported yet/);
  t.regex(m, /migration 4 \(tag "v4"\): cannot apply new_classes to existing class C/);
});

test('a binding to another Worker’s class, or to a service environment, is refused; naming this Worker is allowed', (t) => {
  const base = { name: 'chat', migrations: [{ tag: 'v1', new_sqlite_classes: ['Room'] }] };
  t.regex(
    refusal(t, { ...base, durable_objects: { bindings: [{ name: 'R', class_name: 'Room', script_name: 'other' }] } }),
    /binding "R" \(class "Room"\) lives in another Worker \(script_name "other"\)/,
  );
  t.regex(refusal(t, { ...base, durable_objects: { bindings: [{ name: 'R', class_name: 'Room', environment: 'prod' }] } }), /names a service environment/);
  const dir = project(t, { 'wrangler.json': JSON.stringify({ ...base, durable_objects: { bindings: [{ name: 'R', class_name: 'Room', script_name: 'chat' }] } }) });
  t.deepEqual(loadConfig({ cwd: dir }).objects, [{ binding: 'R', className: 'Room', sql: true }]);
});

test('every other binding kind is refused, naming the key and the binding; all problems are listed at once', (t) => {
  const kinds = [
    ['kv_namespaces', [{ binding: 'CACHE', id: 'x' }], 'CACHE'],
    ['r2_buckets', [{ binding: 'FILES', bucket_name: 'f' }], 'FILES'],
    ['d1_databases', [{ binding: 'DB', database_id: 'x' }], 'DB'],
    ['services', [{ binding: 'AUTH', service: 'auth' }], 'AUTH'],
    ['queues', { producers: [{ binding: 'JOBS', queue: 'jobs' }], consumers: [{ queue: 'mail' }] }, 'JOBS", "consumer of mail'],
    ['ai', { binding: 'AI' }, 'AI'],
    ['assets', { directory: './public', binding: 'ASSETS' }, 'ASSETS'],
    ['workflows', [{ binding: 'FLOW', name: 'flow', class_name: 'Flow' }], 'FLOW'],
    ['hyperdrive', [{ binding: 'PG', id: 'x' }], 'PG'],
    ['vectorize', [{ binding: 'VEC', index_name: 'i' }], 'VEC'],
    ['analytics_engine_datasets', [{ binding: 'AE' }], 'AE'],
    ['browser', { binding: 'BROWSER' }, 'BROWSER'],
    ['dispatch_namespaces', [{ binding: 'DISPATCH', namespace: 'n' }], 'DISPATCH'],
    ['mtls_certificates', [{ binding: 'CERT', certificate_id: 'c' }], 'CERT'],
    ['send_email', [{ name: 'EMAIL' }], 'EMAIL'],
    ['tail_consumers', [{ service: 'tail' }], 'tail'],
    ['version_metadata', { binding: 'VERSION' }, 'VERSION'],
    ['images', { binding: 'IMAGES' }, 'IMAGES'],
    ['containers', [{ class_name: 'Box', image: './Dockerfile' }], 'Box'],
    ['secrets_store_secrets', [{ binding: 'KEY', store_id: 's', secret_name: 'k' }], 'KEY'],
    ['ratelimits', [{ name: 'LIMITER', namespace_id: '1' }], 'LIMITER'],
    ['unsafe', { bindings: [{ name: 'RAW', type: 'x' }] }, 'RAW'],
    ['text_blobs', { TEXT: './a.txt' }, 'TEXT'],
    ['connect', [{ protocol: 'tcp', port: 25 }], 'port 25'],
  ];
  const m = refusal(t, Object.fromEntries(kinds.map(([k, v]) => [k, v])));
  for (const [key, , name] of kinds) t.true(m.includes(`"${key}" ("${name}") is not supported`), `${key}:\n${m}`);
  t.is(m.split('\n').length, kinds.length + 1, 'one line per problem');
});

test('empty binding lists and harmless keys are accepted; an unknown key that holds bindings is refused, another is a warning', (t) => {
  const dir = project(t, {
    'wrangler.json': JSON.stringify({
      kv_namespaces: [],
      account_id: 'a',
      workers_dev: true,
      placement: { mode: 'smart' },
      limits: { cpu_ms: 50 },
      minify: true,
      keep_vars: true,
      dev: { port: 1 },
      build: {},
      future_thing: 3,
    }),
  });
  t.deepEqual(loadConfig({ cwd: dir }).warnings, ['unknown key "future_thing" ignored']);
  t.regex(refusal(t, { quantum_links: [{ binding: 'Q', id: 1 }] }), /unknown key "quantum_links" \("Q"\) looks like a binding/);
  t.regex(refusal(t, { define: { X: '1' } }), /"define" \(global replacements\) needs a bundler/);
});

test('env sections are refused with what to do', (t) => {
  t.regex(refusal(t, { env: { staging: { vars: {} }, production: {} } }), /environments \("env": "staging", "production"\) are not supported yet: serve runs the top-level configuration/);
});

test('.dev.vars beside the config overrides vars; with secrets.required only vars and required keys are taken', (t) => {
  const devVars = `# local secrets
export TOKEN="s3cr3t\\nline2"
GREETING = 'hello # not a comment'
PLAIN=value # a comment
EMPTY=
MULTI="one
two"
`;
  const dir = project(t, { 'app/wrangler.jsonc': JSON.stringify({ vars: { GREETING: 'hi', KEEP: 'k' } }), 'app/.dev.vars': devVars, '.dev.vars': 'WRONG=1' });
  t.deepEqual(loadConfig({ cwd: path.join(dir, 'app') }).vars, { GREETING: 'hello # not a comment', KEEP: 'k', TOKEN: 's3cr3t\nline2', PLAIN: 'value', EMPTY: '', MULTI: 'one\ntwo' });
  const only = project(t, { 'wrangler.json': JSON.stringify({ vars: { GREETING: 'hi' }, secrets: { required: ['TOKEN'] } }), '.dev.vars': devVars });
  t.deepEqual(loadConfig({ cwd: only }).vars, { GREETING: 'hello # not a comment', TOKEN: 's3cr3t\nline2' });
  t.regex(
    refusal(t, { vars: { Chat: 'x' }, durable_objects: { bindings: [{ name: 'Chat', class_name: 'Chat' }] }, migrations: [{ tag: 'v1', new_sqlite_classes: ['Chat'] }] }),
    /the name "Chat" is bound twice/,
  );
});

test('dotenv syntax: quotes of three kinds, escapes only in double quotes, `KEY: value`, last assignment wins, CRLF', (t) => {
  t.deepEqual(parseDotenv('A=\'x\\ny\'\r\nB=`b c`\nC: d\nA=again\n  E = spaced  \nnot a line\nF="q\\"r"'), { A: 'again', B: 'b c', C: 'd', E: 'spaced', F: 'q\\"r' });
});

test('JSONC: comments anywhere, trailing commas, comment markers inside strings, JSON.parse’s value otherwise', (t) => {
  t.deepEqual(parseJsonc('\uFEFF/* a */ { "a": "//x", "b": "/* y */", // c\n "c": [1, 2,], /**/ }', 'f'), { a: '//x', b: '/* y */', c: [1, 2] });
  const proto = parseJsonc('{"__proto__": {"x": 1}, "d": 1, "d": 2}', 'f');
  t.true(Object.hasOwn(proto, '__proto__'));
  t.is(Object.getPrototypeOf(proto), Object.prototype);
  t.is(proto.d, 2);
  // Any JSON, reformatted with a comment on every line and a comma after every last element, parses to the same value.
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v, null, 2);
      const noisy = text.replace(/([^[{,\s])(\n\s*[\]}])/g, '$1,$2').replace(/\n/g, ' // "x" /* \n');
      assert.deepEqual(parseJsonc(noisy, 'f'), JSON.parse(text));
    }),
    { numRuns: 500 },
  );
});

test('JSONC syntax errors are ERR_DURABLE_CONFIG with file:line:column and what was expected', (t) => {
  const cases = [
    ['{\n  "a": 1\n  "b": 2\n}', "wrangler.jsonc:3:3: unexpected \"\\\"\", expected ',' or '}'"],
    ['{\n  "a": "x\n"}', 'wrangler.jsonc:2:10: unterminated string'],
    ['{ "a": 1 } /* open', 'wrangler.jsonc:1:12: unterminated /* comment'],
    ['// only a comment\n', 'wrangler.jsonc:2:1: the file holds no value'],
    ['{ "a": tru }', 'wrangler.jsonc:1:8: unexpected "t", expected a value'],
    ['[1] 2', 'wrangler.jsonc:1:5: unexpected "2" after the value'],
    ['{ a: 1 }', 'wrangler.jsonc:1:3: unexpected "a", expected a property name in double quotes or \'}\''],
    ['{ "a": "\\x" }', 'wrangler.jsonc:1:9: invalid escape in a string'],
    ['[1,,2]', 'wrangler.jsonc:1:4: unexpected ",", expected a value'],
  ];
  for (const [text, start] of cases) {
    const err = t.throws(() => parseJsonc(text, 'wrangler.jsonc'));
    t.is(err.code, 'ERR_DURABLE_CONFIG');
    t.true(err.message.startsWith(start), `${JSON.stringify(text)}: ${err.message}`);
  }
});
