//! Placeholder while the bench is written.

fn main() {}
