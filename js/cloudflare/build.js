'use strict';
// Node side: turns a module of DurableWorker classes into a workerd
// deployment on disk — one esbuild bundle and one capnp config — without
// running it (./process.js does that).
//
// The bundle resolves `durable-workers` to ./base.js and
// `durable-workers/cloudflare` to ./workerd.mjs, so the user's module is not
// edited. Node built-ins required by CommonJS code are made static imports of
// workerd's own node: modules (nodejs_compat, on by default at the pinned
// compatibility date).
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { DurableError, codes } = require('../api/errors');
const { PING_PATH, TOKEN_FILE } = require('./ready');

/** The workerd release this package is tested against (package.json pins it exactly). */
const WORKERD_VERSION = '1.20261117.1';
/** The compatibility date the config asks for: nodejs_compat is a default from 2026-08-04. */
const COMPATIBILITY_DATE = '2026-11-01';

/** Where the workerd binary of the pinned npm package is. */
function workerdBinary() {
  const pkg = require.resolve('workerd/package.json');
  const { version } = JSON.parse(fs.readFileSync(pkg, 'utf8'));
  if (version !== WORKERD_VERSION) {
    throw new DurableError(codes.NAME, `workerd ${version} is installed, but durable-workers is tested with ${WORKERD_VERSION} exactly (npm install workerd@${WORKERD_VERSION})`);
  }
  const bin = path.join(path.dirname(pkg), 'bin', process.platform === 'win32' ? 'workerd.exe' : 'workerd');
  if (fs.existsSync(bin)) return bin;
  return require('workerd').default;
}

/** esbuild: a CommonJS require('node:x') becomes a static import of workerd's node:x. */
const nodeBuiltins = {
  name: 'durable-workers-node-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => (args.namespace === 'node-builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'node-builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({ contents: `export * from ${JSON.stringify(args.path)}; export { default } from ${JSON.stringify(args.path)};`, loader: 'js' }));
  },
};

/**
 * Bundles `entry` into one ES module for workerd at `outfile`: `cloudflare:*`
 * left to workerd, `node:` builtins as workerd's, class names kept (the
 * config names them).
 * @param {string} entry
 * @param {string} outfile
 * @param {Record<string, string>} [alias]
 */
async function bundleForWorkerd(entry, outfile, alias) {
  const esbuild = require('esbuild');
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import', 'default'],
    keepNames: true,
    external: ['cloudflare:*'],
    alias,
    plugins: [nodeBuiltins],
    logLevel: 'silent',
  });
}

/**
 * The DurableWorker classes a module exports, by export name. The module is
 * imported in this process (it should import only durable-workers and
 * portable code); if that fails, the error is logged and the exports the file
 * declares as classes are taken instead (toDurableObject checks them inside
 * workerd).
 */
async function workerExports(file, esbuild) {
  const { DurableWorker } = require('../api/worker');
  try {
    const mod = await import(pathToFileURL(file).href);
    return Object.entries(mod)
      .filter(([name, v]) => name !== 'default' && typeof v === 'function' && v.prototype instanceof DurableWorker)
      .map(([name, v]) => ({ exportName: name, name: Object.hasOwn(v, 'workerName') ? v.workerName : v.name }));
  } catch (err) {
    // Not importable here (it needs something only workerd has): read its
    // exports without running it, and take those the file declares as classes.
    console.warn(`durable-workers workerd: ${file} could not be imported in Node (${err?.message ?? err}); taking the exported classes it declares, which toDurableObject checks inside workerd`);
    const r = await esbuild.build({ entryPoints: [file], bundle: false, write: false, metafile: true, format: 'esm', logLevel: 'silent' });
    const out = Object.values(r.metafile.outputs)[0];
    const source = fs.readFileSync(file, 'utf8');
    const declared = new Set([...source.matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g), ...source.matchAll(/\b([A-Za-z_$][\w$]*)\s*=\s*class\b/g)].map((m) => m[1]));
    return out.exports.filter((n) => n !== 'default' && declared.has(n)).map((n) => ({ exportName: n, name: n }));
  }
}

function capnpString(s) {
  return JSON.stringify(String(s));
}

/**
 * Bundles `module` and writes `worker.mjs` and `config.capnp` into `outDir`.
 * @param {{ module: string, outDir: string, dataDir: string, port: number, host?: string,
 *           text?: Record<string, string>, allowLocalNetwork?: boolean, extraEntry?: string }} o
 *   text: plain-text bindings (secrets); extraEntry: code appended to the generated entry
 * @returns {Promise<{ config: string, bundle: string, classes: { exportName: string, name: string }[] }>}
 */
async function buildWorkerd(o) {
  const esbuild = require('esbuild');
  const file = path.resolve(o.module);
  if (!fs.existsSync(file)) throw new DurableError(codes.NAME, `workerd: no module at ${file}`);
  fs.mkdirSync(o.outDir, { recursive: true });
  fs.mkdirSync(o.dataDir, { recursive: true });
  const classes = await workerExports(file, esbuild);
  for (const c of classes) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(c.name)) {
      throw new DurableError(codes.NAME, `workerd: worker class name ${JSON.stringify(c.name)} (export ${c.exportName}) must match [A-Za-z0-9_-]{1,64} (set static workerName to choose one)`);
    }
  }
  const entry = path.join(o.outDir, 'entry.mjs');
  // Readiness: startWorkerd waits for this deployment's own answer, not for
  // whatever else may answer HTTP on the port.
  const token = crypto.randomBytes(16).toString('hex');
  const lines = [
    '// Generated by durable-workers workerd: one Durable Object class per exported DurableWorker class.',
    `import * as user from ${JSON.stringify(file)};`,
    "import { toDurableObject } from 'durable-workers/cloudflare';",
    // Exported under a string name: a workerName may hold '-', which no identifier does.
    ...classes.map((c, i) => `const __dw${i} = toDurableObject(user[${JSON.stringify(c.exportName)}], { binding: ${JSON.stringify(c.name)} });\nexport { __dw${i} as ${JSON.stringify(c.name)} };`),
    // A default export with fetch, or else a top-level fetch export.
    "const handler = typeof user.default?.fetch === 'function' ? user.default : user;",
    'export default {',
    '  fetch(request, env, ctx) {',
    `    if (new URL(request.url).pathname === ${JSON.stringify(PING_PATH)}) return new Response(${JSON.stringify(token)});`,
    "    if (typeof handler?.fetch === 'function') return handler.fetch(request, env, ctx);",
    "    return new Response('this module exports no fetch handler (export default { fetch(request, env) { … } }, or export function fetch(request, env))', { status: 404 });",
    '  },',
    '};',
    o.extraEntry ?? '',
  ];
  fs.writeFileSync(entry, `${lines.join('\n')}\n`);
  const here = __dirname;
  const bundle = path.join(o.outDir, 'worker.mjs');
  await bundleForWorkerd(entry, bundle, { 'durable-workers/cloudflare': path.join(here, 'workerd.mjs'), 'durable-workers': path.join(here, 'base.js') });
  const namespaces = classes.map((c) => `(className = ${capnpString(c.name)}, uniqueKey = ${capnpString(`durable-workers:${c.name}`)}, enableSql = true)`);
  const bindings = [
    ...classes.map((c) => `(name = ${capnpString(c.name)}, durableObjectNamespace = ${capnpString(c.name)})`),
    ...Object.entries(o.text ?? {}).map(([k, v]) => `(name = ${capnpString(k)}, text = ${capnpString(v)})`),
  ];
  const allow = o.allowLocalNetwork ? '["public", "private", "local"]' : '["public"]';
  const config = `# Generated by durable-workers workerd (workerd ${WORKERD_VERSION}).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "storage", disk = (path = ${capnpString(path.resolve(o.dataDir))}, writable = true)),
    (name = "internet", network = (allow = ${allow}, tlsOptions = (trustBrowserCas = true))),
  ],
  sockets = [ (name = "http", address = ${capnpString(`${o.host ?? '127.0.0.1'}:${o.port}`)}, http = (), service = "main") ],
);

const worker :Workerd.Worker = (
  modules = [ (name = "worker.mjs", esModule = embed "worker.mjs") ],
  compatibilityDate = ${capnpString(COMPATIBILITY_DATE)},
  durableObjectNamespaces = [${namespaces.join(', ')}],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [${bindings.join(', ')}],
  globalOutbound = "internet",
);
`;
  // The token first: a config never sits beside another build's token. Only
  // this user reads it: a process that took the port first cannot learn it.
  fs.writeFileSync(path.join(o.outDir, TOKEN_FILE), token, { mode: 0o600 });
  fs.chmodSync(path.join(o.outDir, TOKEN_FILE), 0o600);
  const configPath = path.join(o.outDir, 'config.capnp');
  fs.writeFileSync(configPath, config);
  return { config: configPath, bundle, classes };
}

module.exports = { buildWorkerd, bundleForWorkerd, capnpString, workerdBinary, WORKERD_VERSION, COMPATIBILITY_DATE };
