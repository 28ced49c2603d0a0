//! Tells the tests whether a browser is installed. Without Chromium the browser tests of
//! tests/html_report.rs are `#[ignore]`d with the install hint as the reason, so `cargo test`
//! counts them as ignored instead of passing them with their checks skipped. Under CI (`CI`
//! set) they are never ignored: `.ci/run` installs Chromium, and a missing one fails them.
//! The same for a JDK and tests/apache_e2e.rs, which starts Apache RocketMQ's JVMs (`no_jdk`).

use std::path::Path;

/// Where Debian's `chromium` package (and older `chromium-browser`) installs the browser.
const CHROMIUM: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_chromium)");
    println!("cargo::rustc-check-cfg=cfg(no_jdk)");
    println!("cargo::rerun-if-env-changed=JAVA_HOME");
    println!("cargo::rerun-if-env-changed=CI");
    // A package install changes the folder's mtime; a missing file would rerun this every build.
    println!("cargo::rerun-if-changed=/usr/bin");
    let found = CHROMIUM.iter().any(|p| Path::new(p).is_file());
    if !found && std::env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=no_chromium");
    }
    let java = std::env::var_os("JAVA_HOME")
        .map(|h| Path::new(&h).join("bin").join("java"))
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("java"))
                    .find(|p| p.is_file())
            })
        });
    if java.is_none() && std::env::var_os("CI").is_none() {
        println!("cargo::rustc-cfg=no_jdk");
    }
}
