//! What several services' scenarios share.

pub mod words;
