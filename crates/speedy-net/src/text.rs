//! How the programs' specs and records spell values that are not plain numbers: a value by
//! its name (its `Display` and `FromStr`, the same words the command lines take) and a
//! duration as seconds. Used with `#[serde(with = "...")]` by `speedy_browser::spec`,
//! `speedy_server::spec` and the lab, so a spec file and a flag say the same thing.

/// A value as its name: serialized with `Display`, read back with `FromStr` (a name that
/// does not parse is an error quoting the parser's words).
pub mod by_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    /// Writes `v` as its name.
    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    /// Reads a name.
    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e| D::Error::custom(format!("{s:?}: {e}")))
    }
}

/// An optional value as its name (`null` or absent for `None`).
pub mod opt_by_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::fmt::Display;
    use std::str::FromStr;

    /// Writes the name, or `null`.
    pub fn serialize<T: Display, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.collect_str(v),
            None => s.serialize_none(),
        }
    }

    /// Reads a name or `null`.
    pub fn deserialize<'de, T, D>(d: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        match Option::<String>::deserialize(d)? {
            Some(s) => s
                .parse()
                .map(Some)
                .map_err(|e| D::Error::custom(format!("{s:?}: {e}"))),
            None => Ok(None),
        }
    }
}

/// A duration as seconds (a number, fractions allowed); negative or non-finite numbers
/// are errors.
pub mod secs {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes the seconds.
    pub fn serialize<S: Serializer>(v: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(v.as_secs_f64())
    }

    /// Reads seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let x = f64::deserialize(d)?;
        Duration::try_from_secs_f64(x)
            .map_err(|_| D::Error::custom(format!("{x}: not a number of seconds ≥ 0")))
    }
}

/// Reads a program's spec file (`--spec FILE`): JSON, or TOML when the name ends in
/// `.toml`; `-` reads JSON from standard input. Unknown keys (the specs deny them) and a
/// format version other than `want` (`version_of` the spec read) are errors naming the
/// file: `--spec FILE: ...`. The one reader of `speedy load`, `serve`, `proxy` and
/// `fetch`'s specs.
pub fn read_spec<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    want: u32,
    version_of: impl Fn(&T) -> u32,
) -> Result<T, String> {
    let named = |e: &dyn std::fmt::Display| format!("--spec {}: {e}", path.display());
    let text = if path == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin()).map_err(|e| named(&e))?
    } else {
        std::fs::read_to_string(path).map_err(|e| named(&e))?
    };
    let spec: T = if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).map_err(|e| named(&e))?
    } else {
        serde_json::from_str(&text).map_err(|e| named(&e))?
    };
    let version = version_of(&spec);
    if version != want {
        return Err(named(&format!(
            "version {version}: this speedy reads version {want}"
        )));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use crate::Protocol;
    use serde::{Deserialize, Serialize};
    use std::time::Duration;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct T {
        #[serde(with = "super::by_name")]
        p: Protocol,
        #[serde(with = "super::opt_by_name", default)]
        q: Option<Protocol>,
        #[serde(with = "super::secs")]
        d: Duration,
    }

    #[test]
    fn round_trips_names_and_seconds_and_says_what_is_wrong() {
        let t = T {
            p: Protocol::H2,
            q: Some(Protocol::Http1),
            d: Duration::from_millis(1500),
        };
        let s = serde_json::to_string(&t).unwrap();
        assert_eq!(s, r#"{"p":"h2","q":"http/1.1","d":1.5}"#);
        assert_eq!(serde_json::from_str::<T>(&s).unwrap(), t);
        let none: T = serde_json::from_str(r#"{"p":"spdy","d":0}"#).unwrap();
        assert_eq!(none.q, None);
        let e = serde_json::from_str::<T>(r#"{"p":"gopher","d":1}"#).unwrap_err();
        assert!(e.to_string().contains("gopher"), "{e}");
        let e = serde_json::from_str::<T>(r#"{"p":"h2","d":-1}"#).unwrap_err();
        assert!(e.to_string().contains("seconds"), "{e}");
    }
}
