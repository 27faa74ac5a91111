'use strict';
// Node side: a Peek deployment for workerd, written to disk. Every worker's
// module graph is bundled ahead of time (codeLoad 'deploy': there is no
// eval in workerd, so nothing can be loaded later) as a factory function
// that each run calls again, and each worker gets its own workerd service,
// so its own isolate. A gateway service routes the host's requests, holds
// the credentials as text bindings, and runs the hub, the schedules and the
// store as Durable Objects.
//
// bundle() is the slow part (esbuild, once); writeConfig() is the fast part
// that a new secret needs (then a restart: a deploy, as `wrangler secret put`).
const fs = require('node:fs');
const path = require('node:path');
const { COMPATIBILITY_DATE, WORKERD_VERSION } = require('../build');
const { randomBytes } = require('node:crypto');
const { credentialEnvName } = require('../../peek/credentials');
const { TOKEN_FILE } = require('../ready');

const HERE = __dirname;
const CLOUDFLARE = path.join(HERE, '..');
const JS = path.join(HERE, '..', '..');

const q = (s) => JSON.stringify(String(s));

/** esbuild: a CommonJS require('node:x') becomes a static import of workerd's node:x; the package's Node entry becomes its workerd base. */
const forWorkerd = {
  name: 'durable-workers-peek-workerd',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => (args.namespace === 'node-builtin' ? { path: args.path, external: true } : { path: args.path, namespace: 'node-builtin' }));
    b.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({ contents: `export * from ${q(args.path)}; export { default } from ${q(args.path)};`, loader: 'js' }));
    // js/peek/store-embedded.js and schedule-worker.js require '../index' (the native host) for DurableWorker only.
    b.onResolve({ filter: /^\.\.\/index$/ }, (args) => (path.resolve(args.resolveDir, '..', 'index.js') === path.join(JS, 'index.js') ? { path: path.join(CLOUDFLARE, 'base.js') } : undefined));
  },
};

const common = {
  bundle: true,
  target: 'es2022',
  mainFields: ['module', 'main'],
  conditions: ['workerd', 'worker', 'import', 'default'],
  logLevel: 'silent',
};

/**
 * Bundles the gateway, the realm and every worker into `outDir`.
 * @param {{ manifests: import('../../../peek').Manifest[], outDir: string }} o
 * @returns {Promise<{ workers: Record<string, { service: string, binding: string, path: string, builtins: string[] }> }>}
 */
async function bundle({ manifests, outDir }) {
  const esbuild = require('esbuild');
  fs.mkdirSync(path.join(outDir, 'workers'), { recursive: true });
  const shared = { ...common, format: 'esm', platform: 'neutral', external: ['cloudflare:*'], plugins: [forWorkerd], keepNames: true };
  await esbuild.build({ ...shared, entryPoints: [path.join(HERE, 'gateway.mjs')], outfile: path.join(outDir, 'gateway.mjs') });
  await esbuild.build({ ...shared, stdin: { contents: `export { realmHandler } from ${q(path.join(HERE, 'realm.js'))};`, resolveDir: HERE, loader: 'js' }, outfile: path.join(outDir, 'realm.mjs') });
  const workers = {};
  for (const [i, m] of manifests.entries()) {
    if (workers[m.name]) throw new TypeError(`cloudflareAdapter: two manifests name the worker ${m.name} (${workers[m.name].manifestPath}, ${m.manifestPath})`);
    const service = `w${i}`;
    // The module graph as CommonJS: all of it inside one function body, so
    // calling the function evaluates every module of the graph again.
    const r = await esbuild.build({ ...common, entryPoints: [m.worker.path], format: 'cjs', platform: 'node', write: false, metafile: true, external: ['cloudflare:*'] });
    const builtins = new Set();
    for (const input of Object.values(r.metafile.inputs)) {
      for (const imp of input.imports) if (imp.external && !imp.path.startsWith('cloudflare:')) builtins.add(imp.path.replace(/^node:/, ''));
    }
    const dir = path.join(outDir, 'workers', service);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'factory.mjs'),
      `// ${m.name}: ${m.worker.path}, bundled at deploy time. Each call is a fresh module graph.\nexport default function factory(require) {\nconst module = { exports: {} };\nconst exports = module.exports;\n${r.outputFiles[0].text}\nreturn module.exports;\n}\n`,
    );
    const names = [...builtins];
    fs.writeFileSync(
      path.join(dir, 'entry.mjs'),
      [
        "import factory from './factory.mjs';",
        "import { realmHandler } from './realm.mjs';",
        ...names.map((b, j) => `import * as b${j} from ${q(`node:${b}`)};`),
        `export default realmHandler(factory, { ${names.map((b, j) => `${q(`node:${b}`)}: b${j}`).join(', ')} });`,
        '',
      ].join('\n'),
    );
    workers[m.name] = { service, binding: `W_${i}`, path: m.worker.path, manifestPath: m.manifestPath, builtins: names };
  }
  return { workers };
}

/**
 * Writes config.capnp for a bundled deployment.
 * @param {{ outDir: string, dataDir: string, port: number, workers: object, secrets: Record<string, string>,
 *           adminToken: string, retries: number, session: [string, string], allowLocalNetwork: boolean }} o
 */
function writeConfig(o) {
  fs.mkdirSync(o.dataDir, { recursive: true });
  const ws = Object.entries(o.workers);
  const allow = o.allowLocalNetwork ? '["public", "private", "local"]' : '["public"]';
  // Readiness: startWorkerd waits for the gateway to answer with this token.
  const readyToken = randomBytes(16).toString('hex');
  const text = {
    PEEK_ADMIN_TOKEN: o.adminToken,
    PEEK_READY_TOKEN: readyToken,
    PEEK_RETRIES: String(o.retries),
    PEEK_STORE_SESSION: JSON.stringify(o.session),
    PEEK_WORKERS: JSON.stringify(Object.fromEntries(ws.map(([name, w]) => [name, w.binding]))),
  };
  for (const [name, value] of Object.entries(o.secrets)) if (typeof value === 'string' && value.length > 0) text[credentialEnvName(name)] = value;
  const bindings = [
    '(name = "PEEK_HUB", durableObjectNamespace = "PeekHub")',
    '(name = "PEEK_WORKER", durableObjectNamespace = "PeekWorkerObject")',
    '(name = "PEEK_LOG", durableObjectNamespace = "PeekLogObject")',
    '(name = "PEEK_STORE", durableObjectNamespace = "PeekStoreObject")',
    ...ws.map(([, w]) => `(name = ${q(w.binding)}, service = ${q(w.service)})`),
    ...Object.entries(text).map(([k, v]) => `(name = ${q(k)}, text = ${q(v)})`),
  ];
  const ns = ['PeekHub', 'PeekWorkerObject', 'PeekLogObject', 'PeekStoreObject'].map((c) => `(className = ${q(c)}, uniqueKey = ${q(`durable-workers-peek:${c}`)}, enableSql = true)`);
  const services = ws.map(
    ([name, w]) =>
      `    # ${name}\n    (name = ${q(w.service)}, worker = (modules = [(name = "entry.mjs", esModule = embed ${q(`workers/${w.service}/entry.mjs`)}), (name = "realm.mjs", esModule = embed "realm.mjs"), (name = "factory.mjs", esModule = embed ${q(`workers/${w.service}/factory.mjs`)})], compatibilityDate = ${q(COMPATIBILITY_DATE)}, globalOutbound = "internet")),`,
  );
  const config = `# Generated by durable-workers (cloudflareAdapter, workerd ${WORKERD_VERSION}): one service (isolate) per Peek worker, a gateway.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "gateway", worker = .gateway),
${services.join('\n')}
    (name = "storage", disk = (path = ${q(path.resolve(o.dataDir))}, writable = true)),
    (name = "internet", network = (allow = ${allow}, tlsOptions = (trustBrowserCas = true))),
  ],
  sockets = [ (name = "http", address = ${q(`127.0.0.1:${o.port}`)}, http = (), service = "gateway") ],
);

const gateway :Workerd.Worker = (
  modules = [ (name = "gateway.mjs", esModule = embed "gateway.mjs") ],
  compatibilityDate = ${q(COMPATIBILITY_DATE)},
  durableObjectNamespaces = [${ns.join(', ')}],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [${bindings.join(', ')}],
  globalOutbound = "internet",
);
`;
  // The token first (a config never sits beside another build's token), and
  // private, like the config.
  fs.writeFileSync(path.join(o.outDir, TOKEN_FILE), readyToken, { mode: 0o600 });
  fs.chmodSync(path.join(o.outDir, TOKEN_FILE), 0o600);
  const file = path.join(o.outDir, 'config.capnp');
  fs.writeFileSync(file, config, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return file;
}

module.exports = { bundle, writeConfig };
