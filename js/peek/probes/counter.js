// Assertion 7: module-level state does not survive a run; the store does.
let counter = 0;

export default async function count(api, ctx) {
  counter++;
  const tag = `conformance-${ctx.trigger.params.nonce}`;
  const before = await api.datastore.queryItems({ type: 'probe-counter', tag });
  if (!before.success) throw new Error(before.error);
  await api.datastore.addItem('probe-counter', { counter }, { tags: [tag] });
  return { counter, persisted: before.data.length + 1 };
}
