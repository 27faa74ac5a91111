// run.singleFlight: how long each run was inside the entry.
export default async function overlap() {
  const start = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 150));
  return { start, end: Date.now() };
}
