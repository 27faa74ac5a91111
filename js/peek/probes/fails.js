// scheduler.retriesOnFailure: fails every time.
export default async function fails(api, ctx) {
  throw new Error(`probe-fails: failing the run for ${ctx.trigger.scheduledFor ?? ctx.trigger.kind}`);
}
