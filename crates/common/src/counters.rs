//! Typed counters: one definition makes a crate's stats.
//!
//! [`counters!`](crate::counters!) takes a list of documented fields and
//! generates
//!
//! * the **snapshot** struct users read: one typed, documented field per
//!   counter (`u64`, or `bool` for a 0/1 state), with [`fields`] (every
//!   `(name, value)` in a stable order, for text and tables), `NAMES`,
//!   `DOCS` (each name's one-line meaning, from its doc comment), and
//!   `from_fields`, which reads the text form back and fails on a missing
//!   name instead of reading 0;
//! * the **live** struct the code counts in: one `AtomicU64` per field
//!   (relaxed increments; a `const fn new`, so it may be a `static`), with
//!   `snapshot` and `reset`.
//!
//! A counter's name is written once, in that list; the text form, the
//! tables and the docs all come from it, so renaming a counter cannot leave
//! a reader looking up a name that is no longer there.
//!
//! [`fields`]: Value

/// A snapshot field's type: how it is stored in a live `AtomicU64` and
/// written as a number.
pub trait Value: Copy {
    fn to_u64(self) -> u64;
    fn from_u64(v: u64) -> Self;
}

impl Value for u64 {
    fn to_u64(self) -> u64 {
        self
    }
    fn from_u64(v: u64) -> Self {
        v
    }
}

impl Value for bool {
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(v: u64) -> Self {
        v != 0
    }
}

/// A counter a report should hold and does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingCounter {
    /// The snapshot struct being read.
    pub section: &'static str,
    /// The counter's name.
    pub name: &'static str,
}

impl std::fmt::Display for MissingCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: no counter {:?}", self.section, self.name)
    }
}

impl std::error::Error for MissingCounter {}

/// Defines a snapshot struct and its live counterpart; see the
/// [module docs](crate::counters).
///
/// ```
/// common::counters! {
///     /// What a cache did.
///     pub struct CacheStats;
///     /// Live counters of a cache.
///     pub struct CacheCounters;
///     /// Lookups that found their key.
///     hits: u64,
///     /// Lookups that did not.
///     misses: u64,
///     /// The cache is enabled.
///     enabled: bool,
/// }
///
/// static LIVE: CacheCounters = CacheCounters::new();
/// LIVE.hits.fetch_add(2, std::sync::atomic::Ordering::Relaxed);
/// let s = LIVE.snapshot();
/// assert_eq!(s.hits, 2);
/// assert_eq!(s.fields()[0], ("hits", 2));
/// let back = CacheStats::from_fields(|n| s.fields().iter().find(|f| f.0 == n).map(|f| f.1));
/// assert_eq!(back, Ok(s));
/// assert!(CacheStats::from_fields(|_| None).is_err());
/// assert_eq!(CacheStats::DOCS[1], ("misses", "Lookups that did not."));
/// ```
#[macro_export]
macro_rules! counters {
    (
        $(#[$smeta:meta])* $svis:vis struct $Snap:ident;
        $(#[$lmeta:meta])* $lvis:vis struct $Live:ident;
        $( $(#[doc = $doc:literal])+ $name:ident : $ty:ty ),* $(,)?
    ) => {
        $(#[$smeta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        $svis struct $Snap {
            $( $(#[doc = $doc])+ pub $name: $ty, )*
        }

        $(#[$lmeta])*
        #[derive(Debug, Default)]
        $lvis struct $Live {
            $( $(#[doc = $doc])+ pub $name: ::std::sync::atomic::AtomicU64, )*
        }

        #[allow(dead_code)]
        impl $Live {
            /// All zero.
            pub const fn new() -> Self {
                Self { $( $name: ::std::sync::atomic::AtomicU64::new(0), )* }
            }

            /// Every counter now (relaxed loads: each is exact, the set is
            /// not one instant).
            pub fn snapshot(&self) -> $Snap {
                $Snap {
                    $( $name: <$ty as $crate::counters::Value>::from_u64(
                        self.$name.load(::std::sync::atomic::Ordering::Relaxed)), )*
                }
            }

            /// Every counter back to 0.
            pub fn reset(&self) {
                $( self.$name.store(0, ::std::sync::atomic::Ordering::Relaxed); )*
            }
        }

        #[allow(dead_code)]
        impl $Snap {
            /// Every counter's name, in [`Self::fields`]' order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Every counter's name and one-line meaning.
            pub const DOCS: &'static [(&'static str, &'static str)] =
                &[$( (stringify!($name), $crate::counters::trim_doc(concat!($($doc),+))) ),*];

            /// `(name, value)` of every counter, in a stable order.
            pub fn fields(&self) -> ::std::vec::Vec<(&'static str, u64)> {
                ::std::vec![$( (stringify!($name), $crate::counters::Value::to_u64(self.$name)) ),*]
            }

            /// Reads every counter through `get` (by name); a name `get`
            /// does not know is an error, never a silent 0.
            pub fn from_fields(
                get: impl Fn(&str) -> ::std::option::Option<u64>,
            ) -> ::std::result::Result<Self, $crate::counters::MissingCounter> {
                ::std::result::Result::Ok(Self {
                    $( $name: <$ty as $crate::counters::Value>::from_u64(
                        get(stringify!($name)).ok_or($crate::counters::MissingCounter {
                            section: stringify!($Snap),
                            name: stringify!($name),
                        })?), )*
                })
            }
        }
    };
}

/// A doc comment's text as one line: `concat!` of its lines keeps each
/// line's leading space, which this drops at the start.
pub const fn trim_doc(s: &'static str) -> &'static str {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let (_, rest) = b.split_at(i);
    match std::str::from_utf8(rest) {
        Ok(t) => t,
        Err(_) => s,
    }
}

#[cfg(test)]
mod tests {
    crate::counters! {
        /// Test snapshot.
        pub struct Snap;
        /// Test live counters.
        pub struct Live;
        /// First
        /// over two lines.
        a: u64,
        /// A flag.
        b: bool,
    }

    #[test]
    fn round_trip_and_missing_names() {
        let live = Live::new();
        live.a.fetch_add(5, std::sync::atomic::Ordering::Relaxed);
        live.b.store(1, std::sync::atomic::Ordering::Relaxed);
        let s = live.snapshot();
        assert_eq!(s, Snap { a: 5, b: true });
        assert_eq!(s.fields(), vec![("a", 5), ("b", 1)]);
        let fields = s.fields();
        let get = |n: &str| fields.iter().find(|f| f.0 == n).map(|f| f.1);
        assert_eq!(Snap::from_fields(get), Ok(s));
        let err = Snap::from_fields(|n| (n == "a").then_some(1)).unwrap_err();
        assert_eq!((err.section, err.name), ("Snap", "b"));
        assert_eq!(Snap::NAMES, ["a", "b"]);
        assert_eq!(Snap::DOCS[0], ("a", "First over two lines."));
        live.reset();
        assert_eq!(live.snapshot(), Snap::default());
    }
}
