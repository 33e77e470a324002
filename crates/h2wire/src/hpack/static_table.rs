//! The HPACK static table, transcribed from RFC 7541 Appendix A ("Static Table
//! Definition"): 61 entries, indices 1..=61 (index 0 is not used).

/// Number of entries in the static table; dynamic indices start at `LEN + 1`.
pub const LEN: usize = 61;

/// `(name, value)` of static entries 1..=61, in order: `ENTRIES[i - 1]` is index `i`.
#[rustfmt::skip]
pub const ENTRIES: [(&[u8], &[u8]); LEN] = [
    (b":authority", b""),                   //  1
    (b":method", b"GET"),                   //  2
    (b":method", b"POST"),                  //  3
    (b":path", b"/"),                       //  4
    (b":path", b"/index.html"),             //  5
    (b":scheme", b"http"),                  //  6
    (b":scheme", b"https"),                 //  7
    (b":status", b"200"),                   //  8
    (b":status", b"204"),                   //  9
    (b":status", b"206"),                   // 10
    (b":status", b"304"),                   // 11
    (b":status", b"400"),                   // 12
    (b":status", b"404"),                   // 13
    (b":status", b"500"),                   // 14
    (b"accept-charset", b""),               // 15
    (b"accept-encoding", b"gzip, deflate"), // 16
    (b"accept-language", b""),              // 17
    (b"accept-ranges", b""),                // 18
    (b"accept", b""),                       // 19
    (b"access-control-allow-origin", b""),  // 20
    (b"age", b""),                          // 21
    (b"allow", b""),                        // 22
    (b"authorization", b""),                // 23
    (b"cache-control", b""),                // 24
    (b"content-disposition", b""),          // 25
    (b"content-encoding", b""),             // 26
    (b"content-language", b""),             // 27
    (b"content-length", b""),               // 28
    (b"content-location", b""),             // 29
    (b"content-range", b""),                // 30
    (b"content-type", b""),                 // 31
    (b"cookie", b""),                       // 32
    (b"date", b""),                         // 33
    (b"etag", b""),                         // 34
    (b"expect", b""),                       // 35
    (b"expires", b""),                      // 36
    (b"from", b""),                         // 37
    (b"host", b""),                         // 38
    (b"if-match", b""),                     // 39
    (b"if-modified-since", b""),            // 40
    (b"if-none-match", b""),                // 41
    (b"if-range", b""),                     // 42
    (b"if-unmodified-since", b""),          // 43
    (b"last-modified", b""),                // 44
    (b"link", b""),                         // 45
    (b"location", b""),                     // 46
    (b"max-forwards", b""),                 // 47
    (b"proxy-authenticate", b""),           // 48
    (b"proxy-authorization", b""),          // 49
    (b"range", b""),                        // 50
    (b"referer", b""),                      // 51
    (b"refresh", b""),                      // 52
    (b"retry-after", b""),                  // 53
    (b"server", b""),                       // 54
    (b"set-cookie", b""),                   // 55
    (b"strict-transport-security", b""),    // 56
    (b"transfer-encoding", b""),            // 57
    (b"user-agent", b""),                   // 58
    (b"vary", b""),                         // 59
    (b"via", b""),                          // 60
    (b"www-authenticate", b""),             // 61
];

/// How a header field matches the static table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Name and value match entry `.0`.
    Full(usize),
    /// Only the name matches; `.0` is the lowest such index.
    Name(usize),
}

/// Finds `(name, value)` in the static table: a full match if there is one, else the
/// lowest index with that name. A `match` on the name compiles to length checks and
/// short compares, with no hashing.
pub fn find(name: &[u8], value: &[u8]) -> Option<Match> {
    let (first, count) = name_range(name)?;
    for i in first..first + count {
        if ENTRIES[i - 1].1 == value {
            return Some(Match::Full(i));
        }
    }
    Some(Match::Name(first))
}

/// The first index and entry count of `name` in the static table.
fn name_range(name: &[u8]) -> Option<(usize, usize)> {
    let r = match name {
        b":authority" => (1, 1),
        b":method" => (2, 2),
        b":path" => (4, 2),
        b":scheme" => (6, 2),
        b":status" => (8, 7),
        b"accept-charset" => (15, 1),
        b"accept-encoding" => (16, 1),
        b"accept-language" => (17, 1),
        b"accept-ranges" => (18, 1),
        b"accept" => (19, 1),
        b"access-control-allow-origin" => (20, 1),
        b"age" => (21, 1),
        b"allow" => (22, 1),
        b"authorization" => (23, 1),
        b"cache-control" => (24, 1),
        b"content-disposition" => (25, 1),
        b"content-encoding" => (26, 1),
        b"content-language" => (27, 1),
        b"content-length" => (28, 1),
        b"content-location" => (29, 1),
        b"content-range" => (30, 1),
        b"content-type" => (31, 1),
        b"cookie" => (32, 1),
        b"date" => (33, 1),
        b"etag" => (34, 1),
        b"expect" => (35, 1),
        b"expires" => (36, 1),
        b"from" => (37, 1),
        b"host" => (38, 1),
        b"if-match" => (39, 1),
        b"if-modified-since" => (40, 1),
        b"if-none-match" => (41, 1),
        b"if-range" => (42, 1),
        b"if-unmodified-since" => (43, 1),
        b"last-modified" => (44, 1),
        b"link" => (45, 1),
        b"location" => (46, 1),
        b"max-forwards" => (47, 1),
        b"proxy-authenticate" => (48, 1),
        b"proxy-authorization" => (49, 1),
        b"range" => (50, 1),
        b"referer" => (51, 1),
        b"refresh" => (52, 1),
        b"retry-after" => (53, 1),
        b"server" => (54, 1),
        b"set-cookie" => (55, 1),
        b"strict-transport-security" => (56, 1),
        b"transfer-encoding" => (57, 1),
        b"user-agent" => (58, 1),
        b"vary" => (59, 1),
        b"via" => (60, 1),
        b"www-authenticate" => (61, 1),
        _ => return None,
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_ranges_agree_with_the_table() {
        for (i, (name, value)) in ENTRIES.iter().enumerate() {
            let index = i + 1;
            let (first, count) = name_range(name).expect("every static name is found");
            assert!((first..first + count).contains(&index), "index {index}");
            assert_eq!(find(name, value), Some(Match::Full(index)));
        }
        let distinct: std::collections::BTreeSet<_> = ENTRIES.iter().map(|e| e.0).collect();
        let summed: usize = distinct.iter().map(|n| name_range(n).unwrap().1).sum();
        assert_eq!(summed, LEN);
    }

    #[test]
    fn name_only_match_gives_the_lowest_index() {
        assert_eq!(find(b":status", b"302"), Some(Match::Name(8)));
        assert_eq!(find(b":path", b"/x"), Some(Match::Name(4)));
        assert_eq!(find(b"x-custom", b"1"), None);
    }
}
