//! `settings!`: turns the table of settings in `settings.rs` into the
//! [`Settings`](super::Settings) struct and its `Default`, the `env`
//! module (one constant per variable, [`VARS`](super::env::VARS),
//! [`flag_of`](super::env::flag_of)), and `from_vars`, `validate` and
//! `to_vars`. Each row of the table is one setting:
//!
//! ```text
//! /// What the field means (the field's and the variable's doc).
//! field: Type = default,
//!     CONST = "UZSWAP_NAME", flag "--flag", example "text",
//!     CODEC "what a bad value is told to be"
//!     , valid |v| range check, "what an out-of-range value is told";
//! ```
//!
//! `flag` names the `uzswap run` flag that sets the variable (a row
//! without one says who sets it instead: `set_by "…"`); `example` is a
//! value other than the default, in the form the variable is written
//! (tests set every variable and every flag to it); `CODEC` is one of
//! [`value`](super::value)'s readers and writers; `valid` is optional.

macro_rules! settings {
    (@flag) => { None };
    (@flag $flag:literal) => { Some($flag) };
    (@set_by) => { "" };
    (@set_by $set_by:literal) => { $set_by };
    (
        $(#[doc = $sdoc:literal])*
        pub struct Settings {
            $(
                $(#[doc = $doc:literal])*
                $field:ident: $ty:ty = $default:expr,
                    $konst:ident = $var:literal,
                    $(flag $flag:literal,)?
                    $(set_by $set_by:literal,)?
                    example $example:literal,
                    $codec:ident $expected:literal
                    $(, valid $check:expr, $why:literal)?;
            )*
        }
        $(#[doc = $odoc_all:literal])*
        other variables {
            $(
                $(#[doc = $odoc:literal])*
                $okonst:ident = $ovar:literal, set_by $oset_by:literal;
            )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct Settings {
            $(
                $(#[doc = $doc])*
                pub $field: $ty,
            )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Self {
                    $($field: $default,)*
                }
            }
        }

        /// Environment variable names, one per setting (and a few that are
        /// no setting's); [`env::VARS`] pairs each with the `uzswap run`
        /// flag that sets it.
        pub mod env {
            $(
                #[doc = concat!("Carries [`Settings::", stringify!($field), "`](super::Settings::", stringify!($field), ").")]
                #[doc = ""]
                $(#[doc = $doc])*
                pub const $konst: &str = $var;
            )*
            $(
                $(#[doc = $odoc])*
                pub const $okonst: &str = $ovar;
            )*

            /// A variable, and how a user of `uzswap run` sets it.
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct Var {
                pub name: &'static str,
                /// The flag of `uzswap run` that sets it.
                pub flag: Option<&'static str>,
                /// Who sets it when no flag does.
                pub set_by: &'static str,
                /// A value other than the default, as the variable holds
                /// it; empty for a variable that is no setting's.
                pub example: &'static str,
            }

            /// Every variable, with its flag: the settings' in the
            /// table's order, then the others.
            pub const VARS: &[Var] = &[
                $(Var {
                    name: $konst,
                    flag: settings!(@flag $($flag)?),
                    set_by: settings!(@set_by $($set_by)?),
                    example: $example,
                },)*
                $(Var {
                    name: $okonst,
                    flag: None,
                    set_by: $oset_by,
                    example: "",
                },)*
            ];

            /// What sets variable `var`, for messages: its flag, or who sets
            /// it.
            pub fn flag_of(var: &str) -> Option<&'static str> {
                VARS.iter()
                    .find(|v| v.name == var)
                    .map(|v| v.flag.unwrap_or(v.name))
            }
        }

        impl Settings {
            /// Reads the `UZSWAP_*` variables through `get`; unset ones
            /// keep their defaults. A value that does not parse, or is out
            /// of its range, is an error naming its variable.
            pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
                let mut s = Settings::default();
                $(
                    if let Some(v) = get(env::$konst) {
                        match ($codec.parse)(&v) {
                            Some(x) => s.$field = x,
                            None => {
                                return Err(SettingsError {
                                    name: env::$konst,
                                    value: v,
                                    expected: $expected,
                                })
                            }
                        }
                    }
                )*
                s.validate()?;
                Ok(s)
            }

            /// Checks the ranges; the error names the variable.
            pub fn validate(&self) -> Result<(), SettingsError> {
                $($(
                    let valid: fn(&$ty) -> bool = $check;
                    if !valid(&self.$field) {
                        return Err(SettingsError {
                            name: env::$konst,
                            value: ($codec.format)(&self.$field).unwrap_or_default(),
                            expected: $why,
                        });
                    }
                )?)*
                Ok(())
            }

            /// The variables that carry these settings: every one, but
            /// those whose value is not written (an unset option, a switch
            /// that is written only when on).
            pub fn to_vars(&self) -> Vec<(&'static str, String)> {
                let mut vars = Vec::new();
                $(
                    if let Some(v) = ($codec.format)(&self.$field) {
                        vars.push((env::$konst, v));
                    }
                )*
                vars
            }
        }
    };
}
