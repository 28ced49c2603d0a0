//! Ctrl-C (SIGINT) and SIGTERM for the commands that run load (`run`, `ab`): either cancels
//! their token, everything measured so far is still written, and every broker the run started
//! (broker-under-test processes, Apache's JVMs) is stopped. Before SIGTERM was watched, a
//! `kill <harness>` left the cell's JVMs running.

use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

/// Starts a thread named `name` that cancels `cancel` on Ctrl-C or SIGTERM, until `done` is
/// cancelled.
/// The caller cancels `done` and joins the thread when its work ends.
pub fn watch_ctrl_c(
    name: &str,
    cancel: &CancellationToken,
    done: &CancellationToken,
) -> std::io::Result<JoinHandle<()>> {
    let (cancel, done) = (cancel.clone(), done.clone());
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                use tokio::signal::unix::{signal, SignalKind};
                let Ok(mut term) = signal(SignalKind::terminate()) else {
                    return;
                };
                tokio::select! {
                    r = tokio::signal::ctrl_c() => if r.is_ok() { cancel.cancel() },
                    Some(()) = term.recv() => cancel.cancel(),
                    _ = done.cancelled() => {}
                }
            });
        })
}
