// Assertion 5: a fetch to a host the manifest does not allow throws, and the
// run fails with it.
export default async function deny() {
  await fetch('https://denied.invalid/probe');
  return 'the fetch was not refused';
}
