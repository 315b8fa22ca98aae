//! How each kind of setting is written in a `UZSWAP_*` variable: sizes
//! (`512M`), switches (`1`/`0`), numbers, paths, the compressor's name,
//! the small-object mode, the injected failure. A [`Codec`] pairs the
//! parser with the printer so that every value round-trips.

use compress::Algorithm;
use runtime::InjectFailure;
use std::path::PathBuf;

/// Reads and writes one kind of value. `format` gives `None` for a value
/// that is not written at all (an unset option, a switch that is off where
/// only "on" is ever written): the reader then keeps the default.
pub struct Codec<T> {
    /// The value a variable holds; `None`: not a value of this kind.
    pub parse: fn(&str) -> Option<T>,
    /// The variable's text for a value, in the form `parse` reads back.
    pub format: fn(&T) -> Option<String>,
}

/// A size: `512M`, `64K`, `4096` ([`parse_size`], [`format_size`]).
pub const SIZE: Codec<usize> = Codec {
    parse: parse_size,
    format: |v| Some(format_size(*v)),
};

/// A size or nothing: written only when set.
pub const OPTIONAL_SIZE: Codec<Option<usize>> = Codec {
    parse: |s| parse_size(s).map(Some),
    format: |v| v.map(format_size),
};

/// A switch, always written: `1` or `0` (read: also yes/no, true/false,
/// on/off).
pub const SWITCH: Codec<bool> = Codec {
    parse: parse_bool,
    format: |v| Some(u8::from(*v).to_string()),
};

/// A switch that is off unless its variable says otherwise: written (`1`)
/// only when on.
pub const SWITCH_IF_ON: Codec<bool> = Codec {
    parse: parse_bool,
    format: |v| v.then(|| "1".to_string()),
};

/// A decimal count.
pub const COUNT: Codec<usize> = Codec {
    parse: |s| s.parse().ok(),
    format: |v| Some(v.to_string()),
};

/// A decimal percentage.
pub const PERCENT: Codec<u32> = Codec {
    parse: |s| s.parse().ok(),
    format: |v| Some(v.to_string()),
};

/// A path, as it is.
pub const PATH: Codec<PathBuf> = Codec {
    parse: |s| Some(PathBuf::from(s)),
    format: |v| Some(v.display().to_string()),
};

/// A path or nothing: written only when set.
pub const OPTIONAL_PATH: Codec<Option<PathBuf>> = Codec {
    parse: |s| Some(Some(PathBuf::from(s))),
    format: |v| v.as_ref().map(|p| p.display().to_string()),
};

/// A compressor: `lz4`, `zstd:5`…
pub const ALGORITHM: Codec<Algorithm> = Codec {
    parse: |s| s.parse().ok(),
    format: |v| Some(v.to_string()),
};

/// [`SmallObjects`]: `1`, `0` or a size.
pub const ON_OFF_OR_SIZE: Codec<SmallObjects> = Codec {
    parse: SmallObjects::parse,
    format: |v| Some(v.to_string()),
};

/// The failure a test of the fatal path injects, written only when set.
pub const INJECTED_FAILURE: Codec<Option<InjectFailure>> = Codec {
    parse: |s| {
        Some(Some(match s {
            "fault-panic" => InjectFailure::FaultHandlerPanic,
            "reclaim-panic" => InjectFailure::ReclaimerPanic,
            "runtime-fault" => InjectFailure::RuntimeThreadFault,
            _ => return None,
        }))
    },
    format: |v| {
        v.map(|f| {
            match f {
                InjectFailure::FaultHandlerPanic => "fault-panic",
                InjectFailure::ReclaimerPanic => "reclaim-panic",
                InjectFailure::RuntimeThreadFault => "runtime-fault",
            }
            .to_string()
        })
    },
};

/// When small allocations (below `--min-alloc`) come from the paged
/// small-object heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmallObjects {
    /// Never: they are the program's allocator's, unpaged.
    Off,
    /// From the first one.
    On,
    /// Once the program's own allocator holds this many bytes of them:
    /// the first ones stay its own (unpaged), every later one is paged.
    /// So a program with few small objects runs as it would without
    /// uzswap, and one made of them (a database, a cache) stays within
    /// the limit plus this many bytes.
    After(usize),
}

impl SmallObjects {
    /// What the program's allocator may hold before small objects are
    /// paged, by default.
    pub const DEFAULT_AFTER: usize = 4 << 20;

    /// `1`/`on`, `0`/`off`, or a size (`32M`).
    pub fn parse(s: &str) -> Option<Self> {
        match parse_bool(s) {
            Some(true) => Some(Self::On),
            Some(false) => Some(Self::Off),
            None => parse_size(s).map(Self::After),
        }
    }
}

impl std::fmt::Display for SmallObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("0"),
            Self::On => f.write_str("1"),
            Self::After(n) => f.write_str(&format_size(*n)),
        }
    }
}

/// Parses `512M`, `64K`, `2G`, `4096` (bytes; K/M/G are powers of 1024,
/// an optional trailing `B` or `iB` is accepted).
pub fn parse_size(s: &str) -> Option<usize> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: usize = digits.trim().parse().ok()?;
    n.checked_mul(1usize << shift)
}

/// `536870912` as `512M`: the shortest exact form.
pub fn format_size(bytes: usize) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// `1`/`yes`/`true`/`on` or `0`/`no`/`false`/`off`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}
