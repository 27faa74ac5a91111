'use strict';
// The datastore methods a manifest may grant, the same on every store. A
// grant names a subset; the host builds exactly those on api.datastore.

/** Every method a store implements, in the order docs list them. */
const STORE_METHODS = Object.freeze(['describe', 'addItem', 'getItem', 'updateItem', 'deleteItem', 'queryItems', 'tagItem', 'untagItem']);

/** Granted when a manifest says `datastore: {}` without `methods`: only the session, nothing that reads or writes items. */
const DEFAULT_METHODS = Object.freeze(['describe']);

module.exports = { STORE_METHODS, DEFAULT_METHODS };
