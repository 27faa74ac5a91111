// Loader hooks for a run's process on a Node without module.registerHooks,
// registered with module.register only when the walk of the worker's graph
// (prescan.js) meets what it cannot see (an import(), a data: module, a file
// it cannot read or lex),
// and always before the module that needs them loads: an import of a network module
// anywhere in the worker's ESM graph then fails when it resolves, naming the
// import. CommonJS require() is covered in child.js. This catches the honest
// mistake of a worker written against Node; it does not stop code that means
// to get out (process.getBuiltinModule), which is why the Node adapter
// declares network enforcement 'guard-rail'.
import { createRequire } from 'node:module';

const { isRefused, refusal } = createRequire(import.meta.url)('./refused.js');

export async function resolve(specifier, context, nextResolve) {
  if (isRefused(specifier)) throw refusal(specifier, context.parentURL, 'import');
  // A package's "imports" map may name net under a name of its own.
  const resolved = await nextResolve(specifier, context);
  if (isRefused(resolved.url)) throw refusal(specifier, context.parentURL, 'import', resolved.url);
  return resolved;
}
