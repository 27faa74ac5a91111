// Types for `durable-workers/otel`: the package's diagnostics channels as
// OpenTelemetry spans. Needs @opentelemetry/api (an optional peer dependency).
import type { Tracer, TracerProvider } from '@opentelemetry/api';

/** What `instrument()` makes its spans with. */
export interface InstrumentOptions {
  /** The tracer every span is started with; wins over `tracerProvider`. */
  tracer?: Tracer;
  /** Where the tracer (`'durable-workers'`, at the package's version) comes from; default: the global tracer provider. */
  tracerProvider?: TracerProvider;
}

/** What `instrument()` returns. */
export interface Instrumentation {
  /** Unsubscribes from the channels and ends the spans still in flight. Calling it again does nothing. */
  disable(): void;
}

/**
 * Turns the package's diagnostics channels into spans: `Class.method` for a
 * call, `commit Class`, `alarm Class.name`, `socket Class.event`,
 * `evict Class`, `shard start` and `shard lost`. One instrumentation at a
 * time: a second call throws until the first is disabled. Throws if
 * @opentelemetry/api cannot be loaded.
 */
export function instrument(options?: InstrumentOptions): Instrumentation;
