'use strict';
// The shop example's server in a process of its own, for bench/shop.js:
//   node bench/shop/durable-server.js <dir> [shards]   sends { url } over IPC, serves until SIGTERM
const { startServer } = require('../../examples/shop/server');

(async () => {
  const [dir, shards] = process.argv.slice(2);
  const server = await startServer({
    dir,
    shards: shards ? { count: Number(shards), module: require.resolve('../../examples/shop/cart') } : undefined,
  });
  process.send({ url: server.url });
  process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
})();
