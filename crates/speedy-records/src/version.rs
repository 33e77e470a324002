//! Format versions of records. A versioned record writes `"version": N`, the version this
//! build writes; a record written before it had the field reads as version 1 (fields
//! are only ever added, so an old record still reads); a reader refuses a record of a
//! version newer than it knows, naming the record, instead of guessing at its meaning.

use serde::de::DeserializeOwned;

/// A record that carries its format's version.
pub trait Versioned {
    /// The record's name in messages (`a fetch line`).
    const NAME: &'static str;
    /// The version this build writes and the newest it reads.
    const CURRENT: u32;
    /// The version the record says it is.
    fn version(&self) -> u32;
}

/// The version of a record written before it had a version field (serde's default).
pub fn first() -> u32 {
    1
}

/// Refuses a record newer than this build knows.
pub fn check<T: Versioned>(r: &T) -> Result<(), String> {
    if r.version() > T::CURRENT {
        return Err(format!(
            "{} of version {} (this speedy reads up to version {}): use a speedy at least \
             as new as the program that wrote it",
            T::NAME,
            r.version(),
            T::CURRENT
        ));
    }
    Ok(())
}

/// Reads a record from JSON text and checks its version.
pub fn read<T: DeserializeOwned + Versioned>(text: &str) -> Result<T, String> {
    let r: T = serde_json::from_str(text).map_err(|e| format!("{}: {e}", T::NAME))?;
    check(&r)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Rec {
        #[serde(default = "first")]
        version: u32,
    }
    impl Versioned for Rec {
        const NAME: &'static str = "a test record";
        const CURRENT: u32 = 2;
        fn version(&self) -> u32 {
            self.version
        }
    }

    #[test]
    fn old_records_read_as_version_1_and_newer_ones_are_refused_by_name() {
        assert_eq!(read::<Rec>("{}").unwrap().version, 1);
        assert_eq!(read::<Rec>(r#"{"version":2}"#).unwrap().version, 2);
        let e = read::<Rec>(r#"{"version":3}"#).err().unwrap();
        assert!(e.contains("a test record of version 3"), "{e}");
        assert!(read::<Rec>("[")
            .err()
            .unwrap()
            .starts_with("a test record: "));
    }
}
