//! The retry policy (being built).
