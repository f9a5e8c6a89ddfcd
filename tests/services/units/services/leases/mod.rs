//! Tests of the `leases` service's parts.

mod check;
mod reference;
