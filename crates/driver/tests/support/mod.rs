//! Test support: a fake cluster the driver connects to.

pub mod fake_cql;
