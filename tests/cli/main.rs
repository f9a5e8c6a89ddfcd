//! Integration tests of the `overcast` command: its commands, messages and exit codes, and the README's and the book's examples (one binary, one link).

mod cli;
mod docs;
mod lin_cli;
