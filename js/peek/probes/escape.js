// network.enforcement: after the guard is installed, try the ways around it.
// Reaching the harness's server means the guard is a guard-rail. node:http
// first; where that goes through the guarded fetch (workerd implements
// node:http over fetch), a raw socket from node:net.
import { createRequire } from 'node:module';

const builtin = (name) => globalThis.process?.getBuiltinModule?.(name) ?? createRequire(import.meta.url)(name);

export default async function escape(api, ctx) {
  const { url } = ctx.trigger.params;
  const tried = {};
  try {
    await import('node:http');
    tried.import = 'loaded';
  } catch (err) {
    tried.import = err.code ?? err.message;
  }
  try {
    await fetch(url);
    tried.fetch = 'reached';
  } catch (err) {
    tried.fetch = err.code ?? err.message;
  }
  let http = null;
  try {
    http = builtin('node:http');
  } catch (err) {
    tried.require = err.code ?? err.message;
  }
  if (http !== null) {
    tried.require = await new Promise((resolve) => {
      http
        .get(url, (res) => {
          res.resume();
          resolve(`reached (${res.statusCode})`);
        })
        .on('error', (err) => resolve(err.code ?? err.message));
    });
  }
  if (!String(tried.require).startsWith('reached')) {
    try {
      const net = builtin('node:net');
      const { hostname, port, pathname } = new URL(url);
      tried.net = await new Promise((resolve) => {
        const socket = net.connect(Number(port), hostname, () => socket.write(`GET ${pathname} HTTP/1.0\r\nHost: ${hostname}\r\n\r\n`));
        let text = '';
        socket.on('data', (d) => {
          text += d;
        });
        socket.on('end', () => resolve(/^HTTP\/1\.[01] (\d+)/.test(text) ? `reached (${RegExp.$1})` : `answered ${JSON.stringify(text.slice(0, 40))}`));
        socket.on('error', (err) => resolve(err.code ?? err.message));
      });
    } catch (err) {
      tried.net = err.code ?? err.message;
    }
  }
  return tried;
}
