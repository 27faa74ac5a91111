'use strict';
// The continuous archive to S3-compatible object storage (docs/backups.md).
//
// The storage core writes the archive to a local spool directory exactly as
// it would to any destination (src/archive/); this module ships what it
// finishes to a bucket and deletes it from the spool: each segment once it
// is renamed in, each base once its index exists, the index last. Keys are
// the spool's paths under `prefix`, so a bucket holds the same layout a
// directory archive does, and a restore downloads it and restores from that.
// Objects are immutable once put; a shipment that fails is tried again at the
// next tick, and the spool keeps it (the archive's lag grows; host.stats()
// says why). The AWS SDK (@aws-sdk/client-s3) is an optional peer
// dependency: the caller's S3Client is used, and the SDK's commands are
// loaded from wherever the application installed it.
const fs = require('node:fs');
const path = require('node:path');
const { DurableError, codes } = require('../api/errors');

/** How often the spool is shipped: the archive's lag to S3 is this plus a put. */
const TICK_MS = 500;

function sdk() {
  try {
    return require('@aws-sdk/client-s3');
  } catch (err) {
    throw new DurableError(codes.BACKUP, 'archive.s3 needs the AWS SDK: npm install @aws-sdk/client-s3', { cause: err });
  }
}

/**
 * @typedef {object} S3Target
 * @property {object} client an S3Client
 * @property {string} bucket
 * @property {string} [prefix] key prefix, '' by default; ends with '/' if not empty
 */

/** Every key under `prefix`, with its size. */
async function listKeys({ client, bucket, prefix = '' }) {
  const { ListObjectsV2Command } = sdk();
  const out = [];
  let token;
  do {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of r.Contents ?? []) out.push({ key: o.Key, size: o.Size });
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token);
  return out;
}

/** The sequence number after every one the bucket's archive holds (its segments and bases are named by them). */
async function nextSeq(target) {
  let next = 1;
  for (const { key } of await listKeys(target)) {
    const rel = key.slice((target.prefix ?? '').length);
    const seg = /^log\/([0-9a-f]{16})-([0-9a-f]{16})\.seg$/.exec(rel);
    const base = /^base\/([0-9a-f]{16})\//.exec(rel);
    const seq = seg ? Number.parseInt(seg[2], 16) : base ? Number.parseInt(base[1], 16) : 0;
    next = Math.max(next, seq + 1);
  }
  return next;
}

/** Ships a spool to a bucket, every TICK_MS, until closed. */
class S3Shipper {
  #target;
  #spool;
  #retainMs;
  #timer = null;
  #running = null;
  /** The last failure to ship, until a shipment succeeds. */
  failure = null;

  /**
   * @param {S3Target} target
   * @param {string} spool the local directory the core writes the archive to
   * @param {number} retainMs
   */
  constructor(target, spool, retainMs) {
    this.#target = target;
    this.#spool = spool;
    this.#retainMs = retainMs;
  }

  start() {
    this.#timer = setInterval(() => this.tick(), TICK_MS);
    this.#timer.unref();
  }

  /** Ships what the spool holds now; one tick at a time. */
  tick() {
    this.#running ??= this.#ship().finally(() => (this.#running = null));
    return this.#running;
  }

  /** Stops ticking and ships what is left (the core has written its last segment). */
  async close() {
    clearInterval(this.#timer);
    await this.#running;
    await this.tick();
    if (this.failure !== null)
      throw new DurableError(
        codes.BACKUP,
        `the archive could not ship everything to s3://${this.#target.bucket}/${this.#target.prefix ?? ''}: ${this.failure}; it stays in ${this.#spool} and is shipped at the next open`,
      );
  }

  async #ship() {
    try {
      let pruned = false;
      for (const name of files(path.join(this.#spool, 'log'))
        .filter((f) => f.endsWith('.seg'))
        .sort()) {
        await this.#put(`log/${name}`);
        fs.rmSync(path.join(this.#spool, 'log', name));
      }
      for (const base of files(path.join(this.#spool, 'base')).sort()) {
        const dir = path.join(this.#spool, 'base', base);
        if (!fs.existsSync(path.join(dir, 'base.idx'))) continue; // unfinished
        for (const rel of walk(dir)) if (rel !== 'base.idx') await this.#put(`base/${base}/${rel}`);
        await this.#put(`base/${base}/base.idx`);
        fs.rmSync(dir, { recursive: true, force: true });
        pruned = true;
      }
      if (pruned) await this.#prune();
      this.failure = null;
    } catch (err) {
      this.failure = err?.message ?? String(err);
    }
  }

  async #put(rel) {
    const { PutObjectCommand } = sdk();
    const body = fs.readFileSync(path.join(this.#spool, rel));
    await this.#target.client.send(new PutObjectCommand({ Bucket: this.#target.bucket, Key: `${this.#target.prefix ?? ''}${rel}`, Body: body }));
  }

  /** The rule of src/archive/base.rs `prune`, applied to the bucket. */
  async #prune() {
    const { GetObjectCommand, DeleteObjectsCommand } = sdk();
    const prefix = this.#target.prefix ?? '';
    const keys = (await listKeys(this.#target)).map((o) => o.key);
    const bases = [];
    for (const key of keys) {
      const m = new RegExp(`^${escape(prefix)}base/([0-9a-f]{16})/base\\.idx$`).exec(key);
      if (!m) continue;
      // The index's head: magic, the number taken when the base began, its start and end times.
      const r = await this.#target.client.send(new GetObjectCommand({ Bucket: this.#target.bucket, Key: key, Range: 'bytes=0-31' }));
      const head = Buffer.from(await r.Body.transformToByteArray());
      bases.push({ dir: m[1], first: Number(head.readBigUInt64LE(8)), finished: Number(head.readBigInt64LE(24)) });
    }
    bases.sort((a, b) => a.first - b.first);
    const horizon = Date.now() - this.#retainMs;
    const keep = bases.filter((b) => b.finished <= horizon).pop();
    if (keep === undefined) return;
    const firstOf = new Map(bases.map((b) => [b.dir, b.first]));
    const doomed = keys.filter((key) => {
      const rel = key.slice(prefix.length);
      const seg = /^log\/[0-9a-f]{16}-([0-9a-f]{16})\.seg$/.exec(rel);
      const base = /^base\/([0-9a-f]{16})\//.exec(rel);
      if (seg) return Number.parseInt(seg[1], 16) < keep.first;
      // A base without its index in the bucket is named by a number past every one it holds.
      if (base) return (firstOf.get(base[1]) ?? Number.parseInt(base[1], 16)) < keep.first;
      return false;
    });
    for (let i = 0; i < doomed.length; i += 1000) {
      await this.#target.client.send(new DeleteObjectsCommand({ Bucket: this.#target.bucket, Delete: { Objects: doomed.slice(i, i + 1000).map((Key) => ({ Key })) } }));
    }
  }
}

/**
 * Downloads the archive in a bucket into `dir` (new), for a restore.
 * @param {S3Target} target
 * @param {string} dir
 */
async function download(target, dir) {
  const { GetObjectCommand } = sdk();
  const prefix = target.prefix ?? '';
  const keys = await listKeys(target);
  if (keys.length === 0) throw new DurableError(codes.BACKUP, `s3://${target.bucket}/${prefix} holds no archive`);
  for (const { key } of keys) {
    const rel = key.slice(prefix.length);
    // Only the archive's own layout, never a key that climbs out of `dir`.
    if (!/^(log\/[0-9a-f]{16}-[0-9a-f]{16}\.seg|base\/[0-9a-f]{16}\/(base\.idx|[^/\\]+\/[0-9a-f]{2}\/[0-9a-f]{64}\.db))$/.test(rel) || rel.split('/').includes('..')) continue;
    const file = path.resolve(dir, rel);
    if (!file.startsWith(path.resolve(dir) + path.sep)) continue;
    const r = await target.client.send(new GetObjectCommand({ Bucket: target.bucket, Key: key }));
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, await r.Body.transformToByteArray(), { mode: 0o600 });
  }
}

function files(dir) {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** Every file under `dir`, relative, `/`-separated. */
function walk(dir, rel = '') {
  const out = [];
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...walk(dir, r));
    else out.push(r);
  }
  return out;
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

module.exports = { S3Shipper, nextSeq, download };
