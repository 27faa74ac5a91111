// Compiled with usage.ts by api/types.test.js (`tsc --strict --noEmit`):
// otel.d.ts, through the package's export map (durable-workers/otel).
import { trace, type Tracer } from '@opentelemetry/api';
import { instrument, type InstrumentOptions, type Instrumentation } from 'durable-workers/otel';

const byDefault: Instrumentation = instrument();
byDefault.disable();

const tracer: Tracer = trace.getTracer('app');
const withTracer = instrument({ tracer });
withTracer.disable();
withTracer.disable();

const options: InstrumentOptions = { tracerProvider: trace.getTracerProvider() };
const withProvider: { disable(): void } = instrument(options);
void withProvider;

// @ts-expect-error a tracer is a Tracer, not its name
instrument({ tracer: 'app' });
// @ts-expect-error only tracer and tracerProvider are options
instrument({ serviceName: 'app' });
// @ts-expect-error disable() returns nothing to wait for
void instrument().disable().then;
