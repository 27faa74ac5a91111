'use strict';
// Which `api.<ns>` a manifest grants, in one table, for the ungranted-api
// rule. It mirrors buildApi (../api.js) and the table in docs/peek.md ("The
// whole api"): a namespace exists exactly when its grant is in the manifest,
// so a worker reading one that is not granted gets undefined at run time, on
// every host. When buildApi gains or changes a namespace, this table is the
// one place to follow it (lint.test.js checks the two agree).

/**
 * Namespace → the manifest field that grants it (for the hint) and whether a
 * loaded manifest grants it.
 * @type {Readonly<Record<string, { grant: string, granted: (m: import('../../../peek').Manifest) => boolean }>>}
 */
const NAMESPACES = Object.freeze({
  datastore: { grant: 'capabilities.datastore', granted: (m) => Boolean(m.capabilities.datastore) },
  network: { grant: 'capabilities.network', granted: (m) => Boolean(m.capabilities.network) },
  pubsub: { grant: 'capabilities.pubsub', granted: (m) => Boolean(m.capabilities.pubsub) },
  publish: { grant: 'capabilities.pubsub', granted: (m) => Boolean(m.capabilities.pubsub) },
  // api.subscribe is there only when the worker names topics to hear.
  subscribe: { grant: 'capabilities.pubsub.subscribe (one topic or more)', granted: (m) => (m.capabilities.pubsub?.subscribe?.length ?? 0) > 0 },
  // Granted by writing "commands" in the manifest (the default, the worker's own name, does not).
  commands: { grant: 'commands', granted: (m) => m.commandsDeclared === true },
  log: { grant: 'capabilities.log', granted: (m) => Boolean(m.capabilities.log) },
  settings: { grant: 'settings (names and defaults)', granted: (m) => m.settings !== null && m.settings !== undefined },
  initialize: { grant: 'capabilities.lifecycle', granted: (m) => Boolean(m.capabilities.lifecycle) },
  onShutdown: { grant: 'capabilities.lifecycle', granted: (m) => Boolean(m.capabilities.lifecycle) },
});

/**
 * Why `api.<name>` will not be there for this manifest, or null when it will.
 * @param {string} name
 * @param {import('../../../peek').Manifest} manifest
 * @returns {{ message: string, hint: string } | null}
 */
function namespaceProblem(name, manifest) {
  const ns = Object.hasOwn(NAMESPACES, name) ? NAMESPACES[name] : undefined;
  if (ns === undefined) {
    return {
      message: `api.${name} is not part of the Peek api, so it is undefined on every host`,
      hint: `the api has ${Object.keys(NAMESPACES).join(', ')}; fetch is a global`,
    };
  }
  if (ns.granted(manifest)) return null;
  return {
    message: `api.${name} is not granted by the manifest, so it is undefined when the worker runs`,
    hint: `grant it with ${ns.grant} in the manifest, or check for it first: api.${name}?.…`,
  };
}

module.exports = { NAMESPACES, namespaceProblem };
