//! `harness serve`: one name server and one broker of any kind (broker-under-test or Apache
//! RocketMQ's JVMs), up until told to stop, for tools that are not the harness: the Java and Go
//! client interop scenarios, RocketMQ's own benchmark producer, a user's own client.
//!
//! It prints, each on a line of its own and flushed, `namesrv listening on IP:PORT` (unless
//! `--namesrv` names one already running), `broker listening on IP:PORT`, `broker pid N` and
//! `ready` once the name server lists the broker. It stops both (SIGTERM, then SIGKILL after
//! the grace) on Ctrl-C, SIGTERM, or when its stdin is a pipe that closes; exit 0. A broker
//! that dies by itself ends it with exit 4 and the broker's last log line.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use harness_model::profile::BrokerChoice;
use tokio_util::sync::CancellationToken;

use crate::exit;
use crate::interrupt;
use crate::kind::select::for_choice;
use crate::kind::{registered, Member, MemberSpec, NameServer};

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// `in-tree` (broker-under-test) or `apache-<version>` (apache-5.3.3, apache-4.9.7).
    #[arg(long, value_name = "KIND", default_value = "in-tree",
          value_parser = BrokerChoice::parse_flag)]
    pub broker: BrokerChoice,
    /// Use this running name server instead of starting one (a broker restarted with the same
    /// `listenPort` and `storePathRootDir` then keeps its routes' name server).
    #[arg(long, value_name = "HOST:PORT")]
    pub namesrv: Option<SocketAddr>,
    /// Start only the name server.
    #[arg(long, conflicts_with = "namesrv")]
    pub no_broker: bool,
    /// Folder for the configuration, logs and (unless `storePathRootDir` is set) the store.
    /// Default: a fresh temporary folder, deleted at the end.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A broker key under its RocketMQ name, `waitTimeMillsInSendQueue=200`. Repeatable.
    /// `listenPort` defaults to 0 (a free port).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The broker-under-test binary (default: as for `run`).
    #[arg(long)]
    pub broker_bin: Option<PathBuf>,
    /// How long a broker may take to stop after SIGTERM before it is killed.
    #[arg(long, default_value = "15s")]
    pub grace: humantime::Duration,
    /// How long the broker may take to be ready (boot line, in the name server's route, keys
    /// read back; Apache: at least 60 s); past it the broker is stopped and serve exits 1. An
    /// Apache JVM's boot took 4.5-13.9 s on two busy cores here; a slower machine needs more.
    #[arg(long, default_value = "60s")]
    pub ready_within: humantime::Duration,
}

/// The broker's keys: the `--set` lines over the defaults every kind needs here.
fn broker_keys(
    sets: &[String],
    store: &Path,
    namesrv: SocketAddr,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut keys = BTreeMap::from([
        ("listenPort".to_owned(), "0".to_owned()),
        ("storePathRootDir".to_owned(), store.display().to_string()),
    ]);
    for set in sets {
        let (k, v) = set.split_once('=').ok_or_else(|| {
            exit::invalid(anyhow::anyhow!(
                "--set {set:?}: write KEY=VALUE, e.g. --set waitTimeMillsInSendQueue=200"
            ))
        })?;
        keys.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    keys.insert("namesrvAddr".to_owned(), namesrv.to_string());
    Ok(keys)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A reader that went away is told by SIGPIPE or stdin's end, not by this write.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

pub fn run_serve(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let kind = for_choice(&args.broker, args.broker_bin.as_deref())?;
    let scratch;
    let dir: &Path = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d
        }
        None => {
            scratch = tempfile::Builder::new()
                .prefix("harness-serve-")
                .tempdir()
                .context("creating a temporary folder")?;
            scratch.path()
        }
    };
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    let signals = interrupt::watch_ctrl_c("harness-signal", &cancel, &done)?;
    let result = serve(args, &kind, dir, &cancel);
    done.cancel();
    let _ = signals.join();
    result
}

fn serve(
    args: &ServeArgs,
    kind: &crate::kind::Kind,
    dir: &Path,
    cancel: &CancellationToken,
) -> anyhow::Result<ExitCode> {
    let own_ns: Option<Box<dyn NameServer>> = match args.namesrv {
        Some(_) => None,
        None => Some(
            kind.start_namesrv(dir)
                .context("starting the name server")?,
        ),
    };
    let namesrv = match (&own_ns, args.namesrv) {
        (Some(ns), _) => ns.addr(),
        (None, Some(addr)) => addr,
        (None, None) => unreachable!("a name server was started or named"),
    };
    if own_ns.is_some() {
        say(&format!("namesrv listening on {namesrv}"));
    }
    let mut broker: Option<Box<dyn Member>> = None;
    if !args.no_broker {
        let keys = broker_keys(&args.set, &dir.join("store"), namesrv)?;
        let spec = MemberSpec::new("broker", dir, &keys).ready_within(args.ready_within.into());
        let started = kind.start_broker(&spec);
        let member = match started {
            Ok(m) => m,
            Err(e) => {
                if let Some(ns) = own_ns {
                    ns.stop();
                }
                return Err(anyhow::anyhow!("starting the broker: {e}"));
            }
        };
        say(&format!("broker listening on {}", member.addr()));
        if let Some(pid) = member.pid() {
            say(&format!("broker pid {pid}"));
        }
        let listed = registered(namesrv, member.addr(), Duration::from_secs(30), &|| {
            cancel.is_cancelled()
        });
        broker = Some(member);
        if let Err(why) = listed {
            stop_all(broker, own_ns, args.grace.into());
            return Err(anyhow::anyhow!(why));
        }
    }
    say("ready");
    let died = watch(&mut broker, cancel);
    stop_all(broker, own_ns, args.grace.into());
    match died {
        None => Ok(ExitCode::SUCCESS),
        Some(why) => Err(anyhow::anyhow!(why)),
    }
}

/// Until a stop is asked for (signal or stdin's end) or the broker dies by itself: the reason
/// in the second case.
fn watch(broker: &mut Option<Box<dyn Member>>, cancel: &CancellationToken) -> Option<String> {
    let stdin_is_pipe = stdin_is_pipe();
    while !cancel.is_cancelled() {
        if let Some(status) = broker.as_mut().and_then(|b| b.exited()) {
            return Some(format!("the broker exited by itself ({status})"));
        }
        // poll(2) on stdin doubles as the 100 ms tick, so no thread sits in a read.
        if stdin_is_pipe && stdin_closed(Duration::from_millis(100)) {
            return None;
        }
        if !stdin_is_pipe {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    None
}

fn stop_all(broker: Option<Box<dyn Member>>, ns: Option<Box<dyn NameServer>>, grace: Duration) {
    if let Some(b) = broker {
        b.stop(grace);
    }
    if let Some(ns) = ns {
        ns.stop();
    }
}

fn stdin_is_pipe() -> bool {
    use std::os::unix::fs::FileTypeExt;
    // /proc/self/fd/0 resolves to whatever fd 0 is, a pipe included.
    std::fs::metadata("/proc/self/fd/0").is_ok_and(|m| m.file_type().is_fifo())
}

/// Waits up to `tick` for stdin to become readable; true once it is at its end (or broken).
fn stdin_closed(tick: Duration) -> bool {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fd, 1, tick.as_millis() as libc::c_int) };
    if n <= 0 {
        return false;
    }
    if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
        && fd.revents & libc::POLLIN == 0
    {
        return true;
    }
    // Readable: drain what was written (ignored); a read of 0 bytes is the end.
    let mut buf = [0u8; 256];
    // SAFETY: reading into a local buffer of its own length.
    let got = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
    got <= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_win_over_defaults_but_not_over_the_name_server() {
        let ns: SocketAddr = "127.0.0.1:9876".parse().unwrap();
        let keys = broker_keys(
            &[
                "listenPort=20911".into(),
                " waitTimeMillsInSendQueue = 200".into(),
                "namesrvAddr=10.0.0.1:9876".into(),
            ],
            Path::new("/tmp/s"),
            ns,
        )
        .unwrap();
        assert_eq!(keys["listenPort"], "20911");
        assert_eq!(keys["waitTimeMillsInSendQueue"], "200");
        assert_eq!(keys["storePathRootDir"], "/tmp/s");
        assert_eq!(keys["namesrvAddr"], "127.0.0.1:9876");
    }

    #[test]
    fn a_set_without_equals_is_invalid_input() {
        let e = broker_keys(
            &["listenPort".into()],
            Path::new("/s"),
            "127.0.0.1:1".parse().unwrap(),
        )
        .unwrap_err();
        assert_eq!(exit::code_for(&e), exit::INVALID_INPUT);
        assert!(e.to_string().contains("KEY=VALUE"), "{e}");
    }
}
