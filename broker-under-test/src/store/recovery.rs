//! CommitLog recovery on open: keep the files that follow each other, validate records from the
//! start, and cut at the first invalid one (a torn tail after a crash).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use remoting::message::{decode_record, RecordAt};

use super::error::StoreError;
use super::mapped_file::MappedFile;
use super::page_cache::PageCacheModel;

/// Loads the files under `dir`, validates records from the start, and truncates at the first
/// invalid one: the rest of that file is zeroed and later files are deleted.
pub(super) fn recover_files(
    dir: &Path,
    file_size: usize,
    page_cache: &Arc<PageCacheModel>,
) -> Result<Vec<Arc<MappedFile>>, StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut found: Vec<(i64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(off) = name.parse::<i64>() {
                found.push((off, entry.path()));
            }
        }
    }
    found.sort();
    let mut files: Vec<Arc<MappedFile>> = Vec::new();
    let mut truncated = false;
    for (i, (off, path)) in found.iter().enumerate() {
        let expected = found[0].0 + (i as i64) * file_size as i64;
        if truncated || *off != expected {
            if !truncated {
                eprintln!(
                    "recover: {} does not follow the previous file, deleting it and later files",
                    path.display()
                );
                truncated = true;
            }
            std::fs::remove_file(path).map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            continue;
        }
        let file = MappedFile::open(path.clone(), *off, file_size, None, page_cache)?;
        // Scan with all positions at the end so the whole file is readable.
        file.set_positions(file_size);
        let data = file.readable_from(0);
        let mut pos = 0usize;
        let mut full = false;
        while pos < file_size {
            match decode_record(&data[pos..], true) {
                Ok(RecordAt::Message { len, .. }) => pos += len,
                Ok(RecordAt::EndOfFile { len }) if pos + len == file_size && len >= 8 => {
                    full = true;
                    break;
                }
                Ok(RecordAt::EndOfFile { .. }) | Ok(RecordAt::Empty) => break,
                Err(e) => {
                    eprintln!(
                        "recover: invalid record in {} at {pos}: {e}; truncating here",
                        path.display()
                    );
                    break;
                }
            }
        }
        if pos == file_size {
            full = true;
        }
        if full {
            file.set_positions(file_size);
        } else {
            file.zero_from(pos);
            file.set_positions(pos);
            truncated = true;
        }
        files.push(Arc::new(file));
    }
    Ok(files)
}
