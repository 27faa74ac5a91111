'use strict';
// Every member Cloudflare's own types (@cloudflare/workers-types, read with
// the TypeScript compiler) give a Durable Object's ctx, storage, SQL, kv,
// cursor, transaction and namespace exists on this host's objects, or is in
// the list below of what this host does not provide yet, each with its
// reason. A member added to the types, or one that this host starts to
// provide while still listed, fails the test.
const test = require('ava');
const path = require('node:path');
const ts = require('typescript');
const { tmpDir } = require('../helpers/tmp');
const { openObjects } = require('../../js/do/host');
const { DurableObject } = require('../../js/do/workers-module');

const TYPES = path.join(path.dirname(require.resolve('@cloudflare/workers-types/package.json')), 'index.d.ts');

/** Members this host does not provide yet, by type: the reason. docs/durable-objects-on-node.md lists them. */
const ABSENT = {
  DurableObjectState: {
    exports: 'ctx.exports (loopback bindings) is not provided',
    props: 'props come from service bindings, which serve refuses',
    container: 'containers are not provided',
    facets: 'facets are not provided',
  },
  DurableObjectStorage: {
    getCurrentBookmark: 'point-in-time recovery is not provided',
    getBookmarkForTime: 'point-in-time recovery is not provided',
    onNextSessionRestoreBookmark: 'point-in-time recovery is not provided',
  },
  SqlStorage: {
    Cursor: 'the cursor class is not exported as a property',
    Statement: "prepared statements (sql.prepare) are workerd's experimental API",
  },
  DurableObjectNamespace: {
    getExisting: 'not provided yet',
  },
};

/** The member names of a declared interface or class in the types file. */
function membersOf(name) {
  const source = ts.createSourceFile(TYPES, require('node:fs').readFileSync(TYPES, 'utf8'), ts.ScriptTarget.Latest, true);
  const names = new Set();
  const visit = (node) => {
    if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name?.text === name) {
      for (const m of node.members) {
        if (m.name === undefined || ts.isConstructorDeclaration(m)) continue;
        if (m.modifiers?.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword)) continue;
        names.add(ts.isComputedPropertyName(m.name) ? m.name.getText(source) : m.name.text);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...names];
}

let caught;
class Surface extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    caught = { ctx, env };
  }
  async touch() {
    let txn;
    await this.ctx.storage.transaction(async (t) => {
      txn = t;
    });
    caught.txn = txn;
    caught.cursor = this.ctx.storage.sql.exec('SELECT 1 AS one');
    return true;
  }
}

test('every member of workers-types for ctx, storage, sql, kv, cursors, transactions and namespaces exists here, or is listed as absent with its reason', async (t) => {
  const h = await openObjects({ dir: tmpDir(t), name: 'surface', bindings: { SURFACE: { class: Surface } } });
  t.teardown(() => h.close());
  await h.env.SURFACE.getByName('x').touch();
  const objects = {
    DurableObjectState: caught.ctx,
    DurableObjectStorage: caught.ctx.storage,
    DurableObjectTransaction: caught.txn,
    SqlStorage: caught.ctx.storage.sql,
    SqlStorageCursor: caught.cursor,
    SyncKvStorage: caught.ctx.storage.kv,
    DurableObjectNamespace: h.env.SURFACE,
  };
  const missing = [];
  const stale = [];
  for (const [type, object] of Object.entries(objects)) {
    const members = membersOf(type);
    t.true(members.length > 0, `${type} is in the types`);
    for (const m of members) {
      const has = m.startsWith('[') ? object[Symbol.iterator] !== undefined : m in object;
      const absent = ABSENT[type]?.[m];
      if (!has && absent === undefined) missing.push(`${type}.${m}`);
      if (has && absent !== undefined) stale.push(`${type}.${m} (listed: ${absent})`);
    }
  }
  t.deepEqual(missing, [], 'members of the types this host lacks');
  t.deepEqual(stale, [], 'members listed as absent that exist');
  // Nor more than Cloudflare's: what the host needs of these objects is
  // behind symbols and private fields, out of an app's reach.
  const extra = [];
  for (const [type, object] of Object.entries(objects)) {
    const members = new Set(membersOf(type));
    for (let o = object; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const name of Object.getOwnPropertyNames(o)) if (name !== 'constructor' && !members.has(name)) extra.push(`${type}.${name}`);
    }
  }
  t.deepEqual(extra, [], 'members beyond the types');
});
