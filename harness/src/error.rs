//! What can go wrong around a run, before it starts or while its files are
//! read and written, as a type: each with the one line the CLI prints.

use crate::params::ParamError;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why the harness refused or could not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HarnessError {
    /// A name that names nothing known: a scenario, a bug, a fault profile.
    Unknown {
        /// What kind of thing was named (`scenario`, `bug`, ...).
        kind: &'static str,
        /// The name given.
        name: String,
        /// The names that are known, in order.
        known: Vec<String>,
    },
    /// Parameters a scenario refused.
    Params(ParamError),
    /// Input that is not what it was given as (not JSON, a field missing
    /// or wrong, another scenario's file, an argument out of range): why,
    /// in one line.
    Invalid(String),
    /// A file or folder that could not be read or written.
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The system's words.
        error: String,
    },
}

impl HarnessError {
    /// An unknown `kind` called `name`, with the names that are `known`.
    pub fn unknown<'a>(
        kind: &'static str,
        name: &str,
        known: impl IntoIterator<Item = &'a str>,
    ) -> HarnessError {
        HarnessError::Unknown {
            kind,
            name: name.to_string(),
            known: known.into_iter().map(str::to_string).collect(),
        }
    }

    /// Input refused because `why`.
    pub fn invalid(why: impl Into<String>) -> HarnessError {
        HarnessError::Invalid(why.into())
    }

    /// `path` could not be read: `error`.
    pub fn read(path: &Path, error: impl fmt::Display) -> HarnessError {
        HarnessError::Io {
            action: "read",
            path: path.to_path_buf(),
            error: error.to_string(),
        }
    }

    /// `path` could not be written: `error`.
    pub fn write(path: &Path, error: impl fmt::Display) -> HarnessError {
        HarnessError::Io {
            action: "write",
            path: path.to_path_buf(),
            error: error.to_string(),
        }
    }
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::Unknown { kind, name, known } => {
                write!(f, "unknown {kind} '{name}' (known: {})", known.join(", "))
            }
            HarnessError::Params(e) => write!(f, "{e}"),
            HarnessError::Invalid(why) => f.write_str(why),
            HarnessError::Io {
                action,
                path,
                error,
            } => write!(f, "cannot {action} {}: {error}", path.display()),
        }
    }
}

impl std::error::Error for HarnessError {}

impl From<ParamError> for HarnessError {
    fn from(e: ParamError) -> HarnessError {
        HarnessError::Params(e)
    }
}

/// A line of text that says why input was refused.
impl From<String> for HarnessError {
    fn from(why: String) -> HarnessError {
        HarnessError::Invalid(why)
    }
}

/// A line of text that says why input was refused.
impl From<&str> for HarnessError {
    fn from(why: &str) -> HarnessError {
        HarnessError::Invalid(why.to_string())
    }
}

/// The CLI's commands report in lines of text: a harness error is its line.
impl From<HarnessError> for String {
    fn from(e: HarnessError) -> String {
        e.to_string()
    }
}
