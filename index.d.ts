// Public types of durable-workers. Hand-written and kept exact: every name here
// exists at runtime, and nothing at runtime is missing here.
import { EventEmitter } from 'node:events';

/** Options of {@link open}. */
export interface OpenOptions {
  /** The directory this process owns; created if missing. */
  dir: string;
  /** Open workers at most; past it the least recently used idle one is evicted. Default 128. */
  maxLive?: number;
  /** Milliseconds idle after which a worker is closed, swept when work arrives (never on a timer). Default 60000. */
  evictAfter?: number;
  /** Calls that may wait in one worker's mailbox; past it ERR_DURABLE_BUSY. Default 1024. */
  mailbox?: number;
  /** Ceiling on the alarm scheduler's sleep, in ms. Default 60000. */
  alarmPoll?: number;
  /**
   * Milliseconds a call, `start()`, `alarm()`, a socket handler or `stop()`
   * may run before its worker is reset (ERR_DURABLE_TIMEOUT to the caller).
   * Default: none. A stub's `{ timeout }` overrides it for its calls.
   */
  callTimeout?: number;
  /** A `TestClock` alarms and schedules fall due by, for tests. Not with `shards`. */
  clock?: TestClock;
  /**
   * `'full'` (default): every commit is synced to the device and survives power loss.
   * `'relaxed'`: commits survive a process crash, not a power loss.
   */
  durability?: 'full' | 'relaxed';
  /** Run the worker classes `module` exports on worker threads; storage stays on this thread. */
  shards?: ShardOptions;
  /**
   * Serve a control socket (`<dir>/.control.sock`, or one in the private
   * runtime directory named in `<dir>/.control` when that path is too long)
   * that `durable-workers inspect` and `top` ask while this process owns the
   * directory. Read-only; only this user can connect (socket 0600). Default true.
   */
  control?: boolean;
  /**
   * Ship every commit of every worker to another directory as it commits,
   * over base snapshots, so that `restore(archive.to, newDir, { at })` can
   * make the directory again as it was at any moment `retain` covers. See
   * docs/backups.md.
   */
  archive?: ArchiveOptions;
}

/** Options of `open({ archive })`. */
export interface ArchiveOptions {
  /** The archive's directory, outside `dir` (another disk, a network mount); or give `s3`. */
  to?: string;
  /**
   * Instead of `to`: a bucket of S3-compatible storage, through the caller's
   * `S3Client` (`@aws-sdk/client-s3`, an optional peer dependency). The
   * archive is written to `spool` and shipped from there every 500 ms.
   */
  s3?: S3Archive;
  /** With `s3`: the local directory the archive is written to first. Default `<dir>.archive-spool`. */
  spool?: string;
  /** How far back a restore must stay possible: ms, or `'7d'`, `'12h'`, `'30m'`, `'90s'`. Default `'7d'`. */
  retain?: number | string;
  /** How often a base snapshot is taken (one is taken at open). Default `'1d'`. */
  baseEvery?: number | string;
}

/** An archive in a bucket. */
export interface S3Archive {
  /** An `S3Client` of `@aws-sdk/client-s3`. */
  client: { send(command: unknown): Promise<unknown> };
  bucket: string;
  /** Key prefix, `''` by default; ends with `/` when not empty. */
  prefix?: string;
}

/** What the continuous archive has done since `open()`. */
export interface ArchiveStats {
  /** Commits (and creations, deletions) written to the archive. */
  records: number;
  /** Segment files written. */
  segments: number;
  /** Bytes written in segments. */
  bytes: number;
  /** Base snapshots finished. */
  bases: number;
  /** The last failure to write to the archive, until a write succeeds; null when none. */
  failure: string | null;
}

/** Options of `open({ shards })`. */
export interface ShardOptions {
  /** Worker threads. A worker always runs on the same one (a hash of its class and id). */
  count: number;
  /** Path of the module exporting the classes to run on shards (resolved from the working directory). */
  module: string;
  /** Heap ceiling of each shard, in MiB; a shard that exceeds it is lost. */
  memoryMb?: number;
  /** Heartbeat period while a shard has work in flight. Default 1000. */
  heartbeatMs?: number;
  /** Heartbeats in a row without an answer that end a shard. Default 3. */
  missedHeartbeats?: number;
  /** How long a new shard has to load the module and report ready. Default 30000. */
  startTimeoutMs?: number;
}

/** What `'shardLost'` receives besides the error. */
export interface ShardLostEvent {
  /** The shard's index, 0 … count-1. */
  shard: number;
}

/** Opens (creating if needed) a durable directory and takes ownership of it. */
export function open(options: OpenOptions): Promise<Host>;

/** What {@link Host.backup} copied. */
export interface SnapshotReport {
  /** The snapshot's directory, absolute. */
  dest: string;
  /** Worker files copied. */
  workers: number;
  /** Bytes copied, the catalog included. */
  bytes: number;
  /** When the copy began (epoch ms). */
  takenAt: number;
  /** How long it took (ms). */
  ms: number;
}

/** What {@link restore} restored, and what it left out. */
export interface RestoreReport {
  /** The restored directory, absolute. */
  dir: string;
  /** The workers restored (`id` is empty for a Durable Object's file). */
  workers: { class: string; id: string; file: string }[];
  /** Files that failed their hash or integrity check, or named a path outside the directory, and why. */
  failed: { file: string; reason: string }[];
  /** When the snapshot was taken (epoch ms); for an archive, the `at` asked for, or null for its latest. */
  takenAt: number | null;
}

/**
 * Makes `to` (new or empty) a durable directory holding the workers of the
 * snapshot in `from` ({@link Host.backup}, `durable-workers backup`), or of
 * the archive in `from` (`open({ archive })`) as of `at`, and
 * builds its catalog from them. A file that fails its hash or SQLite's
 * integrity check is left out and named in `failed`; the rest are restored.
 * Rejects with `ERR_DURABLE_BACKUP` for a target that is not empty, a
 * snapshot without its manifest, a worker in `only` it does not hold, or an
 * `at` before the snapshot was finished.
 */
export function restore(
  from: string | { s3: S3Archive },
  to: string,
  options?: {
    /** `Class/id` names: restore only these workers. */
    only?: string[];
    /** Epoch ms: the moment wanted (an archive: any it retains, its latest by default; a snapshot: only the one it holds). */
    at?: number;
    durability?: 'full' | 'relaxed';
  },
): Promise<RestoreReport>;

/** Stable codes carried by every {@link DurableError}. */
export type DurableErrorCode =
  | 'ERR_DURABLE_LOCKED'
  | 'ERR_DURABLE_BUSY'
  | 'ERR_DURABLE_CYCLE'
  | 'ERR_DURABLE_STATE_TOO_LARGE'
  | 'ERR_DURABLE_STATE_FORMAT'
  | 'ERR_DURABLE_UNCLONEABLE'
  | 'ERR_DURABLE_SHARD_LOST'
  | 'ERR_DURABLE_CORRUPT'
  | 'ERR_DURABLE_ID'
  | 'ERR_DURABLE_NAME'
  | 'ERR_DURABLE_METHOD'
  | 'ERR_DURABLE_NOT_INDEXED'
  | 'ERR_DURABLE_TYPE'
  | 'ERR_DURABLE_CLOSED'
  | 'ERR_DURABLE_IO'
  | 'ERR_DURABLE_NO_ADDON'
  | 'ERR_DURABLE_CONTROL'
  | 'ERR_DURABLE_CONFIG'
  | 'ERR_DURABLE_BACKUP'
  | 'ERR_DURABLE_TIMEOUT'
  | 'ERR_DURABLE_RESET'
  | 'ERR_DURABLE_INTERNAL';

/** The codes, by short name. */
export const codes: Readonly<{
  LOCKED: 'ERR_DURABLE_LOCKED';
  BUSY: 'ERR_DURABLE_BUSY';
  CYCLE: 'ERR_DURABLE_CYCLE';
  STATE_TOO_LARGE: 'ERR_DURABLE_STATE_TOO_LARGE';
  STATE_FORMAT: 'ERR_DURABLE_STATE_FORMAT';
  UNCLONEABLE: 'ERR_DURABLE_UNCLONEABLE';
  SHARD_LOST: 'ERR_DURABLE_SHARD_LOST';
  CORRUPT: 'ERR_DURABLE_CORRUPT';
  ID: 'ERR_DURABLE_ID';
  NAME: 'ERR_DURABLE_NAME';
  METHOD: 'ERR_DURABLE_METHOD';
  NOT_INDEXED: 'ERR_DURABLE_NOT_INDEXED';
  TYPE: 'ERR_DURABLE_TYPE';
  CLOSED: 'ERR_DURABLE_CLOSED';
  IO: 'ERR_DURABLE_IO';
  NO_ADDON: 'ERR_DURABLE_NO_ADDON';
  CONTROL: 'ERR_DURABLE_CONTROL';
  CONFIG: 'ERR_DURABLE_CONFIG';
  BACKUP: 'ERR_DURABLE_BACKUP';
  TIMEOUT: 'ERR_DURABLE_TIMEOUT';
  RESET: 'ERR_DURABLE_RESET';
  INTERNAL: 'ERR_DURABLE_INTERNAL';
}>;

/** Every error this package throws. Switch on `code`, not on the class. */
export class DurableError extends Error {
  constructor(code: DurableErrorCode, message: string, options?: { cause?: unknown });
  readonly name: 'DurableError';
  /** A durable-workers code, or an `ERR_PEEK_*` code from `durable-workers/peek`. */
  readonly code: DurableErrorCode | import('./peek').PeekErrorCode;
}

/** Why a worker's `stop()` hook runs. */
export type StopReason = 'idle' | 'evicted' | 'close';

/**
 * A worker's key/value state: resident, read synchronously, committed with the call.
 * `C` is the class's collections declaration when the class is declared
 * `extends DurableWorker<typeof declaration>` (see DurableWorker): then
 * `collection(name)` knows each collection's declared fields.
 */
export interface DurableState<C extends CollectionsDeclaration = CollectionsDeclaration> {
  /** A copy of the stored value (mutating it changes nothing until `set`). */
  get<T = unknown>(key: string): T | undefined;
  has(key: string): boolean;
  /** Every key, sorted by UTF-16 code units (JavaScript's `<`). */
  keys(): string[];
  /** Every `[key, value]`, sorted by key. */
  entries(): Array<[string, unknown]>;
  /** A sorted range: keys with `prefix`, from `start` (inclusive) to `end` (exclusive). */
  list(options?: { prefix?: string; start?: string; end?: string; limit?: number; reverse?: boolean }): Map<string, unknown>;
  /** Encoded bytes held, keys included (capped at 1 MiB). */
  readonly size: number;
  /** Stores a structured clone of `value`, committed with the call's flush. */
  set(key: string, value: unknown): void;
  /** True if the key was there. */
  delete(key: string): boolean;
  /**
   * Resolves when every write so far is durable. Inside a transaction, the
   * transaction's own writes are not among them: they commit when it ends.
   */
  sync(): Promise<void>;
  /**
   * All writes in `fn`, state and collections, commit together, or, if it
   * throws, not at all (the resident state is put back) and the error is rethrown.
   * Alarm changes are not part of it: they take effect either way.
   */
  transaction<T>(fn: () => T | Promise<T>): Promise<T>;
  /** Deletes every key, every document and every alarm, in one commit. */
  deleteAll(): Promise<void>;
  /**
   * The declared collection `name` (else ERR_DURABLE_NAME). On a typed
   * worker, `name` must be a declared collection and `where` and `orderBy`
   * name declared fields only, with values of their declared types; give the
   * document type as `collection<Order>('orders')` where wanted.
   */
  collection<T = any, K extends keyof C & string = keyof C & string>(name: K): Collection<T, FieldsOf<C[K]>>;
  /**
   * Sets alarm `name` (the unnamed one by default) to fire at `at`; one alarm
   * per name. Resolves once it is on disk and findable by the scheduler.
   */
  setAlarm(at: number | Date, options?: { name?: string }): Promise<void>;
  /** Epoch ms the alarm is set for, or null. Inside `alarm()` the firing alarm reads as cleared. */
  getAlarm(name?: string): number | null;
  /** Removes the alarm (the unnamed one by default). */
  deleteAlarm(name?: string): Promise<void>;
  /**
   * Calls `method(...args)` of this worker at `when` (a time), every interval
   * (`{ every: '15m' }`) or on a cron grid (`{ cron: '0 9 * * 1-5', tz: 'Europe/Paris' }`),
   * through its mailbox, at least once per slot, retried like an alarm when it
   * throws; a slot missed while no process ran runs once. The arguments are
   * kept as a structured clone (Date, Map, BigInt stay themselves). Resolves
   * to the schedule's id once it is on disk.
   */
  schedule(when: ScheduleWhen, method: string, ...args: unknown[]): Promise<string>;
  /** Every schedule of this worker, soonest first. */
  schedules(): ScheduleInfo[];
  /** Removes schedule `id`; false if there was none. */
  cancelSchedule(id: string): Promise<boolean>;
}

/** When a schedule runs: once at a time, once after an interval from now (by the host's clock), every interval (`<n><unit>`, unit s, m, h or d), or on a cron grid in a time zone (IANA name; default UTC). */
export type ScheduleWhen = number | Date | { after: number | string } | { every: string } | { cron: string; tz?: string };

/** A schedule, as `state.schedules()` lists it. */
export interface ScheduleInfo {
  id: string;
  method: string;
  /** A copy of the arguments it calls the method with. */
  args: unknown[];
  /** Epoch ms of its next run (a retry's time after a failure). */
  next: number;
  /** The slot its next run is for: `next`, except for a retry, which keeps the slot that failed (inside the call: the slot running). */
  slot: number;
  /** Failed attempts of that slot. */
  attempt: number;
  /** One of these, as given: */
  at?: number;
  every?: string;
  cron?: string;
  tz?: string;
}

/**
 * A clock for tests: system time plus an offset that only grows. With
 * `open({ clock })`, alarms and schedules fall due by it, and `advance()` runs
 * what fell due and resolves when it has run and committed.
 */
export class TestClock {
  /** `at`: the time the clock reads now (default: the system's). */
  constructor(options?: { at?: number | Date });
  /** Epoch ms by this clock. */
  now(): number;
  /** Moves forward by `by` (ms, or '90s', '15m', '1h', '7d') and fires every alarm and schedule then due. */
  advance(by: number | string): Promise<void>;
}

/** A declared field's type: booleans are stored as 0/1, dates as epoch milliseconds. */
export type FieldType = 'text' | 'integer' | 'real' | 'boolean' | 'date';

/**
 * `static collections`: per collection, its indexed fields and their types.
 * Plain strings are accepted (TypeScript does not type a subclass's static
 * initializer from the base class); the host checks them at `get`.
 */
export type CollectionsDeclaration = Readonly<Record<string, Readonly<Record<string, FieldType | (string & {})>>>>;

/** A value to compare a field with: a Date or epoch ms for a date field, a BigInt for a large integer. */
export type FieldValue = string | number | bigint | boolean | Date | null;

/** The declared fields of one collection, as their FieldTypes (any string field of an untyped declaration). */
export type FieldsOf<D> = { [F in keyof D & string]: D[F] extends FieldType ? D[F] : FieldType };

/** What a condition on a field of type `T` may compare it with (null: the field is missing). */
export type ValueOf<T extends FieldType> =
  (T extends 'text' ? string : T extends 'integer' ? number | bigint : T extends 'real' ? number : T extends 'boolean' ? boolean : T extends 'date' ? Date | number : never) | null;

/** A condition on one field: a value (equality; null finds the missing field) or operators. */
export type FieldCondition =
  | FieldValue
  | {
      $eq?: FieldValue;
      /** Includes documents without the field. */
      $ne?: FieldValue;
      $lt?: FieldValue;
      $lte?: FieldValue;
      $gt?: FieldValue;
      $gte?: FieldValue;
      $in?: FieldValue[];
    };

/** Every condition must hold. */
export type Where = Record<string, FieldCondition>;

/** A condition on a field of type `V`: a value (equality) or operators. */
export type TypedCondition<V> = V | { $eq?: V; $ne?: V; $lt?: V; $lte?: V; $gt?: V; $gte?: V; $in?: V[] };

/** `where` on a collection with declared fields `F`: declared fields only, each compared with its type. */
export type TypedWhere<F extends Record<string, FieldType>> = string extends keyof F ? Where : { [K in keyof F]?: TypedCondition<ValueOf<F[K]>> };

export interface FindOptions {
  where?: Where;
  /** A field, or `[field, 'asc' | 'desc']`; ties are ordered by id in the same direction. By id if absent. */
  orderBy?: string | [string, 'asc' | 'desc'];
  /** At most this many documents. */
  limit?: number;
  /** Read and decode every document and apply the query in JS, so undeclared fields may be used. */
  scan?: boolean;
}

/**
 * Documents of one declared collection. Writes commit with the call's flush
 * like `state.set`; reads see the worker's own writes, committed or not.
 */
export interface Collection<T = any, F extends Record<string, FieldType> = Record<string, FieldType>> {
  readonly name: string;
  /**
   * Stores a structured clone of `doc` under `id`. Refused with
   * ERR_DURABLE_TYPE when a declared field holds a value of another type,
   * ERR_DURABLE_STATE_TOO_LARGE over 1 MiB encoded.
   */
  put(id: string, doc: T): void;
  get(id: string): Promise<T | undefined>;
  /** True if there was a document. */
  delete(id: string): Promise<boolean>;
  /**
   * Replaces the document with what `fn` returns for the current one
   * (undefined if none); returning undefined writes nothing. Nothing else of
   * the worker runs between the read and the write.
   */
  update(id: string, fn: (doc: T | undefined) => T | undefined | Promise<T | undefined>): Promise<T | undefined>;
  /** Documents matching `where` (declared fields only). */
  count(where?: TypedWhere<F>): Promise<number>;
  /** With `scan: true` every document is read and decoded: undeclared fields may be used. */
  find(options: FindOptions & { scan: true }): Promise<T[]>;
  /** Declared fields only (else ERR_DURABLE_NOT_INDEXED). Read whole, in one turn. */
  find(options?: Omit<FindOptions, 'where' | 'orderBy'> & { where?: TypedWhere<F>; orderBy?: (keyof F & string) | [keyof F & string, 'asc' | 'desc'] }): Promise<T[]>;
}

/** What `alarm()` receives. */
export interface AlarmInfo {
  /** `''` for the unnamed alarm. */
  name: string;
  /** Epoch ms the alarm was set for: not when it ran, and on a retry still the original time. */
  scheduledTime: number;
  /** Failed attempts before this one (0 on the first run). */
  retryCount: number;
}

/** A server-side socket of the `ws` package, or any object of its shape. */
export interface ServerSocket {
  send(data: any, ...rest: any[]): void;
  close(code?: number, reason?: string): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  readonly readyState: number;
}

/**
 * A WebSocket as a worker holds it: a handle on a socket the host keeps open
 * while the worker may be evicted. The same handle object across evictions.
 */
export interface DurableWebSocket {
  /** Sent once this worker's writes so far have committed; sends leave in order. */
  send(data: string | ArrayBufferView | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  readonly readyState: number;
  /** Keeps a structured clone with the socket (≤ 16 KiB encoded); survives eviction, not a restart. */
  serializeAttachment(value: unknown): void;
  deserializeAttachment<T = unknown>(): T | null;
}

/** What a worker sees as `this.ctx`. */
export interface WorkerContext {
  readonly id: string;
  /**
   * A stub for another worker; calls carry this call's chain, wait for this
   * worker's writes so far, and get at most what is left of this call's deadline.
   */
  get<W extends DurableWorker>(Class: WorkerClass<W>, id: string, options?: StubOptions): Stub<W>;
  /**
   * Aborts when this instance is abandoned by a reset (a deadline passed, or
   * `abort()`); its reason is the error the caller got. Stop timers with it.
   */
  readonly signal: AbortSignal;
  /**
   * Resets the worker (Cloudflare's `ctx.abort()`): this instance's writes
   * not yet in a started commit are dropped, its later writes, calls and
   * sends refused with ERR_DURABLE_RESET, the running call rejects with
   * ERR_DURABLE_RESET, and the next call runs on a fresh instance. Throws.
   */
  abort(reason?: unknown): never;
  /** Hands a socket to the host for this worker (tags: at most 10 strings); returns its handle. */
  acceptWebSocket(ws: ServerSocket | DurableWebSocket, tags?: string[]): DurableWebSocket;
  /** This worker's open accepted sockets, those with `tag` if given. */
  getWebSockets(tag?: string): DurableWebSocket[];
  /**
   * Sends `message` to every open socket this worker accepted (with any of
   * `tags` if given, not those in `except`), in the order they were accepted,
   * once the writes made so far have committed: one wait for all of them, and
   * each socket's messages stay in the order they were made. Returns how many.
   */
  broadcast(message: string | ArrayBuffer | ArrayBufferView, options?: BroadcastOptions): number;
  getTags(ws: DurableWebSocket): string[];
  /** Answers `request` (exact text) with `response` on the host, without waking the worker; null clears. */
  setWebSocketAutoResponse(pair: { request: string; response: string } | null): void;
}

/** Base class of durable workers. Do not override the constructor: use `start()`. */
/**
 * The base class of workers. `C`, optional, types the collections: declare
 * them once as a constant and hand its type here,
 * `const collections = { orders: { status: 'text', total: 'real' } } as const;`
 * `class Shop extends DurableWorker<typeof collections> { static collections = collections; … }`,
 * and `this.state.collection('orders').find({ where: { status: 'open' } })`
 * is checked against the declaration.
 */
export class DurableWorker<C extends CollectionsDeclaration = CollectionsDeclaration> {
  /** Instances are made by the host: `new` in user code throws ERR_DURABLE_METHOD. */
  constructor();
  readonly id: string;
  readonly state: DurableState<C>;
  readonly ctx: WorkerContext;
  /** Overrides the class name used on disk (`[A-Za-z0-9_-]{1,64}`). */
  static workerName?: string;
  /** Indexed document collections: `{ orders: { status: 'text', placedAt: 'date' } }`. */
  static collections?: CollectionsDeclaration;
  /** Runs when the worker is materialized, through its mailbox. */
  start?(): void | Promise<void>;
  /** Runs when the worker is closed, through its mailbox. */
  stop?(reason: StopReason): void | Promise<void>;
  /**
   * Runs when an alarm is due, through the mailbox. At least once: it is removed
   * from disk only after this returns; a throw retries it at 1 s, 2 s, 4 s … 5 min.
   */
  alarm?(info: AlarmInfo): void | Promise<void>;
  /** A message on an accepted socket (text as a string, binary as a Buffer), through the mailbox. */
  webSocketMessage?(ws: DurableWebSocket, data: string | Buffer): void | Promise<void>;
  webSocketClose?(ws: DurableWebSocket, code: number, reason: string, wasClean: boolean): void | Promise<void>;
  webSocketError?(ws: DurableWebSocket, err: unknown): void | Promise<void>;
}

/** A class extending DurableWorker. */
export type WorkerClass<W extends DurableWorker = DurableWorker> = (abstract new () => W) & { workerName?: string };

type Hook = 'start' | 'stop' | 'alarm' | 'webSocketMessage' | 'webSocketClose' | 'webSocketError' | 'id' | 'state' | 'ctx';

/** A socket parameter may be given the raw server socket: it crosses as a handle. */
type StubArgs<A extends any[]> = { [I in keyof A]: A[I] extends DurableWebSocket ? A[I] | ServerSocket : A[I] };

/** A caller's handle on a worker: each method returns a Promise of its (cloned) result. */
export type Stub<W> = {
  readonly [K in Exclude<keyof W, Hook> as W[K] extends (...args: any[]) => any ? K : never]: W[K] extends (...args: infer A) => infer R ? (...args: StubArgs<A>) => Promise<Awaited<R>> : never;
};

export interface HostStats {
  /** Workers open now (those still closing after eviction included, so briefly above `maxLive`). */
  live: number;
  /** Times a worker was opened (its file read, `start()` run). */
  materialized: number;
  /** Workers closed by eviction (idle or past maxLive). */
  evicted: number;
  /** Calls accepted. */
  calls: number;
  /** Calls refused with ERR_DURABLE_BUSY. */
  refused: number;
  /** Open accepted WebSockets. */
  sockets: number;
  /** Messages answered by an auto-response, without waking a worker. */
  autoResponses: number;
  /** Times a worker's sockets stopped being read because its mailbox was full (backpressure). */
  socketPauses: number;
  /** Alarm firings run (a firing runs every alarm of one worker that is due). */
  alarmsFired: number;
  /** alarm() handlers that threw (each is retried). */
  alarmsFailed: number;
  /** Workers reset: a call or hook overran its deadline, or the worker called `ctx.abort()`. */
  resets: number;
  /** Worker transactions committed. */
  commits: number;
  /** Commits that waited for the device. */
  syncs: number;
  /**
   * Commits written and synced on the JS thread: each was small and alone,
   * on an event loop with nothing else to do, and a fast device (the others
   * run on the commit threads).
   */
  commitsInline: number;
  /**
   * Of the syncs, those of a log rewritten in place, made without writing
   * its inode: on ext4 without a journal, where every sync would write it
   * (docs/internals.md, Threads).
   */
  syncsInPlace: number;
  /** Catalog transactions committed (each may carry many workers' changes). */
  catalogCommits: number;
  /** Worker files created. */
  created: number;
  /** Value and document bytes written. */
  bytesWritten: number;
  /** Collection reads (get, find, count, delete's lookup, scans). */
  queries: number;
  /**
   * Those of them that could not run on the JS thread (a commit held the
   * worker's file, or it was not open yet) and ran on libuv's pool.
   */
  queriesDeferred: number;
  /** Documents those reads returned. */
  docsRead: number;
  /** The continuous archive's counters; null without `open({ archive })`. */
  archive: ArchiveStats | null;
}

export interface AlarmFailedEvent {
  class: string;
  id: string;
  /** The alarm's name, `''` for the unnamed alarm; absent for a schedule. */
  name?: string;
  /** For a schedule: its id and method. */
  schedule?: string;
  method?: string;
  /** Failed attempts so far, this one included. */
  attempt: number;
  /** Epoch ms of the next attempt; null when there is none (a schedule that cancelled itself). */
  retryAt: number | null;
}

/** `ctx.broadcast`'s options. */
export interface BroadcastOptions {
  /** Only sockets accepted with at least one of these tags. */
  tags?: string[];
  /** Sockets to skip (the sender's, say). */
  except?: DurableWebSocket | DurableWebSocket[];
}

/** A stub's options (`host.get`, `ctx.get`). */
export interface StubOptions {
  /** Milliseconds each call through the stub may run; `Infinity` for none. Default: open()'s `callTimeout`. */
  timeout?: number;
}

/** A worker was reset; its abandoned instance can no longer write, call or send. */
export interface ResetEvent {
  class: string;
  id: string;
  /** `'timeout'`: a call or hook ran past its deadline; `'abort'`: the worker called `ctx.abort()`. */
  reason: 'timeout' | 'abort';
  /** The method (or hook: `start`, `alarm`, `stop`) that overran, if any. */
  method?: string;
  /** What the caller got: ERR_DURABLE_TIMEOUT or ERR_DURABLE_RESET. */
  error: DurableError;
}

export interface EvictedEvent {
  class: string;
  id: string;
  reason: 'idle' | 'evicted';
}

/** An open durable directory. */
export interface Host extends EventEmitter {
  /** The directory this host owns. */
  readonly dir: string;
  /** A stub for the worker `id`. No I/O: the worker opens on its first call. */
  get<W extends DurableWorker>(Class: WorkerClass<W>, id: string, options?: StubOptions): Stub<W>;
  /** Closes the worker and removes its file and catalog entry; false if it never existed. */
  delete(Class: WorkerClass, id: string): Promise<boolean>;
  /** The ids of a class that exist, from the catalog, sorted. */
  ids(Class: WorkerClass, options?: { prefix?: string; limit?: number }): AsyncIterable<string>;
  /**
   * Fires the alarms of exactly these classes until stopped. Nothing fires
   * without it; while it runs it keeps the process alive.
   */
  startAlarms(options: { classes: WorkerClass[] }): Promise<{ stop(): Promise<void> }>;
  stats(): HostStats;
  /**
   * Copies every worker file and the catalog into `dest`, a new or empty
   * directory outside this one, while calls go on: each file as of one of its
   * commits (every commit acknowledged before the call is in it), not all of
   * them at one instant. Writes `dest/backup.json` last. Rejects with
   * `ERR_DURABLE_BACKUP` (nothing is left that restores as whole) when `dest`
   * is not empty or a file cannot be copied. See docs/backups.md.
   */
  backup(dest: string): Promise<SnapshotReport>;
  /**
   * The host's metrics in the Prometheus text exposition format (0.0.4):
   * calls, latencies, refusals, commits, syncs, bytes, alarms, evictions,
   * shard losses and gauges of what is open, labelled by class, method, code
   * and eviction reason (never the worker id). See docs/operating.md.
   */
  metrics(): string;
  /** Finishes queued calls, runs `stop('close')`, commits and releases the directory. */
  close(): Promise<void>;
  on(event: 'evicted', listener: (event: EvictedEvent) => void): this;
  on(event: 'alarmFailed', listener: (err: unknown, event: AlarmFailedEvent) => void): this;
  /** A shard ended (a throw outside a call, out of memory, missed heartbeats): its in-flight calls rejected with ERR_DURABLE_SHARD_LOST. */
  on(event: 'shardLost', listener: (err: DurableError, event: ShardLostEvent) => void): this;
  /** A worker was reset (a deadline passed, or ctx.abort()). */
  on(event: 'reset', listener: (event: ResetEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}
