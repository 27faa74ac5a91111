// Assertion 1: loads, runs, and returns the session the store describes.
export async function hello(api) {
  const session = await api.datastore.describe();
  if (!session.success) throw new Error(`describe failed: ${session.error}`);
  api.log('hello from', session.data.user);
  return session.data;
}
