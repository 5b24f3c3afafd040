//! Bad input: a file that cannot be read or is not a linked ELF or Mach-O
//! image (Mach-O errors start with the file offset of what is wrong).

use std::fmt;
use std::path::{Path, PathBuf};

/// A file that cannot be read or is not a linked ELF or Mach-O image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub path: PathBuf,
    pub message: String,
}

impl Error {
    pub(crate) fn new(path: &Path, message: String) -> Self {
        Error {
            path: path.to_path_buf(),
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for Error {}
