// run.memoryMb: hold about `mb` MB of JavaScript heap.
export default async function alloc(api, ctx) {
  const { mb } = ctx.trigger.params;
  const held = [];
  // 1e5 doubles in a packed array: 0.8 MB each.
  for (let i = 0; i < Math.ceil(mb / 0.8); i++) held.push(new Array(1e5).fill(i + 0.5));
  return { held: held.length };
}
