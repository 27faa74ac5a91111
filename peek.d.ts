// Types for `durable-workers/peek`: the portable worker host.

/** Why a run happens. */
export type Trigger =
  | { readonly kind: 'schedule'; /** epoch ms the run was due, not when it began */ readonly scheduledFor: number }
  | { readonly kind: 'wake'; readonly topic: string; readonly message: unknown }
  | { readonly kind: 'command'; readonly name: string; readonly params: unknown; readonly resultTopic?: string };

/** The second argument of a worker's entry. */
export interface RunContext {
  readonly trigger: Trigger;
  /** Epoch ms after which the run is stopped. */
  readonly deadline: number;
  /** Aborted at the deadline (reason: an ERR_PEEK_DEADLINE error) and when the run ends. */
  readonly signal: AbortSignal;
  /** The run ends only when `p` has settled too (or at the deadline). */
  waitUntil(p: Promise<unknown>): void;
}

/** What every datastore method resolves to. */
export type Envelope<T> = { success: true; data: T } | { success: false; error: string };

export interface Item {
  id: string;
  type: string;
  content: unknown;
  metadata: Record<string, unknown>;
  tags: string[];
  createdAt: number;
  updatedAt: number;
}

export interface Session {
  user: string;
  profile: string;
  store: 'embedded' | 'remote' | (string & {});
  [more: string]: unknown;
}

export type StoreMethod = 'describe' | 'addItem' | 'getItem' | 'updateItem' | 'deleteItem' | 'queryItems' | 'tagItem' | 'untagItem';

/** A store: each method throws on failure. The host wraps the granted ones in envelopes. */
export interface Store {
  describe(): Promise<Session>;
  addItem(type: string, content: unknown, options?: { metadata?: Record<string, unknown>; tags?: string[] }): Promise<Item>;
  getItem(id: string): Promise<Item | null>;
  updateItem(id: string, patch: Partial<Pick<Item, 'type' | 'content' | 'metadata' | 'tags'>>): Promise<Item>;
  deleteItem(id: string): Promise<boolean>;
  queryItems(query?: { type?: string; tag?: string; limit?: number }): Promise<Item[]>;
  tagItem(id: string, tags: string[]): Promise<Item>;
  untagItem(id: string, tags: string[]): Promise<Item>;
}

/** api.datastore: the granted methods only, each answering in an envelope. */
export type WorkerDatastore = {
  readonly [M in StoreMethod]?: (...args: Parameters<Store[M]>) => Promise<Envelope<Awaited<ReturnType<Store[M]>>>>;
};

export interface WorkerLog {
  (...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/** The api a worker is given. A namespace is present exactly when the manifest grants it. */
export interface WorkerApi {
  readonly datastore?: WorkerDatastore;
  readonly network?: { readonly fetch: typeof fetch };
  /**
   * publish(topic, message). A cmd: topic needs a grant: `cmd:execute:<command>`
   * for a command in capabilities.pubsub.commands (message `{ params }`; resolves
   * with the reply topic the host chose, whose result wakes this worker), or the
   * run's own `ctx.trigger.resultTopic`. Anything else under cmd:, or another
   * command's reply topic, is refused with ERR_PEEK_PUBSUB_DENIED.
   */
  readonly pubsub?: { readonly publish: (topic: string, message: unknown) => Promise<void | { readonly resultTopic: string }> };
  readonly publish?: (topic: string, message: unknown) => Promise<void | { readonly resultTopic: string }>;
  /**
   * Registers, while the module loads, what answers a wake on `topic` (one of
   * capabilities.pubsub.subscribe, or narrower) instead of the entry. Granted
   * by a non-empty capabilities.pubsub.subscribe. Returns an unsubscribe.
   */
  readonly subscribe?: (topic: string, handler: (message: unknown, ctx: RunContext) => unknown) => () => void;
  /** Registers, while the module loads, what answers a command of the manifest's `commands` instead of the entry (its value is the reply). Granted by writing `commands`. */
  readonly commands?: { readonly on: (name: string, handler: (params: unknown, ctx: RunContext) => unknown) => void };
  /** The worker's settings for this run: the manifest's defaults and the operator's values, frozen. Granted by the manifest's `settings`. */
  readonly settings?: Readonly<Record<string, unknown>>;
  readonly log?: WorkerLog;
  /** Registers, while the module loads, a hook run before the entry; a throw fails the run. Granted by capabilities.lifecycle. */
  readonly initialize?: (hook: (ctx: RunContext) => unknown) => void;
  /** Registers a hook run when the run ends (after its waitUntil work), unless it is killed; a throw fails the run. Granted by capabilities.lifecycle. */
  readonly onShutdown?: (hook: (ctx: RunContext) => unknown) => void;
}

/** The only thing a worker author writes. */
export type WorkerEntry = (api: WorkerApi, ctx?: RunContext) => Promise<unknown>;

export type RunResult = { ok: true; value: unknown; ms: number } | { ok: false; error: Error & { code?: string }; ms: number };

/** A loaded, checked manifest. */
export interface Manifest {
  readonly name: string;
  readonly description?: string;
  readonly manifestPath: string;
  readonly dir: string;
  readonly worker: { readonly url: string; readonly entry?: string; readonly path: string; readonly href: string };
  readonly schedule: string | null;
  readonly intervalMs: number | null;
  readonly capabilities: {
    readonly network?: { readonly domains: readonly string[] };
    readonly datastore?: { readonly methods: readonly StoreMethod[] };
    /** subscribe: wake topics (never cmd:, nor a prefix covering it); commands: the commands this worker may send, absent when none. */
    readonly pubsub?: { readonly subscribe: readonly string[]; readonly commands?: readonly string[] };
    readonly log?: {};
    readonly lifecycle?: {};
  };
  readonly limits: { readonly wallClockMs?: number };
  readonly commands: readonly string[];
  /** Whether the manifest wrote `commands` (which grants api.commands). */
  readonly commandsDeclared: boolean;
  /** The declared settings and their defaults, or null. */
  readonly settings: Readonly<Record<string, unknown>> | null;
}

/** A manifest path, or anything with one (a loaded Manifest). */
export type WorkerRef = string | { readonly manifestPath: string };

export interface AdapterDeclaration {
  readonly name: string;
  readonly scheduler: {
    readonly atLeastOnce: boolean;
    readonly retriesOnFailure: number | 'none' | 'unspecified';
    readonly catchesUpMissedRuns: boolean;
    readonly minIntervalMs: number;
    readonly precisionMs: number;
  };
  readonly run: {
    readonly maxWallClockMs: number;
    readonly maxCpuMs: number | 'unbounded';
    readonly memoryMb: number | 'unbounded';
    readonly singleFlight: boolean;
    readonly maxOutboundConcurrency: number | 'unbounded';
    readonly clockAdvancesWithoutIo: boolean;
  };
  readonly network: { readonly enforcement: 'guard-rail' | 'egress-control' };
  readonly install: { readonly codeLoad: 'runtime' | 'deploy' };
  readonly isolation: 'isolate-per-worker' | 'process-per-run' | 'shared-process';
}

export interface ChannelMessage {
  topic: string;
  message: unknown;
}

export interface Channel {
  readonly kind: 'in-process' | 'websocket';
  publish(topic: string, message: unknown): Promise<void>;
  close(): Promise<void>;
}

/** One run's realm: where the module is loaded and the entry runs. */
export interface RunRealm {
  installGlobals(globals: { app: WorkerApi; window?: { app: WorkerApi }; fetch?: typeof fetch }): void;
  makeFetch(domains: readonly string[], signal: AbortSignal): typeof fetch;
  loadWorkerModule(manifest: Manifest): Promise<Readonly<Record<string, (api: WorkerApi, ctx: RunContext) => Promise<unknown>>>>;
  close(options?: { graceMs?: number }): Promise<void>;
}

/** What the shared host needs of a platform. */
export interface PlatformAdapter {
  readonly declares: AdapterDeclaration;
  readCredential(manifest: Manifest): Promise<string | undefined>;
  credentialHint?(manifest: Manifest): string;
  openStore(manifest: Manifest, credential: string): Promise<Store>;
  /** `hidden`: host files the run must not see (the settings file), kept out of a sandbox. */
  openRealm(manifest: Manifest, run: { deadline: number; signal: AbortSignal; hidden?: readonly string[] }): Promise<RunRealm>;
  ensureSchedule(ref: WorkerRef, spec: string): Promise<{ changed: boolean; next: number }>;
  cancelSchedule(ref: WorkerRef): Promise<boolean>;
  openChannel(subscription: { topics: readonly string[] }, onMessage: (m: ChannelMessage) => void): Promise<Channel>;
  log(record: LogRecord): void;
  attachHost?(host: WorkerHost): void;
  dispatch?(ref: WorkerRef, trigger: Trigger): Promise<RunResult>;
  /** Where a run's api.log records are kept (null: not kept). The host numbers the run with `begin` and sends its records in batches. */
  runLog?(worker: string): RunLogKeeper | null;
  /** A worker's kept records, oldest first. */
  readLogs?(worker: string, query?: LogQuery): Promise<KeptLogs>;
  start?(): Promise<void>;
  stop?(): Promise<void>;
  close?(): Promise<void>;
}

export interface RunLogKeeper {
  /** Numbers a new run; `what` (what started it) is its first record. */
  begin(what: string): Promise<number>;
  append(run: number, records: { level: KeptRecord['level']; at: number; text: string }[]): Promise<void>;
}

export interface LogQuery {
  /** Only this run's records. */
  run?: number;
  /** Records after this sequence number (0: from the oldest kept). */
  after?: number;
  /** At most this many (default 1000, at most 5000). */
  limit?: number;
}

export interface KeptRecord {
  /** Per worker, increasing: where --follow resumes. */
  seq: number;
  run: number;
  /** Epoch ms. */
  at: number;
  /** 'run': where a run started and how it ended. */
  level: 'info' | 'warn' | 'error' | 'run';
  /** The record's arguments as one line, at most 2,048 characters. */
  text: string;
}

export interface KeptLogs {
  /** How many runs the worker has had (0: none kept here). */
  runs: number;
  records: KeptRecord[];
}

export interface LogRecord {
  level: 'info' | 'warn' | 'error';
  worker: string;
  args: unknown[];
}

export interface RunEvent {
  worker: string | null;
  trigger: Trigger;
  result: RunResult;
  /** The run's number in its worker's kept log, or null (not kept: no directory, or keeping failed). */
  run: number | null;
}

export interface WorkerHost {
  readonly declares: AdapterDeclaration;
  /** Resolves with the run's result; rejects only for a malformed trigger (TypeError). */
  run(ref: WorkerRef, trigger: Trigger): Promise<RunResult>;
  on(event: 'run', listener: (e: RunEvent) => void): this;
  on(event: 'log', listener: (r: LogRecord) => void): this;
  off(event: 'run' | 'log', listener: (...args: any[]) => void): this;
  close(): Promise<void>;
}

export interface NodeAdapterOptions {
  /** Where schedules and the embedded store live; one owning process at a time. */
  dir?: string;
  /** What declares.name says: 'node' (default; a bare Node, e.g. under systemd) or 'container' (the same adapter as a container's supervisor). */
  target?: 'node' | 'container';
  /** Heap ceiling of a run's process (default 128). */
  memoryMb?: number;
  /** The longest a run may take (default 15 minutes). */
  maxWallClockMs?: number;
  /** The declared bound on start − scheduledFor (default 2000). */
  precisionMs?: number;
  /** Retries of a failed scheduled run, at 1 s, 2 s, 4 s … (default 3). */
  retries?: number;
  /** Keep booted run processes ready (default true); false forks when a run asks. */
  warm?: boolean;
  /** How many booted run processes to keep ready when warm (default 1, at most 16). */
  spares?: number;
  /**
   * A sandbox per run (Linux, bubblewrap): its own PID, mount, IPC, UTS and
   * network namespaces, no network (fetch is made by the supervisor), none
   * of the supervisor's files, and as root a uid of its own. 'auto' (the
   * default) uses it where it works; 'required' throws ERR_PEEK_SANDBOX
   * where it does not; 'off' never.
   */
  sandbox?: 'auto' | 'required' | 'off';
  /** The uids (and gids) sandboxed runs get when the supervisor is root: [first, count] (default [0x60000000, 65536]). */
  sandboxUids?: [first: number, count: number];
  /** Without the sandbox: run each worker's process as this user id (the supervisor must be allowed to, e.g. root). */
  uid?: number;
  /** ... and this group id. */
  gid?: number;
  /** values: credentials already read, by worker name (checked before the file). */
  credentials?: { file?: string; envPrefix?: string | false; values?: Record<string, string> };
  store?: { user?: string; profile?: string; remoteUrl?: string };
  /** A pubsub hub (ws:// or wss://); without it, an in-process bus. */
  channelUrl?: string;
  /** Headers sent with each connection's upgrade request, e.g. `{ authorization: 'Bearer …' }` (the workerd gateway's hub takes its admin token only so). */
  channelHeaders?: Record<string, string>;
  channelBackoff?: { minDelayMs?: number; maxDelayMs?: number };
  log?: (record: LogRecord) => void;
}

export interface NodeAdapter extends PlatformAdapter {
  readonly dir: string | undefined;
  /** Whether runs are sandboxed: `mode` 'root' (a uid per run) or 'userns' (the supervisor's uid); else why not. */
  readonly sandbox: { on: true; mode: 'root' | 'userns' } | { on: false; reason: string };
  attachHost(host: WorkerHost): void;
  dispatch(ref: WorkerRef, trigger: Trigger): Promise<RunResult>;
  schedules(): Promise<{ name: string; spec: string; manifestPath: string; next: number | null }[]>;
  runLog(worker: string): RunLogKeeper | null;
  readLogs(worker: string, query?: LogQuery): Promise<KeptLogs>;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export interface ConformanceRow {
  ok: boolean;
  observed: string;
  ms: number;
}

export interface ConformanceReport {
  adapter: string;
  ok: boolean;
  ms: number;
  assertions: (ConformanceRow & { id: number; name: string })[];
  declarations: (ConformanceRow & { field: string; declared: string })[];
}

export interface ConformanceOptions {
  adapter: PlatformAdapter;
  /** Hands `name` the credential `value`; returns an undo. Default: PEEK_CREDENTIAL_<NAME>. */
  mintCredential?: (name: string, value: string) => void | (() => void) | Promise<void | (() => void)>;
  /** Run only checks whose name contains one of these. */
  only?: string[];
  /** Where to print the table. */
  out?: { write(text: string): unknown };
  onCheck?: (row: ConformanceRow) => void;
}

export interface Supervisor {
  readonly manifests: Map<string, Manifest>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createWorkerHost(options: {
  adapter: PlatformAdapter;
  /**
   * The operator's values for the workers' settings, read at every run: a JSON
   * file `{ "<worker>": { "<setting>": value } }` (none yet: the defaults), or
   * a function of the worker's name.
   */
  settings?: string | ((worker: string) => Record<string, unknown> | undefined | Promise<Record<string, unknown> | undefined>);
}): WorkerHost;
export function nodeAdapter(options?: NodeAdapterOptions): NodeAdapter;
export function runConformance(options: ConformanceOptions): Promise<ConformanceReport>;
export function loadManifest(manifestPath: string): Manifest;
export function parseSchedule(spec: string, field?: string): number;
export function credentialEnvName(name: string, prefix?: string): string;
export function createSupervisor(options: { dir: string; adapter: NodeAdapter; host: WorkerHost; log?: (record: LogRecord) => void }): Supervisor;

/** What the worker linter found: one construct, where it is, why it will not run the same on every Peek host, and what to use instead. */
export interface LintFinding {
  readonly rule: 'node-import' | 'module-timer' | 'window' | 'eval' | 'ungranted-api' | 'parse';
  /** 'error': it fails on the Node host too (a refused module, a file that does not parse); 'warning': it is not portable. */
  readonly severity: 'error' | 'warning';
  /** Relative to the manifest's directory, with '/' separators. */
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
  readonly message: string;
  readonly hint: string;
}
/**
 * Lints a worker's own files (its module graph from worker.url; packages
 * under node_modules are not read). Throws ERR_PEEK_MANIFEST for a manifest
 * that does not load. `durable-workers peek lint` prints the same.
 */
export function lintWorker(manifestPath: string): LintFinding[];

export type PeekErrorCode =
  | 'ERR_PEEK_MANIFEST'
  | 'ERR_PEEK_SCHEDULE'
  | 'ERR_PEEK_CREDENTIAL'
  | 'ERR_PEEK_DEADLINE'
  | 'ERR_PEEK_NETWORK_DENIED'
  | 'ERR_PEEK_IMPORT_REFUSED'
  | 'ERR_PEEK_ENTRY'
  | 'ERR_PEEK_CRASHED'
  | 'ERR_PEEK_PROTOCOL'
  | 'ERR_PEEK_STORE'
  | 'ERR_PEEK_CHANNEL'
  | 'ERR_PEEK_CLOSED'
  | 'ERR_PEEK_PUBSUB_DENIED'
  | 'ERR_PEEK_SANDBOX'
  | 'ERR_PEEK_FETCH_LIMIT'
  | 'ERR_PEEK_LIFECYCLE'
  | 'ERR_PEEK_SETTINGS';

export const codes: {
  readonly MANIFEST: 'ERR_PEEK_MANIFEST';
  readonly SCHEDULE: 'ERR_PEEK_SCHEDULE';
  readonly CREDENTIAL: 'ERR_PEEK_CREDENTIAL';
  readonly DEADLINE: 'ERR_PEEK_DEADLINE';
  readonly NETWORK_DENIED: 'ERR_PEEK_NETWORK_DENIED';
  readonly IMPORT_REFUSED: 'ERR_PEEK_IMPORT_REFUSED';
  readonly ENTRY: 'ERR_PEEK_ENTRY';
  readonly CRASHED: 'ERR_PEEK_CRASHED';
  readonly PROTOCOL: 'ERR_PEEK_PROTOCOL';
  readonly STORE: 'ERR_PEEK_STORE';
  readonly CHANNEL: 'ERR_PEEK_CHANNEL';
  readonly CLOSED: 'ERR_PEEK_CLOSED';
  readonly PUBSUB_DENIED: 'ERR_PEEK_PUBSUB_DENIED';
  readonly SANDBOX: 'ERR_PEEK_SANDBOX';
  readonly FETCH_LIMIT: 'ERR_PEEK_FETCH_LIMIT';
  readonly LIFECYCLE: 'ERR_PEEK_LIFECYCLE';
  readonly SETTINGS: 'ERR_PEEK_SETTINGS';
};

/**
 * Every Peek error is a DurableError (the package's one error class) carrying
 * one of these codes. Typed apart because index.d.ts types DurableError's
 * code as the durable-workers codes only.
 */
export type PeekError = Error & { readonly name: 'DurableError'; readonly code: PeekErrorCode };
