//! Which SCTP stack carries an end's associations (`--sctp-stack`).

/// An SCTP stack in user space, chosen per end (`--sctp-stack`, docs/sctp.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SctpStack {
    /// The sans-IO `sctp-proto` crate, one task per association.
    #[default]
    SctpProto,
    /// usrsctp (Debian's libusrsctp, FreeBSD's SCTP): one stack per process, driven
    /// through AF_CONN over each end's own UDP socket.
    Usrsctp,
}

impl SctpStack {
    /// A client's SCTP settings (`None` over TCP) on this stack: an error naming
    /// `--sctp-stack` when another stack than the default is asked for over TCP.
    pub fn client(
        self,
        cfg: Option<super::SctpConfig>,
    ) -> Result<Option<super::SctpConfig>, String> {
        match cfg {
            None if self != SctpStack::default() => {
                Err("--sctp-stack: only with --transport sctp".into())
            }
            cfg => Ok(cfg.map(|c| super::SctpConfig { stack: self, ..c })),
        }
    }
}

impl std::fmt::Display for SctpStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SctpStack::SctpProto => "sctp-proto",
            SctpStack::Usrsctp => "usrsctp",
        })
    }
}

impl std::str::FromStr for SctpStack {
    type Err = String;
    /// `sctp-proto` or `usrsctp`.
    fn from_str(s: &str) -> Result<SctpStack, String> {
        match s {
            "sctp-proto" => Ok(SctpStack::SctpProto),
            "usrsctp" => Ok(SctpStack::Usrsctp),
            _ => Err(format!("{s:?}: an SCTP stack, sctp-proto or usrsctp")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_is_named_as_the_flag_names_it() {
        for s in [SctpStack::SctpProto, SctpStack::Usrsctp] {
            assert_eq!(s.to_string().parse::<SctpStack>(), Ok(s));
        }
        assert_eq!(
            super::super::SctpConfig::default().stack,
            SctpStack::SctpProto
        );
        let e = "linux".parse::<SctpStack>().unwrap_err();
        assert!(
            e.contains("\"linux\"") && e.contains("sctp-proto or usrsctp"),
            "{e}"
        );
    }
}
