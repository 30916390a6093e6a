//! Bounded reads of the local files a config names (the config itself, the widget map, schemas,
//! prompts, text overrides): only regular files, at most [`MAX_FILE_BYTES`], so a path such as
//! `/dev/zero`, a FIFO or a huge file is an error instead of a read without end.

use std::io::Read;
use std::path::Path;

/// The largest file the loader reads.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It does not exist.
    #[error("not found")]
    NotFound,
    /// A directory, device, FIFO or socket.
    #[error("not a regular file")]
    NotAFile,
    /// Larger than the limit.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// Not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// Another IO error.
    #[error("cannot read: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            Self::NotFound
        } else {
            Self::Io(e)
        }
    }
}

/// The text of the regular file at `path`, at most `max` bytes.
///
/// # Errors
/// [`ReadError`]; the file's type is checked before it is opened (opening a FIFO would wait for
/// a writer) and again on the open file.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(ReadError::NotAFile);
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge(max));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // It may grow while being read: never more than the limit plus one byte.
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(ReadError::TooLarge(max));
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.json");
        std::fs::write(&small, "{}").unwrap();
        assert_eq!(read_text(&small, 2).unwrap(), "{}");
        assert!(matches!(read_text(&small, 1), Err(ReadError::TooLarge(1))));
        assert!(matches!(read_text(dir.path(), 100), Err(ReadError::NotAFile)));
        assert!(matches!(read_text(&dir.path().join("absent"), 100), Err(ReadError::NotFound)));
        assert!(matches!(read_text(Path::new("/dev/zero"), 100), Err(ReadError::NotAFile)));
        let fifo = dir.path().join("fifo");
        if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            assert!(matches!(read_text(&fifo, 100), Err(ReadError::NotAFile)), "a FIFO is refused without waiting");
        }
        std::fs::write(&small, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(&small, 100), Err(ReadError::NotUtf8)));
    }
}
