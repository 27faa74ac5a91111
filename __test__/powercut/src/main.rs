//! powercut: a FUSE file system over a backing directory that forgets
//! whatever was not synced when told to lose power. See README.md.

mod chaos;
mod control;
mod fs;
mod model;
mod mount;
mod pages;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use fuser::{Config, Session, SessionACL};

use crate::control::Daemon;
use crate::model::{Mode, Model};

const USAGE: &str =
    "usage: powercut <backing-dir> <mountpoint> [--mode drop|chaos] [--seed N] [--control <socket>]

Mounts <backing-dir> at <mountpoint>. File data reaches <backing-dir> only on
fsync/fdatasync, directory entries only on fsync of the directory. Commands,
one a line, on the Unix socket (default <mountpoint>.sock): cut, stats, sync,
unmount. Prints \"ready\" once mounted. SIGTERM/SIGINT: a clean unmount.";

struct Args {
    backing: PathBuf,
    mountpoint: PathBuf,
    mode: Mode,
    seed: u64,
    control: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut mode = Mode::Drop;
    let mut seed = 0;
    let mut control = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .and_then(|v| v.into_string().ok())
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.to_str() {
            Some("--mode") => {
                mode = match value("--mode")?.as_str() {
                    "drop" => Mode::Drop,
                    "chaos" => Mode::Chaos,
                    other => return Err(format!("unknown mode {other:?}\n{USAGE}")),
                }
            }
            Some("--seed") => {
                let v = value("--seed")?;
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed {v:?}: not a number"))?;
            }
            Some("--control") => control = Some(PathBuf::from(value("--control")?)),
            Some("-h" | "--help") => return Err(USAGE.to_string()),
            Some(s) if s.starts_with("--") => return Err(format!("unknown option {s}\n{USAGE}")),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    let [backing, mountpoint] =
        <[PathBuf; 2]>::try_from(positional).map_err(|_| USAGE.to_string())?;
    let mountpoint = mountpoint
        .canonicalize()
        .map_err(|e| format!("{}: {e}", mountpoint.display()))?;
    let control = control.unwrap_or_else(|| {
        let mut s = mountpoint.clone().into_os_string();
        s.push(".sock");
        PathBuf::from(s)
    });
    Ok(Args {
        backing,
        mountpoint,
        mode,
        seed,
        control,
    })
}

/// The signals that mean "unmount cleanly", blocked in every thread so that
/// only the one waiting for them sees them.
fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// The control socket's file, removed at exit only if it is still ours (the
/// next mount may have bound its own at the same path).
#[derive(Clone)]
struct SocketFile {
    path: PathBuf,
    id: (u64, u64),
}

impl SocketFile {
    fn bind(path: &std::path::Path) -> std::io::Result<(UnixListener, SocketFile)> {
        if let Ok(md) = std::fs::symlink_metadata(path) {
            if md.file_type().is_socket() {
                std::fs::remove_file(path)?;
            }
        }
        let listener = UnixListener::bind(path)?;
        let md = std::fs::symlink_metadata(path)?;
        let file = SocketFile {
            path: path.to_path_buf(),
            id: (md.dev(), md.ino()),
        };
        Ok((listener, file))
    }

    fn remove(&self) {
        if let Ok(md) = std::fs::symlink_metadata(&self.path) {
            if (md.dev(), md.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

fn wait_for_signals(set: libc::sigset_t, daemon: Arc<Daemon>, control: SocketFile) {
    loop {
        let mut sig = 0;
        // SAFETY: sigwait reads the set and writes one int.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        let _gate = daemon.gate();
        if let Err(e) = daemon.unmount() {
            eprintln!("powercut: unmount on signal {sig}: {e}");
        }
        control.remove();
        std::process::exit(0);
    }
}

/// One descriptor per file the kernel has open: lift the soft limit to the
/// hard one, as a process under test may open thousands.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit read and write one plain struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    // A test runner that dies must not leave a mount behind.
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    let signals = block_signals();
    raise_fd_limit();

    let model = Model::open(&args.backing, args.mode, args.seed)
        .map_err(|e| format!("{}: {e}", args.backing.display()))?;
    let shared = Arc::new(Mutex::new(model));
    let fsname = format!("powercut-{}", std::process::id());

    // The socket first: nothing after the mount may fail and leave it behind.
    let (listener, socket) = SocketFile::bind(&args.control)
        .map_err(|e| format!("control socket {}: {e}", args.control.display()))?;
    let fd = mount::mount(&args.mountpoint, &fsname).map_err(|e| {
        socket.remove();
        format!("mounting on {}: {e}", args.mountpoint.display())
    })?;
    // One thread serves FUSE: the model is behind one lock anyway.
    let session = Session::from_fd(
        fs::PowercutFs::new(shared.clone()),
        fd,
        SessionACL::All,
        Config::default(),
    )
    .map_err(|e| {
        let _ = mount::detach(&args.mountpoint, &fsname);
        socket.remove();
        format!("FUSE handshake on {}: {e}", args.mountpoint.display())
    })?;

    let daemon = Arc::new(Daemon::new(shared.clone(), args.mountpoint.clone(), fsname));
    {
        let daemon = daemon.clone();
        std::thread::spawn(move || control::serve(listener, daemon));
    }
    {
        let daemon = daemon.clone();
        let socket = socket.clone();
        std::thread::spawn(move || wait_for_signals(signals, daemon, socket));
    }

    let mut out = std::io::stdout();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;

    let ended = session.run();
    // Unmounted: by `unmount`, by a signal, or from outside (umount). In the
    // last case the mount ends cleanly too.
    let _gate = daemon.gate();
    let shut = fs::lock(&shared).shutdown();
    socket.remove();
    ended.map_err(|e| format!("FUSE session: {e}"))?;
    shut.map_err(|e| format!("final sync: {e}"))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("powercut: {e}");
        std::process::exit(1);
    }
}
