// Loader hooks for a run's process (registered with module.register before
// any worker code is imported): an import of a network module anywhere in the
// worker's graph fails at load, naming the import. This catches the honest
// mistake of a worker written against Node; it does not stop code that means
// to get out (createRequire, process.getBuiltinModule), which is why the Node
// adapter declares network enforcement 'guard-rail'.

const REFUSED = new Set([
  'net', 'tls', 'http', 'https', 'http2', 'dgram', 'dns', 'dns/promises',
  'child_process', 'cluster', 'worker_threads', 'inspector', 'inspector/promises',
]);

export async function resolve(specifier, context, nextResolve) {
  const bare = specifier.startsWith('node:') ? specifier.slice(5) : specifier;
  if (REFUSED.has(bare)) {
    const from = context.parentURL ? ` (imported by ${context.parentURL})` : '';
    const err = new Error(
      `import of ${JSON.stringify(specifier)} refused${from}: a Peek worker may not load network or process modules; ` +
        'use fetch, allowed by capabilities.network.domains',
    );
    err.code = 'ERR_PEEK_IMPORT_REFUSED';
    throw err;
  }
  return nextResolve(specifier, context);
}
