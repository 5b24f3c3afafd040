//! Errors about input files: what is wrong and exactly where, so a person can
//! find the offending byte (`libfoo.a(bar.o): section 12 '.text.f': offset 0x40: ...`).

use std::fmt;
use std::path::PathBuf;

/// Where in the input the problem is; every part is optional, the most precise wins.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: Option<PathBuf>,
    /// The archive member, when the file is an archive.
    pub member: Option<String>,
    /// Section index and name.
    pub section: Option<(u32, String)>,
    /// Byte offset: within the section when one is named, else within the member or file.
    pub offset: Option<u64>,
}

/// A problem with an input file. Bad input is always an `Error`, never a panic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
    pub location: Location,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            location: Location::default(),
        }
    }

    pub fn with_file(mut self, file: impl Into<PathBuf>) -> Error {
        self.location.file.get_or_insert_with(|| file.into());
        self
    }

    pub fn with_member(mut self, member: impl Into<String>) -> Error {
        self.location.member.get_or_insert_with(|| member.into());
        self
    }

    pub fn with_section(mut self, index: u32, name: impl Into<String>) -> Error {
        self.location
            .section
            .get_or_insert_with(|| (index, name.into()));
        self
    }

    pub fn at_offset(mut self, offset: u64) -> Error {
        self.location.offset.get_or_insert(offset);
        self
    }
}

impl From<object::Error> for Error {
    fn from(error: object::Error) -> Error {
        Error::new(error.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let location = &self.location;
        if let Some(file) = &location.file {
            write!(f, "{}", file.display())?;
            if let Some(member) = &location.member {
                write!(f, "({member})")?;
            }
            f.write_str(": ")?;
        } else if let Some(member) = &location.member {
            write!(f, "({member}): ")?;
        }
        if let Some((index, name)) = &location.section {
            write!(f, "section {index} '{name}': ")?;
        }
        if let Some(offset) = location.offset {
            write!(f, "offset {offset:#x}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<object::write::Error> for Error {
    fn from(error: object::write::Error) -> Error {
        Error::new(format!("writing: {error}"))
    }
}
