//! The two clocks of the records: RFC 3339 timestamps in, local days out.

use crate::clock::days_from_civil;

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp
/// (`2026-12-01T05:26:30.599Z`, `2026-12-01T06:26:30+01:00`).
pub fn parse_timestamp_ms(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &text[start..i];
        if digits.is_empty() {
            return None;
        }
        let first3: String = digits.chars().chain("000".chars()).take(3).collect();
        millis = first3.parse().ok()?;
    }
    let offset_s = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let s = num(i + 1, 2)? * 3600 + num(i + 4, 2)? * 60;
            if *sign == b'+' {
                s
            } else {
                -s
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(secs * 1000 + millis)
}

/// The local calendar day (`YYYY-MM-DD`, in the time zone of this process)
/// of a moment in Unix milliseconds.
pub fn local_day(at_ms: i64) -> String {
    match crate::platform::time::local_date(at_ms.div_euclid(1000)) {
        Some((year, month, day)) => format!("{year:04}-{month:02}-{day:02}"),
        None => "1970-01-01".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_the_agents_parse() {
        // Claude Code and Codex write UTC with milliseconds.
        assert_eq!(
            parse_timestamp_ms("2026-12-01T05:26:30.599Z"),
            Some(1_796_102_790_599)
        );
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_timestamp_ms("2026-12-01T06:26:30.599123+01:00"),
            Some(1_796_102_790_599)
        );
        assert_eq!(
            parse_timestamp_ms("2024-02-29T23:59:59-00:30"),
            Some(1_709_252_999_000)
        );
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-12-01T05:26:30",
            "2026-12-01T05:26:30.Z",
        ] {
            assert_eq!(parse_timestamp_ms(bad), None, "{bad}");
        }
    }
}
