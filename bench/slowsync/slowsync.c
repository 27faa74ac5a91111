/*
 * slowsync: an LD_PRELOAD shim that makes this machine's fast device look slow.
 *
 * The bench device syncs in ~40 us, which hides what sharing one sync between
 * many commits buys. Every fsync/fdatasync made through libc (node's libuv,
 * Rust std, SQLite) first sleeps DW_SLOWSYNC_MS milliseconds (default 5, may
 * be fractional) and then calls the real function, so a serial writer is held
 * to ~1000/DW_SLOWSYNC_MS durable commits per second, like a slow disk.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

typedef int (*sync_fn)(int);

static sync_fn real_fsync;
static sync_fn real_fdatasync;
static struct timespec delay;

/* Resolve once at load time, before any thread can call in. */
__attribute__((constructor)) static void slowsync_init(void) {
  real_fsync = (sync_fn)dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = (sync_fn)dlsym(RTLD_NEXT, "fdatasync");
  const char *env = getenv("DW_SLOWSYNC_MS");
  double ms = env && *env ? atof(env) : 5.0;
  if (ms < 0) ms = 0;
  long long ns = (long long)(ms * 1e6);
  delay.tv_sec = ns / 1000000000LL;
  delay.tv_nsec = ns % 1000000000LL;
}

/* Sleep the full delay even if a signal interrupts; keep the caller's errno. */
static void slowsync_wait(void) {
  int saved = errno;
  struct timespec left = delay;
  while (nanosleep(&left, &left) == -1 && errno == EINTR) {}
  errno = saved;
}

int fsync(int fd) {
  slowsync_wait();
  return real_fsync(fd);
}

int fdatasync(int fd) {
  slowsync_wait();
  return real_fdatasync(fd);
}
