//! Counter structs that add themselves and name their own fields.
//!
//! A counter struct is declared once with [`counters!`](crate::counters!);
//! the macro derives [`Counters`] for it, so merging the counters of several
//! workers ([`Counters::merge`]) and listing every field by its dotted name
//! for a report ([`Counters::visit`], [`Counters::to_pairs`]) pick up a new
//! field with no hand edits anywhere else. Nested counter structs (a
//! `drops: Drops` inside `Stats`) are visited as `drops.malformed`, ...
//!
//! Counters are plain integers bumped inline by the one thread that owns
//! them; this module is only about reading and combining them, off the hot
//! path.

/// A value that can be summed across workers and listed by name.
pub trait Counters {
    /// Adds `other` into `self`, field by field.
    fn merge(&mut self, other: &Self);

    /// Calls `f(name, value)` for every counter, depth first in declaration
    /// order; `prefix` is prepended to each name with a dot (empty: none).
    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, u64));

    /// Every counter as `(dotted name, value)`, in declaration order.
    fn to_pairs(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, v| out.push((name.to_string(), v)));
        out
    }

    /// The counter named `name` (dotted for nested structs), if any.
    fn get(&self, name: &str) -> Option<u64> {
        let mut found = None;
        self.visit("", &mut |n, v| {
            if n == name {
                found = Some(v);
            }
        });
        found
    }
}

impl Counters for u64 {
    fn merge(&mut self, other: &Self) {
        *self += *other;
    }

    fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, u64)) {
        f(prefix, *self);
    }
}

/// `prefix.name`, or `name` when `prefix` is empty.
#[doc(hidden)]
pub fn join_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Declares a counter struct: every field is a `u64` or another counter
/// struct. Derives `Clone, Copy, Debug, Default, PartialEq, Eq`, serde's
/// `Serialize`/`Deserialize` when the engine's `serde` feature is on, and
/// [`Counters`](crate::counters::Counters).
///
/// ```
/// engine::counters! {
///     /// Frames seen by a toy stage.
///     pub struct Seen {
///         /// Frames in.
///         pub rx: u64,
///         /// Frames out.
///         pub tx: u64,
///     }
/// }
/// use engine::counters::Counters;
/// let mut a = Seen { rx: 1, tx: 2 };
/// a.merge(&Seen { rx: 10, tx: 20 });
/// assert_eq!(a.to_pairs(), vec![("rx".to_string(), 11), ("tx".to_string(), 22)]);
/// ```
#[macro_export]
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $ty,
            )*
        }

        impl $crate::counters::Counters for $name {
            fn merge(&mut self, other: &Self) {
                $( $crate::counters::Counters::merge(&mut self.$field, &other.$field); )*
            }

            fn visit(&self, prefix: &str, f: &mut dyn FnMut(&str, u64)) {
                $(
                    $crate::counters::Counters::visit(
                        &self.$field,
                        &$crate::counters::join_name(prefix, stringify!($field)),
                        f,
                    );
                )*
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Counters;

    crate::counters! {
        /// Inner test counters.
        pub struct Inner {
            /// a
            pub a: u64,
        }
    }
    crate::counters! {
        /// Outer test counters.
        pub struct Outer {
            /// x
            pub x: u64,
            /// nested
            pub inner: Inner,
        }
    }

    #[test]
    fn merge_adds_every_field_and_names_are_dotted() {
        let mut o = Outer {
            x: 1,
            inner: Inner { a: 2 },
        };
        o.merge(&Outer {
            x: 10,
            inner: Inner { a: 20 },
        });
        assert_eq!(
            o.to_pairs(),
            vec![("x".to_string(), 11), ("inner.a".to_string(), 22)]
        );
        assert_eq!(o.get("inner.a"), Some(22));
        assert_eq!(o.get("nope"), None);
    }
}
