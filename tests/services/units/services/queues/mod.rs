//! Tests of the `queues` service's parts.

mod check;
mod reference;
mod timeline;
