// Node's own ESM resolution of `specifier` as imported by `parentURL`, for
// the walk of a worker's graph (prescan.js). The parent argument needs
// --experimental-import-meta-resolve, which process.js passes on a Node that
// walks.
export const resolve = (specifier, parentURL) => import.meta.resolve(specifier, parentURL);
