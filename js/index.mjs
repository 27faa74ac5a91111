// ESM entry: the same objects as the CommonJS one, so `instanceof` and class
// identity agree whichever way a program imports the package.
import cjs from './index.js';

export const { open, restore, DurableWorker, DurableError, codes, TestClock } = cjs;
export default cjs;
