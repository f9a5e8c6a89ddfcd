//! Brute-force reference checker (being built).
