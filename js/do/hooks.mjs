// Module resolution for apps written against Cloudflare: 'cloudflare:workers'
// is this host's own module; any other 'cloudflare:' module is refused by
// name (this host does not provide it).
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const WORKERS = pathToFileURL(require.resolve('./workers-module.js')).href;

/** @type {import('node:module').ResolveHook} */
export async function resolve(specifier, context, next) {
  if (specifier === 'cloudflare:workers') return { url: WORKERS, shortCircuit: true };
  if (specifier.startsWith('cloudflare:')) {
    throw Object.assign(new Error(`${specifier} is not available when Durable Objects run on Node (only cloudflare:workers is)`), {
      code: 'ERR_DURABLE_CONFIG',
    });
  }
  return next(specifier, context);
}
