//! Placeholder: replaced by the strategy's own measurement harness.
fn main() {}
