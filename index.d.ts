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
   * `'full'` (default): every commit is synced to the device and survives power loss.
   * `'relaxed'`: commits survive a process crash, not a power loss.
   */
  durability?: 'full' | 'relaxed';
}

/** Opens (creating if needed) a durable directory and takes ownership of it. */
export function open(options: OpenOptions): Promise<Host>;

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
  | 'ERR_DURABLE_CLOSED'
  | 'ERR_DURABLE_IO';

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
  CLOSED: 'ERR_DURABLE_CLOSED';
  IO: 'ERR_DURABLE_IO';
}>;

/** Every error this package throws. Switch on `code`, not on the class. */
export class DurableError extends Error {
  constructor(code: DurableErrorCode, message: string, options?: { cause?: unknown });
  readonly name: 'DurableError';
  readonly code: DurableErrorCode;
}

/** Why a worker's `stop()` hook runs. */
export type StopReason = 'idle' | 'evicted' | 'close';

/** A worker's key/value state: resident, read synchronously, committed with the call. */
export interface DurableState {
  /** A copy of the stored value (mutating it changes nothing until `set`). */
  get<T = unknown>(key: string): T | undefined;
  has(key: string): boolean;
  /** Every key, sorted. */
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
  /** All writes in `fn` commit together, or, if it throws, not at all. */
  transaction<T>(fn: () => T | Promise<T>): Promise<T>;
  /** Deletes every key and every alarm, in one commit. */
  deleteAll(): Promise<void>;
  /**
   * Sets alarm `name` (the unnamed one by default) to fire at `at`; one alarm
   * per name. Resolves once it is on disk and findable by the scheduler.
   */
  setAlarm(at: number | Date, options?: { name?: string }): Promise<void>;
  /** Epoch ms the alarm is set for, or null. Inside `alarm()` the firing alarm reads as cleared. */
  getAlarm(name?: string): number | null;
  /** Removes the alarm (the unnamed one by default). */
  deleteAlarm(name?: string): Promise<void>;
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
  /** A stub for another worker; calls carry this call's chain and wait for this worker's writes so far. */
  get<W extends DurableWorker>(Class: WorkerClass<W>, id: string): Stub<W>;
  /** Hands a socket to the host for this worker (tags: at most 10 strings); returns its handle. */
  acceptWebSocket(ws: ServerSocket | DurableWebSocket, tags?: string[]): DurableWebSocket;
  /** This worker's open accepted sockets, those with `tag` if given. */
  getWebSockets(tag?: string): DurableWebSocket[];
  getTags(ws: DurableWebSocket): string[];
  /** Answers `request` (exact text) with `response` on the host, without waking the worker; null clears. */
  setWebSocketAutoResponse(pair: { request: string; response: string } | null): void;
}

/** Base class of durable workers. Do not override the constructor: use `start()`. */
export class DurableWorker {
  /** Instances are made by the host: `new` in user code throws ERR_DURABLE_METHOD. */
  constructor();
  readonly id: string;
  readonly state: DurableState;
  readonly ctx: WorkerContext;
  /** Overrides the class name used on disk (`[A-Za-z0-9_-]{1,64}`). */
  static workerName?: string;
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
  readonly [K in Exclude<keyof W, Hook> as W[K] extends (...args: any[]) => any ? K : never]: W[K] extends (...args: infer A) => infer R
    ? (...args: StubArgs<A>) => Promise<Awaited<R>>
    : never;
};

export interface HostStats {
  /** Workers open now. */
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
  /** Alarm firings run (a firing runs every alarm of one worker that is due). */
  alarmsFired: number;
  /** alarm() handlers that threw (each is retried). */
  alarmsFailed: number;
  /** Worker transactions committed. */
  commits: number;
  /** Commits that waited for the device. */
  syncs: number;
  /** Catalog transactions committed (each may carry many workers' changes). */
  catalogCommits: number;
  /** Worker files created. */
  created: number;
  /** Value bytes written. */
  bytesWritten: number;
}

export interface AlarmFailedEvent {
  class: string;
  id: string;
  /** `''` for the unnamed alarm. */
  name: string;
  /** Failed attempts so far, this one included. */
  attempt: number;
  /** Epoch ms of the next attempt. */
  retryAt: number;
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
  get<W extends DurableWorker>(Class: WorkerClass<W>, id: string): Stub<W>;
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
  /** Finishes queued calls, runs `stop('close')`, commits and releases the directory. */
  close(): Promise<void>;
  on(event: 'evicted', listener: (event: EvictedEvent) => void): this;
  on(event: 'alarmFailed', listener: (err: unknown, event: AlarmFailedEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}
