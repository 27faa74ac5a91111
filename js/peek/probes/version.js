// install.codeLoad: the harness copies this file and then rewrites VERSION.
export const VERSION = 1;
export default async function version() {
  return VERSION;
}
