// Declarations: when a run starts against what it was for, its deadline, and
// which process it is in.
export default async function stamp(api, ctx) {
  return { startedAt: Date.now(), trigger: ctx.trigger, deadline: ctx.deadline, pid: process.pid };
}
