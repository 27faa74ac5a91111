// network.enforcement: after the guard is installed, try the ways around it.
// Reaching the harness's server means the guard is a guard-rail.
import { createRequire } from 'node:module';

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
    http = process.getBuiltinModule?.('node:http') ?? createRequire(import.meta.url)('node:http');
  } catch (err) {
    tried.require = err.code ?? err.message;
  }
  if (http !== null) {
    tried.require = await new Promise((resolve) => {
      http.get(url, (res) => {
        res.resume();
        resolve(`reached (${res.statusCode})`);
      }).on('error', (err) => resolve(err.code ?? err.message));
    });
  }
  return tried;
}
