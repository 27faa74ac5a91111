// run.clockAdvancesWithoutIo and run.maxCpuMs: a synchronous loop, no I/O.
export default async function busy(api, ctx) {
  const { iterations = 2e7, spinMs = 0 } = ctx.trigger.params ?? {};
  const t0 = Date.now();
  let x = 0;
  for (let i = 0; i < iterations; i++) x += i % 7;
  const advanced = Date.now() - t0;
  const spinStart = Date.now();
  while (Date.now() - spinStart < spinMs) x++;
  return { advancedMs: advanced, spunMs: Date.now() - spinStart, x };
}
