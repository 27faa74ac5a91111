// The hello worker: one argument (api), no ctx, no imports. It runs the same
// on any Peek host.
export async function hello(api) {
  const session = await api.datastore.describe();
  if (!session.success) throw new Error(`describe failed: ${session.error}`);
  api.log('hello,', session.data.user, 'on profile', session.data.profile);
  return session.data;
}
