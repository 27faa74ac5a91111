// Types for `durable-workers/do`: Durable Object classes written against
// Cloudflare's API, run on this engine. The classes themselves are typed by
// `@cloudflare/workers-types`, unchanged; these are the host's own entry points.

import type { ArchiveOptions, ArchiveStats, SnapshotReport } from './index';

/** How a host keeps its objects: what `serve()` and `openObjects()` both take. */
export interface ObjectHostOptions {
  /** `'full'` (default): every commit synced to the device; `'relaxed'`: survives a crash of the process, not a power loss. */
  durability?: 'full' | 'relaxed';
  /**
   * Object files kept open at most; default 128. Past it, the least recently
   * used idle objects close theirs (the objects stay live, in memory) and open
   * them again before their next event. Each open file holds about three
   * descriptors and SQLite's memory.
   */
  maxOpenFiles?: number;
  /**
   * Objects kept in memory at most; default 10,000. Past it, the least
   * recently used idle objects leave memory (their next event constructs a
   * new instance from their file).
   */
  maxLive?: number;
  /**
   * An idle object leaves memory after this long, in ms; default 70,000
   * (workerd evicts after 70–140 s). Never while a timer it set with the
   * global `setTimeout`/`setInterval` is pending.
   */
  evictAfterMs?: number;
  /** The same for an object whose only connections are hibernatable WebSockets; default 10,000, as workerd hibernates them. */
  hibernateAfterMs?: number;
  /**
   * Ship every commit of every object to an archive as it commits, as
   * `open({ archive })` does; `restore(archive.to, newDir, { at })` makes the
   * directory again as it was at any moment it retains. Needs durability `'full'`.
   */
  archive?: ArchiveOptions;
}

/** What `serve()` takes. */
export interface ServeOptions extends ObjectHostOptions {
  /** The Worker module (`.js`, `.mjs`, or TypeScript `.ts`/`.mts`: compiled with esbuild as Wrangler does, or without it stripped where Node can); default: the config's `main`. */
  entry?: string;
  /** The Wrangler config (`wrangler.json`, `wrangler.jsonc` or `wrangler.toml`); default: searched from `cwd` as Wrangler does. */
  config?: string;
  /** Where relative paths start; default `process.cwd()`. */
  cwd?: string;
  /** The durable directory the objects live in, owned by this process while it serves; default `.data`. */
  dir?: string;
  /** Default 8787, as `wrangler dev`; 0 picks a free port. */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** How long `close()` waits for requests in flight, in ms; default 10,000. */
  drainMs?: number;
  /** Answer `durable-workers backup` (and `inspect`) on the directory's control socket; default true. */
  control?: boolean;
  /** Where an app's uncaught errors are written; default stderr. */
  log?: (line: string) => void;
}

/** A project being served. */
export interface Served {
  url: string;
  port: number;
  host: string;
  /** Keys of the Wrangler config that were ignored. */
  warnings: string[];
  /** A snapshot of every object's file and the catalog into `dest` (new or empty, outside `dir`), taken while they serve. */
  backup(dest: string): Promise<SnapshotReport>;
  /** Stops accepting, lets requests in flight end (up to `drainMs`), closes the objects. */
  close(): Promise<void>;
}

/**
 * Serves a Wrangler project's Worker (its default export's `fetch`) over
 * `node:http`, with its Durable Object bindings on this engine. Refuses a
 * binding this host does not provide (KV, R2, D1, …) by name, with
 * `ERR_DURABLE_CONFIG`; `ERR_DURABLE_LOCKED` when another process serves `dir`.
 */
export function serve(options?: ServeOptions): Promise<Served>;

/** One class bound in `openObjects`. */
export interface ObjectBinding {
  /** The Durable Object class (extending `DurableObject` from `cloudflare:workers`). */
  class: abstract new (ctx: any, env: any) => object;
  /** Whether `ctx.storage.sql` and `ctx.storage.kv` exist (`new_sqlite_classes`); default true. */
  sql?: boolean;
  /** The namespace's key, on which ids depend; default `<name>-<class name>`, as `wrangler dev` makes it. */
  uniqueKey?: string;
}

/** What `openObjects` takes. */
export interface OpenObjectsOptions extends ObjectHostOptions {
  dir: string;
  /** The Worker's name (Wrangler's `name`): part of each namespace's key. */
  name?: string;
  /** Binding name → class: each becomes a namespace in `env`. */
  bindings: Record<string, ObjectBinding>;
  /** Plain values added to `env`. */
  vars?: Record<string, unknown>;
  /** The first retry of an `alarm()` that threw waits this long (ms), doubled for each later one; default 2,000, as workerd. */
  alarmRetryMs?: number;
  /** Answer `durable-workers backup` (and `inspect`) on the directory's control socket; default false. */
  control?: boolean;
  /** Where a failing WebSocket handler is reported; default stderr. */
  log?: (line: string) => void;
}

/** Durable Object classes bound in this process. */
export interface Objects {
  /** The bindings: each a `DurableObjectNamespace` (`idFromName`, `get`, `getByName`, …), and the vars. */
  env: Record<string, any>;
  /** The durable directory, absolute. */
  dir: string;
  /**
   * A snapshot of every object's file and the catalog into `dest` (new or
   * empty, outside `dir`), taken while the objects go on: each file as of a
   * commit already synced. `ERR_DURABLE_BACKUP` when a file could not be copied.
   */
  backup(dest: string): Promise<SnapshotReport>;
  /** The continuous archive's counters; `archive` is null without one. */
  stats(): { archive: ArchiveStats | null };
  /** Closes every object (their commits land first) and releases the directory. Idempotent. */
  close(): Promise<void>;
}

/**
 * Opens `dir` and binds Durable Object classes in this process: for tests
 * and embedding. Wraps the global `setTimeout` and `setInterval` once, to
 * see the timers each object sets (the wrapper is the original outside
 * objects' events).
 */
export function openObjects(options: OpenObjectsOptions): Promise<Objects>;

/** Makes `import … from 'cloudflare:workers'` load in this process (`serve` does it itself). */
export function registerCloudflareModules(): void;
