//! The one civil-date helper of the workspace: proleptic-Gregorian day arithmetic
//! (days from 1970-01-01 and back), and the date-times HAR and WARC files carry
//! (ISO 8601 / RFC 3339, `2013-05-01T12:00:00.123Z`), parsed and formatted as
//! milliseconds since the Unix epoch.
//!
//! Three entry points for three needs:
//! - [`parse_ms`] is lenient, for files written by other tools (a space for `T`, no
//!   zone taken as UTC, `±hhmm` or `±hh` offsets, `,` before the fraction);
//! - [`is_rfc3339`] is strict, for the HAR 1.2 validator (the schema's pattern);
//! - [`format_ms`] and [`format_system_time`] write UTC with milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian; `m` in 1..=12).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(y, m, d)` of a day number (days since 1970-01-01).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Parses an ISO 8601 date-time (`2024-05-01T10:00:00.123+02:00`, `…Z`, or without a
/// zone, taken as UTC) into ms since the Unix epoch; `None` if it is not one.
pub fn parse_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) && !t.is_empty() {
            t.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac = 0.0;
    if i < b.len() && (b[i] == b'.' || b[i] == b',') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        frac = format!("0.{}", &s[start..i]).parse::<f64>().ok()?;
    }
    let offset_min = if i == b.len() || &s[i..] == "Z" || &s[i..] == "z" {
        0
    } else {
        let sign = match b[i] {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let rest = &s[i + 1..];
        if !rest.is_ascii() {
            return None;
        }
        let (hh, mm) = match rest.len() {
            5 if rest.as_bytes()[2] == b':' => (&rest[..2], &rest[3..]),
            4 => (&rest[..2], &rest[2..]),
            2 => (rest, "00"),
            _ => return None,
        };
        let hh: i64 = hh.parse().ok()?;
        let mm: i64 = mm.parse().ok()?;
        sign * (hh * 60 + mm)
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs as f64 * 1000.0 + frac * 1000.0)
}

/// Formats ms since the Unix epoch (rounded to the ms) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_ms(ms: f64) -> String {
    let total = ms.round() as i64;
    let (secs, milli) = (total.div_euclid(1000), total.rem_euclid(1000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Formats a wall-clock time (truncated to the ms) as `YYYY-MM-DDTHH:MM:SS.mmmZ`; times
/// before the epoch read as the epoch.
pub fn format_system_time(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format_ms(d.as_millis() as f64)
}

/// Whether `s` is a date-time as the HAR 1.2 schema's pattern has it:
/// `YYYY-MM-DDThh:mm:ss(.s+)?(Z|±hh:mm)`.
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10))
        || b[10] != b'T'
        || !(digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19))
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    match &b[i..] {
        b"Z" => true,
        [s, h1, h2, b':', m1, m2] if (*s == b'+' || *s == b'-') => {
            [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn day_numbers_of_known_dates() {
        for (ymd, days) in [
            ((1970, 1, 1), 0),
            ((1969, 12, 31), -1),
            ((2000, 2, 29), 11_016),
            ((2000, 3, 1), 11_017),
            ((1900, 3, 1), -25_508),
            ((2013, 3, 5), 15_769),
            ((2038, 1, 19), 24_855),
            ((1600, 1, 1), -135_140),
        ] {
            assert_eq!(days_from_civil(ymd.0, ymd.1, ymd.2), days, "{ymd:?}");
            assert_eq!(civil_from_days(days), ymd, "{days}");
        }
        // Every day of four centuries round-trips and follows its predecessor.
        let mut prev = civil_from_days(-146_097 - 1);
        for z in -146_097..146_097 {
            let c = civil_from_days(z);
            assert_eq!(days_from_civil(c.0, c.1, c.2), z);
            assert!(c > prev);
            prev = c;
        }
    }

    #[test]
    fn dates_parse_and_format() {
        assert_eq!(parse_ms("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_ms("1970-01-01T00:00:01.5Z"), Some(1500.0));
        assert_eq!(parse_ms("1970-01-01T00:00:01.250Z"), Some(1250.0));
        assert_eq!(parse_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000.0));
        assert_eq!(parse_ms("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(parse_ms("1970-01-01t00:00:00z"), Some(0.0));
        assert_eq!(
            parse_ms("2013-03-05T10:00:00.000+01:00"),
            parse_ms("2013-03-05T09:00:00Z")
        );
        assert_eq!(
            parse_ms("2013-03-05T10:00:00-0130"),
            parse_ms("2013-03-05T11:30:00Z")
        );
        let t = parse_ms("2024-02-29T23:59:59.123Z").unwrap();
        assert_eq!(format_ms(t), "2024-02-29T23:59:59.123Z");
        assert_eq!(format_ms(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_362_477_600_000.0), "2013-03-05T10:00:00.000Z");
        for bad in [
            "",
            "yesterday",
            "nonsense",
            "2024-13-01T00:00:00Z",
            "2024-01-01T00:00:00+x",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_wall_clock_times() {
        let t = UNIX_EPOCH + Duration::from_millis(1_367_409_600_123);
        assert_eq!(format_system_time(t), "2013-05-01T12:00:00.123Z");
        assert_eq!(format_system_time(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(format_system_time(leap), "2000-02-29T00:00:00.000Z");
        // Truncated, not rounded, to the millisecond.
        let t = UNIX_EPOCH + Duration::from_micros(1_999);
        assert_eq!(format_system_time(t), "1970-01-01T00:00:00.001Z");
    }

    #[test]
    fn strict_form_is_the_schema_pattern() {
        assert!(is_rfc3339("2013-05-01T12:00:00.123+02:00"));
        assert!(is_rfc3339("2013-05-01T12:00:00Z"));
        assert!(!is_rfc3339("2013-05-01 12:00:00"));
        assert!(!is_rfc3339("2013-05-01T12:00:00"));
        assert!(!is_rfc3339("2013-05-01T12:00:00.+02:00"));
        for t in [0.0, 1_367_409_600_123.0, -86_400_000.0] {
            assert!(is_rfc3339(&format_ms(t)));
            assert_eq!(parse_ms(&format_ms(t)), Some(t));
        }
    }
}
