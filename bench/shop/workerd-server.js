'use strict';
// The shop on a local workerd, for bench/shop.js: examples/cloudflare/shop.js
// (the classes of examples/shop/cart.js, unchanged, as Durable Objects)
// bundled and run by the pinned workerd with its storage under <dir>.
//   node bench/shop/workerd-server.js <dir>   sends { url } over IPC once it serves, stops workerd on SIGTERM
const path = require('node:path');
const { buildWorkerd, startWorkerd, freePort } = require('../../js/cloudflare');

(async () => {
  const [dir] = process.argv.slice(2);
  const port = await freePort();
  const { config } = await buildWorkerd({
    module: path.join(__dirname, '..', '..', 'examples', 'cloudflare', 'shop.js'),
    outDir: path.join(dir, 'build'),
    dataDir: path.join(dir, 'data'),
    port,
  });
  const workerd = await startWorkerd({ config, port, onOutput: (line) => process.stderr.write(`[workerd] ${line}\n`) });
  let stopping = null;
  const stop = () => {
    stopping ??= workerd.stop().then(() => process.exit(0));
    return stopping;
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A workerd that dies on its own ends this script too.
  workerd.exited.then(({ code, signal }) => {
    if (stopping === null) {
      process.stderr.write(`workerd exited (code ${code}, signal ${signal})\n`);
      process.exit(1);
    }
  });
  process.send?.({ url: workerd.url, pid: workerd.pid });
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
