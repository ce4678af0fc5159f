//! Test helper shared by the Redis strategies' settings: every bad value is a `Config` error that names
//! the setting, and the defaults are valid.

use crate::error::LockError;

/// Spoils one setting of a default config.
pub(super) type Spoil<C> = fn(&mut C);

/// Checks that `validate` rejects each spoiled default config with a `Config` error naming its field,
/// and accepts the default.
pub(super) fn assert_each_names_its_field<C: Default>(
    cases: &[(&str, Spoil<C>)],
    validate: fn(&C) -> Result<(), LockError>,
) {
    for (field, spoil) in cases {
        let mut config = C::default();
        spoil(&mut config);
        match validate(&config) {
            Err(err) => {
                assert_eq!(err.kind(), "config", "{field}: {err}");
                assert!(err.to_string().contains(field), "{err} should name {field}");
            }
            Ok(()) => panic!("a spoiled {field} was accepted"),
        }
    }
    if let Err(err) = validate(&C::default()) {
        panic!("the defaults are invalid: {err}");
    }
}
