//! Helpers shared by the unit tests of toolwright's crates. Every crate that uses it takes
//! it as a dev-dependency only; nothing here reaches a build of the product.

/// `table! { check; (a, b, ...); ... }` calls `check(a, b, ...)` once per row: a test table
/// that reads as one, and that rustfmt keeps one row to a line.
///
/// ```
/// use toolwright_testkit::table;
///
/// table! { |a: u8, b: u8, sum: u8| assert_eq!(a + b, sum, "{a} + {b}");
///     (1, 2, 3);
///     (3, 4, 7);
/// }
/// ```
#[macro_export]
macro_rules! table {
    ($check:expr; $( ($($arg:expr),* $(,)?) );* $(;)?) => {{
        let check = $check;
        $( check($($arg),*); )*
    }};
}
