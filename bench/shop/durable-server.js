'use strict';
// The shop example's server in a process of its own, for bench/shop.js:
//   node bench/shop/durable-server.js <dir> [shards]   sends { url } over IPC, serves until SIGTERM
// DW_SHOP_OBSERVE=channels subscribes a do-nothing handler to every
// diagnostics channel; =otel makes OpenTelemetry spans of them, exported to
// nowhere through the SDK's batch processor (what observing costs).
// DW_SHOP_ARCHIVE=1 ships every commit to <dir>.archive (open({ archive })).
// DW_SHOP_TIMEOUT=1 gives every call a deadline (open({ callTimeout: 30_000 })):
// what the deadline machinery costs when it is on and never fires.
// DW_SHOP_SNAPSHOTS=1 takes snapshots (host.backup) back to back into
// <dir>.snap-<n>, each removed once the next is taken, while it serves.
const fs = require('node:fs');
const { startServer } = require('../../examples/shop/server');
const { observe } = require('./observe');

(async () => {
  observe(process.env.DW_SHOP_OBSERVE);
  const [dir, shards] = process.argv.slice(2);
  const server = await startServer({
    dir,
    shards: shards ? { count: Number(shards), module: require.resolve('../../examples/shop/cart') } : undefined,
    ...(process.env.DW_SHOP_ARCHIVE ? { archive: { to: `${dir}.archive` } } : {}),
    ...(process.env.DW_SHOP_TIMEOUT ? { callTimeout: 30_000 } : {}),
  });
  let snapshots = null;
  if (process.env.DW_SHOP_SNAPSHOTS) snapshots = backToBack(server.host, dir);
  process.send({ url: server.url });
  process.on('SIGTERM', async () => {
    snapshots?.stop();
    await snapshots?.done;
    await server.close();
    process.exit(0);
  });
})();

/** Snapshots of `host` one after another until stopped, each removed once the next is taken. */
function backToBack(host, dir) {
  let stopped = false;
  const done = (async () => {
    for (let n = 0; !stopped; n++) {
      await host.backup(`${dir}.snap-${n}`);
      await fs.promises.rm(`${dir}.snap-${n - 1}`, { recursive: true, force: true });
    }
  })();
  return { done, stop: () => (stopped = true) };
}
