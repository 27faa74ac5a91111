'use strict';
// A host's worker classes: each bound once, on first use, to its name on disk,
// its callable methods and its declared collections. Two different classes of
// one name are refused: their workers would share files.
const { DurableError, codes } = require('./errors');
const { CLASS_NAME, describe } = require('./rules');
const { declaredCollections, nativeSpec } = require('../collections/declarations');
const { DurableWorker, callableMethods } = require('./worker');
const { nameOf } = require('../runtime/calls');

/**
 * @typedef {object} Binding
 * @property {Function} Class
 * @property {string} name the class's name on disk
 * @property {Set<string>} methods what a stub may call
 * @property {object} collections its declared collections
 * @property {boolean} remote whether it runs on a shard
 * @property {Record<string, object>} series each method's metrics, made on its first call
 */

class Bindings {
  /** @type {Map<Function, Binding>} */
  #byClass = new Map();
  /** @type {Map<string, Function>} name → class, to refuse two classes of one name */
  #byName = new Map();
  #native;
  #isRemote;

  /**
   * @param {{ declare(name: string, spec: object): void }} native the storage core, told each class's collections
   * @param {(Class: Function) => boolean} isRemote whether a class runs on a shard
   */
  constructor(native, isRemote) {
    this.#native = native;
    this.#isRemote = isRemote;
  }

  /**
   * The binding of `Class`, made on first use.
   * @returns {Binding}
   */
  bind(Class) {
    let b = this.#byClass.get(Class);
    if (b !== undefined) return b;
    if (typeof Class !== 'function' || !(Class.prototype instanceof DurableWorker)) {
      throw new DurableError(codes.NAME, `${describe(Class)} is not a class extending DurableWorker`);
    }
    const name = nameOf(Class);
    if (typeof name !== 'string' || !CLASS_NAME.test(name)) {
      throw new DurableError(codes.NAME, `worker class name ${JSON.stringify(name)} is not usable on disk: it must match [A-Za-z0-9_-]{1,64} (set static workerName to choose one)`);
    }
    const other = this.#byName.get(name);
    if (other !== undefined && other !== Class) {
      throw new DurableError(codes.NAME, `two different classes are both named ${name} in this host; give one a static workerName`);
    }
    const collections = declaredCollections(Class, name);
    this.#native.declare(name, nativeSpec(collections));
    b = { Class, name, methods: callableMethods(Class), collections, remote: this.#isRemote(Class), series: Object.create(null) };
    this.#byClass.set(Class, b);
    this.#byName.set(name, Class);
    return b;
  }

  /** The class bound under `name`, if any. */
  named(name) {
    return this.#byName.get(name);
  }
}

module.exports = { Bindings };
