// Types for `durable-workers/cloudflare`: the same DurableWorker classes as
// Durable Objects on workerd and Cloudflare. See docs/cloudflare.md.
import type { DurableWorker, WorkerClass, Stub, StubOptions } from './index';
import type { PlatformAdapter, AdapterDeclaration, WorkerHost, WorkerRef, Trigger, RunResult, RunLogKeeper, LogQuery, KeptLogs } from './peek';

/** The workerd release this package is tested against (the npm devDependency is pinned to it exactly). */
export const WORKERD_VERSION: '1.20261117.1';
/** The compatibility date of the generated config (nodejs_compat is a default from 2026-08-04). */
export const COMPATIBILITY_DATE: string;

/** What a Durable Object class made by toDurableObject is: a constructor the platform calls with (ctx, env). */
export type DurableObjectClass<W extends DurableWorker = DurableWorker> = (new (ctx: unknown, env: unknown) => object) & {
  readonly prototype: object & { [K in keyof Stub<W>]: Stub<W>[K] };
};

export interface ToDurableObjectOptions {
  /** The env binding of the class's namespace (default: `workerName` or the class name). */
  binding?: string;
}

/**
 * A Durable Object class around an unchanged DurableWorker class. Inside
 * workerd or on Cloudflare only (the bundle resolves this package to
 * js/cloudflare/workerd.mjs); in Node it throws ERR_DURABLE_METHOD.
 * Refuses (ERR_DURABLE_NAME) a class that does not extend DurableWorker or has
 * an unusable name, and (ERR_DURABLE_METHOD) a method named `fetch` or starting
 * with `__`, which the Durable Object answers to itself.
 */
export function toDurableObject<W extends DurableWorker>(Class: WorkerClass<W>, options?: ToDurableObjectOptions): DurableObjectClass<W>;

/** What a Worker's fetch handler reaches its workers through: the Node host's get(), plus connect() for WebSockets. */
export interface CloudflareHost {
  /**
   * A stub over Durable Object RPC (idFromName(id)); same checks and codes as
   * host.get on Node. A call whose arguments cannot be cloned (a function, a
   * symbol, at any depth) rejects with ERR_DURABLE_UNCLONEABLE before anything is sent.
   * A call past `options.timeout` rejects with ERR_DURABLE_TIMEOUT and the
   * object is reset by the platform (`ctx.abort()`).
   */
  get<W extends DurableWorker>(Class: WorkerClass<W>, id: string, options?: StubOptions): Stub<W>;
  /**
   * Hands a WebSocket upgrade request to `method(ws, ...args)` of the worker,
   * which accepts it with this.ctx.acceptWebSocket(ws, tags). Resolves to the
   * Response to return: 101 when accepted, 400 when the method did not
   * accept it, 500 when it threw, 426 when `request` is not an upgrade.
   */
  connect<W extends DurableWorker>(Class: WorkerClass<W>, id: string, method: string, request: Request, ...args: unknown[]): Promise<Response>;
  /**
   * Empties the worker's object (ctx.storage.deleteAll: state, documents,
   * alarms) and drops its live instance; the object itself is the platform's.
   * Resolves to whether it held a key, a document or an alarm.
   */
  delete(Class: WorkerClass, id: string): Promise<boolean>;
  /** No Durable Object counterpart: throw ERR_DURABLE_METHOD. */
  ids(): never;
  stats(): never;
  startAlarms(): never;
  close(): never;
}

/** The host for a Worker's `env` (its Durable Object namespace bindings). */
export function hostOf(env: object): CloudflareHost;

/**
 * A JSON-over-HTTP gateway to `classes` for tests, benchmarks and local
 * tools: POST a wire-encoded { class, id, method, args }; the response is a
 * wire-encoded { ok: true, value } or { ok: false, error }. It lets the caller
 * invoke any method: not for the open internet.
 */
export function handleCall(request: Request, env: object, classes: WorkerClass[]): Promise<Response>;

/** True for a class extending DurableWorker. */
export function isWorkerClass(value: unknown): value is WorkerClass;

/** Structured values as text (Date, Map, Set, BigInt, undefined, typed arrays, errors with their code); cycles and functions are refused. */
export const wire: {
  readonly TAG_WIRE: 2;
  encode(value: unknown, where?: () => string): string;
  decode(text: string): any;
};

export interface BuildWorkerdOptions {
  /** The module whose exported DurableWorker classes become Durable Object namespaces, and whose default (or `fetch`) export handles HTTP. */
  module: string;
  /** Where entry.mjs, worker.mjs (the bundle) and config.capnp are written. */
  outDir: string;
  /** Where the objects' SQLite files live (localDisk storage). */
  dataDir: string;
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Plain-text bindings (secrets) on env. */
  text?: Record<string, string>;
  /** Let fetch() reach private and loopback addresses (default: public only). */
  allowLocalNetwork?: boolean;
  /** Code appended to the generated entry module. */
  extraEntry?: string;
}

export interface BuiltWorkerd {
  config: string;
  bundle: string;
  classes: { exportName: string; name: string }[];
}

/** Bundles `module` with esbuild and writes the workerd config; does not run it. */
export function buildWorkerd(options: BuildWorkerdOptions): Promise<BuiltWorkerd>;

export interface StartWorkerdOptions {
  config: string;
  port: number;
  startTimeoutMs?: number;
  verbose?: boolean;
  onOutput?: (line: string) => void;
}

export interface RunningWorkerd {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** The last lines workerd printed. */
  readonly output: string[];
  /** SIGTERM, then SIGKILL after `graceMs` (default 3000). */
  stop(graceMs?: number): Promise<{ code: number | null; signal: string | null }>;
  /** SIGKILL: a crash. */
  kill(): Promise<{ code: number | null; signal: string | null }>;
}

/**
 * Runs the pinned workerd binary on `config`; resolves once this deployment
 * answers on `port` (its readiness token, written by `buildWorkerd`, at
 * `/__durable-workers-ping`), not merely once something answers there.
 */
export function startWorkerd(options: StartWorkerdOptions): Promise<RunningWorkerd>;

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number>;

/** The path of the pinned workerd binary; throws ERR_DURABLE_NAME if another version is installed. */
export function workerdBinary(): string;

export interface CloudflareAdapterOptions {
  /** Where the deployment is built (`build/`), workerd keeps its data (`data/`), and the admin token lives. */
  dir: string;
  /** The workers deployed (codeLoad 'deploy'): manifest paths, or directories of `*.json` and `<name>/manifest.json`. */
  workers: string | string[];
  /** The gateway's port on 127.0.0.1 (default: a free one). */
  port?: number;
  /** A gateway already running this deployment: the adapter then starts no workerd. */
  url?: string;
  /** Credentials read at deploy time into text bindings: PEEK_CREDENTIAL_<NAME>, or a JSON file { "<worker>": "<credential>" }. */
  credentials?: { envPrefix?: string | false; file?: string };
  /** The embedded store's session (default local, default). */
  store?: { user?: string; profile?: string };
  /** Retries of a failed scheduled run, at 1 s, 2 s, 4 s … (default 3). */
  retries?: number;
  maxWallClockMs?: number;
  precisionMs?: number;
  /** Let workers reach private and loopback addresses (globalOutbound). Default false. */
  allowLocalNetwork?: boolean;
  log?: (record: { level: 'info' | 'warn' | 'error'; worker: string; args: unknown[] }) => void;
}

export interface CloudflareAdapter extends PlatformAdapter {
  readonly declares: AdapterDeclaration & { isolation: 'isolate-per-worker'; install: { codeLoad: 'deploy' } };
  readonly dir: string;
  /** The gateway's URL, once deployed. */
  readonly url: string | undefined;
  /** The deployed workers by name, once deployed. */
  readonly workers: Record<string, { service: string; binding: string; path: string; manifestPath: string; builtins: string[] }> | null;
  attachHost(host: WorkerHost): void;
  /** Bundles every worker and writes the config; restarts a running local workerd on it. Resolves to the config path. */
  deploy(): Promise<string>;
  /** Sets a worker's credential binding and redeploys; resolves to an undo (which redeploys too). */
  putSecret(name: string, value: string): Promise<() => Promise<void>>;
  /** One run of a worker at a time, through its PeekWorker object. */
  dispatch(ref: WorkerRef, trigger: Trigger): Promise<RunResult>;
  /** Runs' api.log records are kept in the worker's PeekLog object. */
  runLog(worker: string): RunLogKeeper | null;
  readLogs(worker: string, query?: LogQuery): Promise<KeptLogs>;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** The Peek PlatformAdapter on workerd (and Cloudflare): a service (isolate) per worker, schedules as Durable Object alarms, a hibernating channel. */
export function cloudflareAdapter(options: CloudflareAdapterOptions): CloudflareAdapter;
