//! The bridge between the model and the engine: scenarios, generators,
//! workloads, the reference specs the checkers hold the model to, and the
//! list of seeded bugs.
