'use strict';
// The shop's two kinds of durable worker.
//
// A Cart per customer and an Inventory per product. Each instance is addressed
// by its id, keeps its state resident (reads are plain synchronous calls), and
// runs one call at a time, so none of the methods below needs a lock or a
// transaction: nothing else touches this customer's cart while a method runs.
//
// Writes are not awaited. A method's result reaches its caller only after the
// commit that carries its writes has landed (the output gate), so anything a
// customer has been told is already on disk.
const { DurableWorker } = require('durable-workers');

class Cart extends DurableWorker {
  // Orders accumulate, so they live in a collection rather than in the
  // resident state (which is capped at 1 MiB per worker). The declared fields
  // are indexed columns in the cart's own SQLite file; the rest of each order
  // is stored as is, Dates and all.
  static collections = { orders: { number: 'integer', placedAt: 'date', total: 'integer' } };

  /**
   * The cart as it stands. Reads only, so it costs no commit.
   * @returns {{ id: string, items: Item[], total: number, orders: number }}
   */
  browse() {
    /** @type {Item[]} */
    const items = this.state.get('items') ?? [];
    /** @type {number} */
    const orders = this.state.get('orders') ?? 0;
    return { id: this.id, items, total: totalOf(items), orders };
  }

  /**
   * Adds `qty` of a product at `price` (integer cents, so totals add up
   * exactly). Adding a product already in the cart raises its quantity.
   * @param {Partial<Item>} [item] checked here: it comes from a request body
   */
  add({ sku, qty = 1, price } = {}) {
    // The worker checks its own input: it is the only authority on this cart.
    // A TypeError or RangeError reaches the caller as one (the server sends 400).
    if (typeof sku !== 'string' || sku === '') throw new TypeError('sku must be a non-empty string');
    if (!Number.isInteger(qty) || qty < 1) throw new RangeError(`qty must be a whole number ≥ 1, got ${qty}`);
    if (typeof price !== 'number' || !Number.isInteger(price) || price < 0) throw new RangeError(`price must be whole cents ≥ 0, got ${price}`);

    /** @type {Item[]} */
    const items = this.state.get('items') ?? [];
    const line = items.find((i) => i.sku === sku);
    if (line) line.qty += qty;
    else items.push({ sku, qty, price });
    // `get` returned a copy: the change exists only once it is `set` back.
    this.state.set('items', items);
    return this.browse();
  }

  /**
   * Takes a product out of the cart, whatever its quantity.
   * @param {string} sku
   */
  remove(sku) {
    /** @type {Item[]} */
    const items = this.state.get('items') ?? [];
    const kept = items.filter((i) => i.sku !== sku);
    if (kept.length < items.length) this.state.set('items', kept);
    return this.browse();
  }

  /**
   * Turns the cart into an order: records it, empties the cart, and reserves
   * every product with its Inventory.
   * @returns {Promise<Order>}
   */
  async checkout() {
    /** @type {Item[]} */
    const items = this.state.get('items') ?? [];
    if (items.length === 0) throw new RangeError('the cart is empty: nothing to check out');

    /** @type {number} */
    const before = this.state.get('orders') ?? 0;
    const number = before + 1;
    /** @type {Order} */
    const order = { id: `${this.id}#${number}`, number, items, total: totalOf(items), placedAt: new Date() };
    this.state.collection('orders').put(String(number), order);
    this.state.set('orders', number);
    this.state.delete('items');

    // Calls to other workers are output too: each reserve() leaves only once
    // the three writes above have committed (the order and the two keys, in
    // one transaction of the cart's file). So an Inventory never holds units
    // for an order this cart could still lose in a crash; at worst (a crash
    // between the two) an order is on disk with units not yet reserved, which
    // the order records are enough to put right.
    await Promise.all(items.map(({ sku, qty }) => this.ctx.get(Inventory, sku).reserve(qty)));
    return order;
  }

  /**
   * Past orders, newest first: read through the index on `number`.
   * @param {{ limit?: number }} [options]
   * @returns {Promise<Order[]>}
   */
  orders({ limit } = {}) {
    /** @type {import('durable-workers').Collection<Order>} */
    const orders = this.state.collection('orders');
    return orders.find({ orderBy: ['number', 'desc'], limit });
  }
}

class Inventory extends DurableWorker {
  /**
   * Holds `qty` units for an order. Every checkout that includes this product
   * lands here, one call at a time, so the running count needs no locking;
   * calls that queue up while a commit is in flight share the next one.
   * @param {number} qty
   * @returns {{ sku: string, reserved: number }}
   */
  reserve(qty) {
    if (!Number.isInteger(qty) || qty < 1) throw new RangeError(`qty must be a whole number ≥ 1, got ${qty}`);
    /** @type {number} */
    const before = this.state.get('reserved') ?? 0;
    const reserved = before + qty;
    this.state.set('reserved', reserved);
    return { sku: this.id, reserved };
  }

  /**
   * Units reserved so far.
   * @returns {{ sku: string, reserved: number }}
   */
  status() {
    /** @type {number} */
    const reserved = this.state.get('reserved') ?? 0;
    return { sku: this.id, reserved };
  }
}

/** @param {Item[]} items */
function totalOf(items) {
  return items.reduce((sum, i) => sum + i.qty * i.price, 0);
}

/**
 * @typedef {{ sku: string, qty: number, price: number }} Item  price in cents
 * @typedef {{ id: string, number: number, items: Item[], total: number, placedAt: Date }} Order
 */

module.exports = { Cart, Inventory };
