'use strict';
// The shop as a Node developer would write it without durable-workers: the
// same HTTP routes and answers as examples/shop/server.js, over better-sqlite3
// (v12), one database file per customer and per product, WAL with
// synchronous=FULL, one transaction per write. better-sqlite3 is synchronous,
// so requests simply run one after another on the JS thread; a 2xx means the
// change is on disk, as in the shop.
//
//   node bench/shop/baseline-server.js <dir>     prints { url } as JSON, serves until killed
//
// DW_BENCH_BETTER_SQLITE3 names another better-sqlite3 directory to load: a
// build for the Node line this server runs on (bench/lines.js).
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const Database = require(process.env.DW_BENCH_BETTER_SQLITE3 || 'better-sqlite3');

/** Open databases, least recently used first: at most 128, like the shop's maxLive. */
const MAX_OPEN = 128;

function store(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const open = new Map();
  const carts = (id) =>
    use(`cart-${id}`, (db) => {
      db.exec(`CREATE TABLE IF NOT EXISTS items (sku TEXT PRIMARY KEY, qty INTEGER, price INTEGER);
             CREATE TABLE IF NOT EXISTS orders (number INTEGER PRIMARY KEY, doc TEXT, total INTEGER, placed_at INTEGER)`);
      return {
        items: db.prepare('SELECT sku, qty, price FROM items ORDER BY rowid'),
        upsert: db.prepare('INSERT INTO items (sku, qty, price) VALUES (?, ?, ?) ON CONFLICT (sku) DO UPDATE SET qty = qty + excluded.qty'),
        remove: db.prepare('DELETE FROM items WHERE sku = ?'),
        clear: db.prepare('DELETE FROM items'),
        count: db.prepare('SELECT count(*) FROM orders').pluck(),
        insert: db.prepare('INSERT INTO orders (number, doc, total, placed_at) VALUES (?, ?, ?, ?)'),
        orders: db.prepare('SELECT doc FROM orders ORDER BY number DESC').pluck(),
      };
    });
  const inventory = (sku) =>
    use(`inv-${sku}`, (db) => {
      db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID');
      return {
        get: db.prepare("SELECT v FROM kv WHERE k = 'reserved'").pluck(),
        put: db.prepare("INSERT INTO kv (k, v) VALUES ('reserved', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"),
      };
    });

  function use(name, prepare) {
    let e = open.get(name);
    if (e !== undefined) {
      open.delete(name);
    } else {
      const db = new Database(path.join(dir, `${encodeURIComponent(name)}.db`));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      e = { db, ...prepare(db) };
      if (open.size >= MAX_OPEN) {
        const [oldest, victim] = open.entries().next().value;
        open.delete(oldest);
        victim.db.close();
      }
    }
    open.set(name, e);
    return e;
  }
  return { carts, inventory, close: () => open.forEach((e) => e.db.close()) };
}

const totalOf = (items) => items.reduce((s, i) => s + i.qty * i.price, 0);

function handler(s) {
  const browse = (id) => {
    const c = s.carts(id);
    const items = c.items.all();
    return { id, items, total: totalOf(items), orders: c.count.get() };
  };
  return (req, res, body) => {
    const parts = new URL(req.url, 'http://shop').pathname.split('/').slice(1).map(decodeURIComponent);
    const id = parts[1];
    const route = `${req.method} ${parts
      .slice(2)
      .join('/')
      .replace(/^items\/.*/, 'items/:sku')}`;
    switch (route) {
      case 'GET ':
        return [200, browse(id)];
      case 'POST items': {
        const { sku, qty = 1, price } = body;
        if (typeof sku !== 'string' || !Number.isInteger(qty) || qty < 1 || !Number.isInteger(price)) return [400, { error: { code: 'BAD_REQUEST', message: 'bad item' } }];
        s.carts(id).upsert.run(sku, qty, price);
        return [200, browse(id)];
      }
      case 'DELETE items/:sku':
        s.carts(id).remove.run(parts.slice(3).join('/'));
        return [200, browse(id)];
      case 'POST checkout': {
        const c = s.carts(id);
        const order = c.db.transaction(() => {
          const items = c.items.all();
          if (items.length === 0) return null;
          const number = c.count.get() + 1;
          const o = { id: `${id}#${number}`, number, items, total: totalOf(items), placedAt: new Date() };
          c.insert.run(number, JSON.stringify(o), o.total, o.placedAt.getTime());
          c.clear.run();
          return o;
        })();
        if (order === null) return [400, { error: { code: 'BAD_REQUEST', message: 'the cart is empty' } }];
        // Reserved after the order committed, one transaction per product, as the shop does.
        for (const { sku, qty } of order.items) {
          const inv = s.inventory(sku);
          inv.db.transaction(() => inv.put.run((inv.get.get() ?? 0) + qty))();
        }
        return [201, order];
      }
      case 'GET orders':
        return [
          200,
          s
            .carts(id)
            .orders.all()
            .map((d) => JSON.parse(d)),
        ];
      default:
        return [404, { error: { code: 'NOT_FOUND', message: route } }];
    }
  };
}

async function main() {
  const s = store(process.argv[2]);
  const handle = handler(s);
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let status;
      let out;
      try {
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
        [status, out] = handle(req, res, body);
      } catch (err) {
        [status, out] = [500, { error: { code: 'INTERNAL', message: err.message } }];
      }
      const payload = JSON.stringify(out);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }).end(payload);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  process.send?.({ url: `http://127.0.0.1:${server.address().port}` });
  process.on('SIGTERM', () => server.close(() => (s.close(), process.exit(0))));
}

main();
