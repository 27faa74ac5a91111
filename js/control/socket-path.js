'use strict';
// Where a durable directory's control socket lives: one rule, used by the
// server that listens and the clients that look.
//
// The guarantee: a client given only the directory finds the socket of the
// process serving it, and a user other than the one serving it cannot connect.
//
// The mechanism: `<dir>/.control.sock` when that path fits a socket address
// (sun_path holds 107 bytes on Linux, 103 on macOS and the BSDs); otherwise,
// or when the directory's file system cannot hold a socket (a FUSE or network
// mount refusing mknod), a socket named by a hash of the directory in a
// private directory of this user, `$XDG_RUNTIME_DIR/durable-workers/` or
// `<tmp>/durable-workers-<uid>/` (0700, checked to be this user's and not a
// link), whose path is written in `<dir>/.control` for clients to read. The
// socket is 0600; the durable directory is 0700 when open() made it. Node
// cannot read a peer's credentials, so these modes are the whole access check.
//
// On Windows the socket is the named pipe `\\.\pipe\durable-workers-<hash>`;
// file modes do not apply to it (it has the default security Windows gives a
// pipe), and nothing is written in the directory.
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const SOCKET_NAME = '.control.sock';
const POINTER_NAME = '.control';

/** The longest socket path the platform's sockaddr_un holds, in bytes (its NUL excluded). */
function maxSocketPath(platform = process.platform) {
  return platform === 'linux' || platform === 'android' ? 107 : 103;
}

/** Whether `p` fits in a socket address on this platform. */
function fits(p) {
  return Buffer.byteLength(p) <= maxSocketPath();
}

/** The directory as the socket rules see it: absolute, links resolved where it exists. */
function canonical(dir) {
  const abs = path.resolve(dir);
  try {
    return fs.realpathSync.native(abs);
  } catch {
    return abs;
  }
}

/** A short hash naming the directory's socket outside it (or its pipe). */
function hashOf(dir) {
  const c = canonical(dir);
  return crypto
    .createHash('sha256')
    .update(process.platform === 'win32' ? c.toLowerCase() : c)
    .digest('hex')
    .slice(0, 24);
}

/** `<dir>/.control.sock`. */
function inDirPath(dir) {
  return path.join(path.resolve(dir), SOCKET_NAME);
}

/** `<dir>/.control`, the file holding the path of a socket kept elsewhere. */
function pointerPath(dir) {
  return path.join(path.resolve(dir), POINTER_NAME);
}

/** The named pipe serving `dir` on Windows. */
function pipeName(dir) {
  return `\\\\.\\pipe\\durable-workers-${hashOf(dir)}`;
}

/**
 * This user's private directory for sockets that do not fit in theirs,
 * created 0700 if missing. Refused (an Error with a code) when it is a link,
 * another user's, or open to others and not ours to close.
 * @returns {string}
 */
function privateRuntimeDir() {
  const xdg = process.env.XDG_RUNTIME_DIR;
  const base = typeof xdg === 'string' && path.isAbsolute(xdg) && isDir(xdg) ? xdg : os.tmpdir();
  const dir = base === xdg ? path.join(base, 'durable-workers') : path.join(base, `durable-workers-${process.getuid?.() ?? 'user'}`);
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
  }
  const st = fs.lstatSync(dir);
  const fail = (why) => Object.assign(new Error(`${dir} ${why}; remove it so a private one can be made`), { code: 'EPERM' });
  if (!st.isDirectory()) throw fail('is not a directory (or is a link)');
  if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw fail(`belongs to uid ${st.uid}, not this user (uid ${process.getuid()})`);
  if ((st.mode & 0o077) !== 0) fs.chmodSync(dir, 0o700);
  return dir;
}

function isDir(p) {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The socket for `dir` in the private runtime directory (which it creates). */
function fallbackPath(dir) {
  return path.join(privateRuntimeDir(), `${hashOf(dir)}.sock`);
}

/**
 * Where a client should connect for `dir`: the pipe on Windows; the path
 * written in `<dir>/.control` when there is one; else `<dir>/.control.sock`.
 * @returns {{ path: string, where: 'pipe' | 'pointer' | 'dir' }}
 */
function locate(dir) {
  if (process.platform === 'win32') return { path: pipeName(dir), where: 'pipe' };
  let pointed;
  try {
    pointed = fs.readFileSync(pointerPath(dir), 'utf8').trim();
  } catch (err) {
    if (err.code === 'EACCES' || err.code === 'EPERM') throw err;
  }
  if (pointed !== undefined && path.isAbsolute(pointed)) return { path: pointed, where: 'pointer' };
  return { path: inDirPath(dir), where: 'dir' };
}

module.exports = { SOCKET_NAME, POINTER_NAME, maxSocketPath, fits, inDirPath, pointerPath, pipeName, fallbackPath, privateRuntimeDir, locate };
