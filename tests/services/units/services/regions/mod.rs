//! Tests of the `regions` service's parts.

mod converge;
mod durable;
mod history;
mod routing;
mod safety;
mod session;
mod strong;
mod timeline;
