//! History generator (being built).
