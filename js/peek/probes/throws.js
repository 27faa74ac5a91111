// Assertion 6: a throw ends the run; a timer left behind never acts: it
// would log, and fetch the harness's server (counted there).
export default async function throws(api, ctx) {
  setTimeout(() => {
    api.log('after-throw');
    fetch(ctx.trigger.params.url).catch(() => {});
  }, 50);
  throw new Error('probe-throws: thrown on purpose');
}
