//! One persisted config file, written and read as RocketMQ's ConfigManager does (consumer §6.2).
//!
//! Write (4.x's sequence, kept for every profile because 5.1+'s in-place overwrite can leave a
//! torn file behind a crash): new content to `<file>.tmp`, the current content copied to
//! `<file>.bak`, then `.tmp` renamed over `<file>`. A rename is atomic, so after a process crash
//! at any point `<file>` is either the old or the new content, and `.bak` holds the previous
//! one. A `durable` file is also fsynced (content, then directory) so that this holds after a
//! power loss; RocketMQ never fsyncs these files, and the files written on the send and pull
//! paths (topics, groups) do not either, since a stalled disk would stall those requests.
//! RocketMQ deletes `<file>` before the rename; we rename over it, which never leaves the name
//! missing.
//!
//! Load: `<file>`; if it is missing, empty or does not decode, `<file>.bak`. Unlike RocketMQ,
//! which then starts empty, a torn `<file>` without a usable `.bak` is an error: silently
//! starting with no topics or offsets would lose data at the next write.

use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
};

/// Why a config file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error(
        "{path} is unreadable ({reason}) and its backup {backup} is {backup_state}; \
         refusing to start with an empty table: repair or remove the file"
    )]
    Corrupt {
        path: PathBuf,
        reason: String,
        backup: PathBuf,
        backup_state: String,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What a load found.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded<T> {
    /// Neither the file nor its backup exists (a new store).
    Fresh,
    FromFile(T),
    /// The file was missing, empty or torn; its backup was used. The reason is for the log.
    FromBackup(T, String),
}

/// A file under `<storePathRootDir>/config/`.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    durable: bool,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Content of a file: `None` if missing or blank.
fn read_content(path: &Path) -> Result<Option<String>, String> {
    match fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) if s.trim().is_empty() => Ok(None),
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(format!("not UTF-8: {e}")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

impl ConfigFile {
    pub fn new(path: PathBuf) -> Self {
        ConfigFile {
            path,
            durable: false,
        }
    }

    /// A file fsynced on every write (written off the request path).
    pub fn durable(path: PathBuf) -> Self {
        ConfigFile {
            path,
            durable: true,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn backup_path(&self) -> PathBuf {
        with_suffix(&self.path, ".bak")
    }

    fn tmp_path(&self) -> PathBuf {
        with_suffix(&self.path, ".tmp")
    }

    /// Replaces the file's content atomically and keeps the previous content in `.bak`.
    pub fn persist(&self, content: &str) -> Result<(), ConfigFileError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ConfigFileError::Write { path, source }
        };
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(err(dir))?;
        }
        let tmp = self.tmp_path();
        {
            let mut f = fs::File::create(&tmp).map_err(err(&tmp))?;
            f.write_all(content.as_bytes()).map_err(err(&tmp))?;
            if self.durable {
                f.sync_all().map_err(err(&tmp))?;
            }
        }
        if let Ok(Some(previous)) = read_content(&self.path) {
            let bak = self.backup_path();
            fs::write(&bak, previous).map_err(err(&bak))?;
        }
        fs::rename(&tmp, &self.path).map_err(err(&self.path))?;
        if let (true, Some(dir)) = (self.durable, self.path.parent()) {
            // The rename is durable only once the directory entry is.
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    /// [`ConfigFile::load`] for the start-up log: `None` for a new store (with a line that says
    /// so), else the value and a note naming the backup when it was used.
    pub fn load_logged<T>(
        &self,
        decode: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Result<(T, String), String>, ConfigFileError> {
        Ok(match self.load(decode)? {
            Loaded::Fresh => Err(format!("{}: none yet", self.path.display())),
            Loaded::FromFile(v) => Ok((v, String::new())),
            Loaded::FromBackup(v, why) => Ok((
                v,
                format!(
                    " from the backup {} ({} {why})",
                    self.backup_path().display(),
                    self.path.display()
                ),
            )),
        })
    }

    /// Loads and decodes the file, falling back to `.bak` (see the module docs).
    pub fn load<T>(
        &self,
        decode: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Loaded<T>, ConfigFileError> {
        let main_state = match read_content(&self.path) {
            Ok(Some(text)) => match decode(&text) {
                Ok(v) => return Ok(Loaded::FromFile(v)),
                Err(e) => Some(format!("does not decode: {e}")),
            },
            Ok(None) if self.path.exists() => Some("empty".to_owned()),
            Ok(None) => None,
            Err(e) => Some(e),
        };
        let bak = self.backup_path();
        let backup_state = match read_content(&bak) {
            Ok(Some(text)) => match decode(&text) {
                Ok(v) => {
                    let why = main_state.unwrap_or_else(|| "missing".to_owned());
                    return Ok(Loaded::FromBackup(v, why));
                }
                Err(e) => format!("unusable too (does not decode: {e})"),
            },
            Ok(None) if bak.exists() => "empty".to_owned(),
            Ok(None) => "missing".to_owned(),
            Err(e) => format!("unreadable too ({e})"),
        };
        match main_state {
            // Neither exists: a new store.
            None if backup_state == "missing" => Ok(Loaded::Fresh),
            reason => Err(ConfigFileError::Corrupt {
                path: self.path.clone(),
                reason: reason.unwrap_or_else(|| "missing".to_owned()),
                backup: bak,
                backup_state,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Result<u32, String> {
        s.trim().parse().map_err(|e| format!("{e}"))
    }

    #[test]
    fn persist_keeps_the_previous_content_in_bak() {
        let dir = tempfile::tempdir().unwrap();
        let f = ConfigFile::new(dir.path().join("config").join("x.json"));
        assert_eq!(f.load(decode).unwrap(), Loaded::Fresh);
        f.persist("1").unwrap();
        assert!(!f.backup_path().exists());
        f.persist("2").unwrap();
        assert_eq!(fs::read_to_string(f.path()).unwrap(), "2");
        assert_eq!(fs::read_to_string(f.backup_path()).unwrap(), "1");
        assert!(!f.tmp_path().exists());
        assert_eq!(f.load(decode).unwrap(), Loaded::FromFile(2));
    }

    #[test]
    fn a_torn_file_falls_back_to_bak() {
        let dir = tempfile::tempdir().unwrap();
        let f = ConfigFile::new(dir.path().join("x.json"));
        f.persist("1").unwrap();
        f.persist("2").unwrap();
        fs::write(f.path(), "2x").unwrap();
        assert!(matches!(f.load(decode).unwrap(), Loaded::FromBackup(1, _)));
        fs::write(f.path(), "").unwrap();
        assert!(matches!(f.load(decode).unwrap(), Loaded::FromBackup(1, _)));
        fs::remove_file(f.path()).unwrap();
        assert!(matches!(f.load(decode).unwrap(), Loaded::FromBackup(1, _)));
    }

    #[test]
    fn a_torn_file_without_a_usable_bak_is_an_error_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let f = ConfigFile::new(dir.path().join("x.json"));
        fs::write(f.path(), "{half").unwrap();
        let e = f.load(decode).unwrap_err().to_string();
        assert!(e.contains("x.json is unreadable"), "{e}");
        assert!(e.contains("x.json.bak is missing"), "{e}");
        fs::write(f.backup_path(), "also torn").unwrap();
        let e = f.load(decode).unwrap_err().to_string();
        assert!(e.contains("unusable too"), "{e}");
    }
}
