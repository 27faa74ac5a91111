'use strict';
// Loads the addon: the local build (`npm run build` writes native/), else the
// platform package npm installed beside this one.
const { join } = require('node:path');

function triple() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  return `${platform}-${arch}`;
}

function load() {
  const t = triple();
  const tried = [];
  for (const candidate of [join(__dirname, '..', 'native', `durable-workers.${t}.node`), `durable-workers-${t}`]) {
    try {
      return require(candidate);
    } catch (err) {
      if (err.code !== 'MODULE_NOT_FOUND' && !/cannot open shared object/.test(err.message)) throw err;
      tried.push(candidate);
    }
  }
  throw new Error(
    `durable-workers has no native build for ${t} (tried ${tried.join(', ')}); run \`npm run build\` in the package, or install durable-workers-${t}`,
  );
}

module.exports = load();
