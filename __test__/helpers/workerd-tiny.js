'use strict';
// A tiny workerd deployment that answers what local workerd itself does for
// ids and list ranges, so that js/do/ids.js and js/do/list-range.js are
// checked against the real thing rather than against a reading of its source.
//
//   POST /  { binding, ops: [op…] } → [result…], each { ok } or { error: [name, message] }
//   ops:  { op: 'idFromName', name } | { op: 'idFromString', hex } | { op: 'newUniqueId', options }
//         { op: 'list', keys, options: [o…] }: in one object, keys written with
//           kv.put, then for each o { sync: kv.list(o), async: await storage.list(o) },
//           each the keys in order or the error.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawnSync } = require('node:child_process');
const { startWorkerd, freePort } = require('../../js/cloudflare/process');
const { workerdBinary, COMPATIBILITY_DATE } = require('../../js/cloudflare/build');
const { PING_PATH, TOKEN_FILE } = require('../../js/cloudflare/ready');

const WORKER = `
import { DurableObject } from 'cloudflare:workers';
const settle = async (f) => { try { return { ok: await f() }; } catch (e) { return { error: [e?.name, e?.message] }; } };
const keysOf = (it) => [...it].map(([k]) => k);
export class Lists extends DurableObject {
  async fetch(request) {
    const { keys, options } = await request.json();
    const s = this.ctx.storage;
    await s.deleteAll();
    for (const k of keys) s.kv.put(k, 1);
    const out = [];
    for (const o of options) {
      const sync = await settle(() => keysOf(s.kv.list(o)));
      const async_ = await settle(async () => keysOf(await s.list(o)));
      out.push({ sync, async: async_ });
    }
    return Response.json(out);
  }
}
const ID = (id) => ({ hex: id.toString(), name: id.name ?? null });
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === ${JSON.stringify(PING_PATH)}) return new Response(TOKEN);
    const { binding, ops } = await request.json();
    const ns = env[binding];
    const out = [];
    for (const op of ops) {
      if (op.op === 'idFromName') out.push(await settle(() => ID(ns.idFromName(op.name))));
      else if (op.op === 'idFromString') out.push(await settle(() => ID(ns.idFromString(op.hex))));
      else if (op.op === 'newUniqueId') out.push(await settle(() => ID(ns.newUniqueId(op.options))));
      else if (op.op === 'list') {
        const stub = ns.get(ns.idFromName('lists'));
        const r = await stub.fetch('http://lists/', { method: 'POST', body: JSON.stringify(op) });
        out.push({ ok: await r.json() });
      } else out.push({ error: ['Unknown', op.op] });
    }
    return Response.json(out);
  },
};
`;

/** Why workerd cannot run here, or null: checked before the tests are declared, so a skip names its reason. */
function workerdProblem() {
  try {
    const r = spawnSync(workerdBinary(), ['--version'], { encoding: 'utf8', timeout: 20_000 });
    if (r.error) return `workerd does not run: ${r.error.message}`;
    if (r.status !== 0) return `workerd --version exited with ${r.status}: ${r.stderr}`;
    return null;
  } catch (err) {
    return `workerd is not installed: ${err.message}`;
  }
}

/**
 * Starts the deployment with one namespace per entry (all of the class
 * `Lists`, SQLite-backed), bound under `binding`.
 * @param {{ binding: string, uniqueKey: string }[]} namespaces
 * @returns {Promise<{ run(binding: string, ops: object[]): Promise<object[]>, close(): Promise<void> }>}
 */
async function startTiny(namespaces) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-do-tiny-'));
  const token = crypto.randomBytes(16).toString('hex');
  const classes = namespaces.map((n, i) => ({ ...n, className: `Lists${i}` }));
  const source = `const TOKEN = ${JSON.stringify(token)};\n${WORKER}\n${classes.map((c) => `export class ${c.className} extends Lists {}`).join('\n')}\n`;
  fs.writeFileSync(path.join(dir, 'worker.mjs'), source);
  fs.mkdirSync(path.join(dir, 'data'));
  fs.writeFileSync(path.join(dir, TOKEN_FILE), token, { mode: 0o600 });
  const port = await freePort();
  const q = JSON.stringify;
  fs.writeFileSync(
    path.join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker), (name = "storage", disk = (path = ${q(path.join(dir, 'data'))}, writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.mjs", esModule = embed "worker.mjs") ],
  compatibilityDate = ${q(COMPATIBILITY_DATE)},
  durableObjectNamespaces = [${classes.map((c) => `(className = ${q(c.className)}, uniqueKey = ${q(c.uniqueKey)}, enableSql = true)`).join(', ')}],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [${classes.map((c) => `(name = ${q(c.binding)}, durableObjectNamespace = ${q(c.className)})`).join(', ')}],
);
`,
  );
  let w;
  try {
    w = await startWorkerd({ config: path.join(dir, 'config.capnp'), port });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    async run(binding, ops) {
      const r = await fetch(w.url, { method: 'POST', body: JSON.stringify({ binding, ops }) });
      if (!r.ok) throw new Error(`workerd answered ${r.status}: ${await r.text()}`);
      return r.json();
    },
    async close() {
      await w.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = { startTiny, workerdProblem };
