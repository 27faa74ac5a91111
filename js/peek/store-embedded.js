'use strict';
// The embedded datastore: one durable worker per (user, profile), items in
// its state. Every call goes through that worker's mailbox, so two runs that
// write the same store are serialized and each write is durable before the
// run hears back. Limit: a durable worker holds at most 1 MiB of state, so
// this store suits a few thousand small items; past that, use remoteUrl.
const { randomUUID } = require('node:crypto');
const { DurableWorker } = require('../index');
const { codes, peekError } = require('./errors');
const { STORE_METHODS } = require('./store-methods');

const ITEM = 'item:';

class PeekStore extends DurableWorker {
  static workerName = 'peek-store';

  describe() {
    const [user, profile] = JSON.parse(this.id);
    return { user, profile, store: 'embedded', items: this.state.list({ prefix: ITEM }).size };
  }

  addItem(type, content, { metadata = {}, tags = [] } = {}) {
    if (typeof type !== 'string' || type.length === 0) throw new TypeError('addItem(type, content, { metadata, tags }): type must be a non-empty string');
    const now = Date.now();
    const item = { id: randomUUID(), type, content, metadata, tags: uniqueTags(tags), createdAt: now, updatedAt: now };
    this.state.set(ITEM + item.id, item);
    return item;
  }

  getItem(id) {
    return this.state.get(ITEM + id) ?? null;
  }

  updateItem(id, patch = {}) {
    const item = this.#existing(id);
    for (const key of ['type', 'content', 'metadata']) if (key in patch) item[key] = patch[key];
    if ('tags' in patch) item.tags = uniqueTags(patch.tags);
    item.updatedAt = Date.now();
    this.state.set(ITEM + id, item);
    return item;
  }

  deleteItem(id) {
    return this.state.delete(ITEM + id);
  }

  queryItems({ type, tag, limit = 100 } = {}) {
    const out = [];
    for (const item of this.state.list({ prefix: ITEM }).values()) {
      if (type !== undefined && item.type !== type) continue;
      if (tag !== undefined && !item.tags.includes(tag)) continue;
      out.push(item);
    }
    out.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
    return out.slice(0, limit);
  }

  tagItem(id, tags) {
    const item = this.#existing(id);
    item.tags = uniqueTags([...item.tags, ...tags]);
    this.state.set(ITEM + id, item);
    return item;
  }

  untagItem(id, tags) {
    const item = this.#existing(id);
    item.tags = item.tags.filter((t) => !tags.includes(t));
    this.state.set(ITEM + id, item);
    return item;
  }

  #existing(id) {
    const item = this.state.get(ITEM + id);
    if (item === undefined) throw peekError(codes.STORE, `no item ${JSON.stringify(id)} in this store`);
    return item;
  }
}

function uniqueTags(tags) {
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) throw new TypeError('tags must be an array of strings');
  return [...new Set(tags)];
}

/**
 * A store client for one (user, profile) over an open durable host.
 * @param {import('../../index').Host} durable
 * @param {{ user: string, profile: string }} session
 */
function embeddedStore(durable, { user, profile }) {
  const stub = durable.get(PeekStore, JSON.stringify([user, profile]));
  const client = {};
  for (const name of STORE_METHODS) client[name] = (...args) => stub[name](...args);
  return Object.freeze(client);
}

module.exports = { embeddedStore, PeekStore };
