// run.maxOutboundConcurrency: n requests at once; the harness's server counts
// how many were in flight together.
export default async function fanout(api, ctx) {
  const { url, n } = ctx.trigger.params;
  const statuses = await Promise.all(Array.from({ length: n }, (_, i) => fetch(`${url}?i=${i}`).then((r) => r.text().then(() => r.status))));
  return { statuses };
}
