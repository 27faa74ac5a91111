// Assertion 8: a run that sleeps past its deadline is stopped; its signal aborts first.
export default async function sleeper(api, ctx) {
  ctx.signal.addEventListener('abort', () => api.log('signal aborted'));
  await new Promise((resolve) => setTimeout(resolve, 60_000));
  return 'slept through the deadline';
}
