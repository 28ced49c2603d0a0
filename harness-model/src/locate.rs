//! Where a mistyped profile path probably meant to point: the `.toml` beside it with the closest
//! name, for "no profile X; did you mean Y?".

use std::path::PathBuf;

/// The `.toml` file next to a missing `path` whose name is closest to it.
pub fn closest_profile(path: &std::path::Path) -> Option<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let wanted = path.file_stem()?.to_string_lossy().into_owned();
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            Some((strsim::jaro_winkler(&wanted, &stem), p))
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p)
}
