'use strict';
// Durable Object ids, made exactly as local workerd makes them, so that one
// `uniqueKey` names the same objects on both hosts (the differential test
// relies on it).
//
// Guarantee: for the same uniqueKey, idFromName(n).toString() here equals
// `env.NS.idFromName(n).toString()` on workerd with
// `durableObjectNamespaces = [(uniqueKey = …)]`; idFromString() accepts
// exactly the ids workerd accepts, with workerd's errors.
//
// Mechanism (src/workerd/server/actor-id-impl.c++; the factory is built from
// the namespace's uniqueKey in server/workerd-api.c++ and server/server.c++):
// * key = SHA-256(uniqueKey).
// * An id is 32 bytes: 16 bytes of base, then the first 16 bytes of
//   HMAC-SHA-256(key, base). The second half is a MAC: an id from another
//   namespace, or a typo, fails idFromString().
// * idFromName: base = the first 16 bytes of HMAC-SHA-256(key, name), the
//   name taken as workerd's bytes for a string (./keys.js: a lone surrogate
//   is not U+FFFD). newUniqueId: 16 random bytes.
// * The hex form is lowercase; idFromString also takes uppercase digits.
// * Jurisdictions are not implemented by local workerd, and are refused here
//   with its message.
const crypto = require('node:crypto');
const { toBytes, fromBytes } = require('./keys');

const BASE_LENGTH = 16;
/**
 * Names whose id bytes each namespace remembers: an app that calls
 * `getByName` on every request would otherwise pay two HMACs a request (a
 * tenth of a small request's CPU).
 */
const NAMES_CACHED = 1024;
const HEX_ID = /^[0-9a-fA-F]{64}$/;
const NO_JURISDICTIONS = 'Jurisdiction restrictions are not implemented in workerd.';
/** Only this module constructs ids: `new DurableObjectId()` is refused, as workerd refuses it. */
const CONSTRUCT = Symbol('DurableObjectId');

class DurableObjectId {
  #bytes;

  /** @private use a namespace's idFromName, idFromString or newUniqueId */
  constructor(token, bytes, name) {
    if (token !== CONSTRUCT) throw new TypeError('Illegal constructor');
    this.#bytes = bytes;
    // Own, enumerable, read-only, in workerd's order (JSG instance
    // properties): JSON.stringify(id) is '{"name":"x"}' on both hosts.
    Object.defineProperty(this, 'jurisdiction', { value: undefined, enumerable: true, configurable: true });
    Object.defineProperty(this, 'name', { value: name, enumerable: true, configurable: true });
  }

  /** The 64 lowercase hex digits that idFromString() takes back. */
  toString() {
    return this.#bytes.toString('hex');
  }

  /** Whether two ids name the same object (by their bytes, as workerd compares them). */
  equals(other) {
    if (!(other instanceof DurableObjectId)) {
      throw new TypeError("Failed to execute 'equals' on 'DurableObjectId': parameter 1 is not of type 'DurableObjectId'.");
    }
    return this.#bytes.equals(other.#bytes);
  }
}

/**
 * The id factory of one namespace.
 * @param {string} uniqueKey the namespace's key; ids depend on nothing else
 * @returns {{ idFromName(name: string): DurableObjectId, idFromString(hex: string): DurableObjectId,
 *             idFromStringNamed(hex: string, name: string | undefined): DurableObjectId,
 *             newUniqueId(options?: { jurisdiction?: string | null }): DurableObjectId,
 *             jurisdiction(j?: string | null): object }}
 */
function namespaceIds(uniqueKey) {
  if (typeof uniqueKey !== 'string' || uniqueKey.length === 0) throw new TypeError('namespaceIds: uniqueKey must be a non-empty string');
  const key = crypto.createHash('sha256').update(toBytes(uniqueKey)).digest();
  const hmac16 = (data) => crypto.createHmac('sha256', key).update(data).digest().subarray(0, BASE_LENGTH);
  const withMac = (base) => Buffer.concat([base, hmac16(base)]);
  /** @type {Map<string, { id: Buffer, name: string }>} most recently used last */
  const named = new Map();

  const ids = {
    idFromName(name) {
      requireArgument(name !== undefined, 'idFromName');
      const text = `${name}`;
      let hit = named.get(text);
      if (hit !== undefined) {
        named.delete(text);
      } else {
        const bytes = toBytes(text);
        // The name is kept as workerd keeps it: its bytes, decoded again.
        hit = { id: withMac(hmac16(bytes)), name: fromBytes(bytes) };
        if (named.size >= NAMES_CACHED) named.delete(named.keys().next().value);
      }
      named.set(text, hit);
      // A new id each call, as on workerd; the bytes are never written to, so they are shared.
      return new DurableObjectId(CONSTRUCT, hit.id, hit.name);
    },
    idFromString(hex) {
      requireArgument(hex !== undefined, 'idFromString');
      return ids.idFromStringNamed(`${hex}`, undefined);
    },
    /**
     * Not on the JS namespace: an id read back from storage with the name it
     * was made from, for `ctx.id.name` after a restart (workerd's
     * `idFromStringNamed`, used for alarms). The MAC is checked; the name is
     * trusted, not hashed again.
     * @param {string} hex
     * @param {string | undefined} name
     */
    idFromStringNamed(hex, name) {
      if (!HEX_ID.test(hex)) throw new TypeError('Invalid Durable Object ID: must be 64 hex digits');
      const raw = Buffer.from(hex, 'hex');
      const id = withMac(raw.subarray(0, BASE_LENGTH));
      if (!id.equals(raw)) throw new TypeError('Durable Object ID is not valid for this namespace.');
      return new DurableObjectId(CONSTRUCT, id, name);
    },
    newUniqueId(options) {
      if (readJurisdiction(options, 'newUniqueId', 'NewUniqueIdOptions') !== null) throw new Error(NO_JURISDICTIONS);
      return new DurableObjectId(CONSTRUCT, withMac(crypto.randomBytes(BASE_LENGTH)), undefined);
    },
    /** `ns.jurisdiction(j)`: workerd gives the same namespace back for undefined or null, and refuses any jurisdiction. */
    jurisdiction(j) {
      if (j !== undefined && j !== null) {
        // Coerced first, as JSG does, so a Symbol fails as on workerd.
        void `${j}`;
        throw new Error(NO_JURISDICTIONS);
      }
      return ids;
    },
  };
  return ids;
}

/** JSG's TypeError for a missing (undefined) string argument; any other value is coerced to a string. */
function requireArgument(present, method) {
  if (!present) throw new TypeError(`Failed to execute '${method}' on 'DurableObjectNamespace': parameter 1 is not of type 'string'.`);
}

/** The `jurisdiction` of an options struct, coerced as JSG does; null when there is none. */
function readJurisdiction(options, method, type) {
  if (options === undefined || options === null) return null;
  if (typeof options !== 'object' && typeof options !== 'function') {
    throw new TypeError(`Failed to execute '${method}' on 'DurableObjectNamespace': parameter 1 is not of type '${type}'.`);
  }
  const j = options.jurisdiction;
  return j === undefined || j === null ? null : `${j}`;
}

/**
 * The uniqueKey miniflare (`wrangler dev`) gives a namespace:
 * `<worker name>-<class name>` (packages/miniflare/src/plugins/do/namespaces.ts
 * `getDurableObjectUniqueKey`), with an empty worker name when the config has
 * none. With it, ids match those of `wrangler dev` for the same config.
 * @param {string | null | undefined} workerName the config's `name`
 * @param {string} className
 */
function wranglerUniqueKey(workerName, className) {
  return `${workerName ?? ''}-${className}`;
}

module.exports = { DurableObjectId, namespaceIds, wranglerUniqueKey };
