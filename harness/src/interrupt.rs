//! Ctrl-C for the commands that run load (`run`, `ab`): it cancels their token, and everything
//! measured so far is still written.

use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

/// Starts a thread named `name` that cancels `cancel` on Ctrl-C, until `done` is cancelled.
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
                tokio::select! {
                    r = tokio::signal::ctrl_c() => if r.is_ok() { cancel.cancel() },
                    _ = done.cancelled() => {}
                }
            });
        })
}
