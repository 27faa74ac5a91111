// Assertion 6: a throw ends the run; a timer left behind never acts.
export default async function throws(api) {
  setTimeout(() => api.log('after-throw'), 50);
  throw new Error('probe-throws: thrown on purpose');
}
