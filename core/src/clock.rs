//! Calendar dates of Unix times, in UTC (proleptic Gregorian, Howard
//! Hinnant's `days_from_civil` / `civil_from_days`): no time zone data,
//! no dependency.

/// A moment in UTC, to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub millis: i64,
}

impl Utc {
    /// The moment `ms` milliseconds after 1970-01-01T00:00:00Z.
    pub fn from_ms(ms: i64) -> Utc {
        let secs = ms.div_euclid(1000);
        let rest = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        Utc {
            year,
            month,
            day,
            hour: rest / 3600,
            minute: rest % 3600 / 60,
            second: rest % 60,
            millis: ms.rem_euclid(1000),
        }
    }

    /// `20260101T120000Z`: sorts as it reads, fits in a file name.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// RFC 3339 with milliseconds: `2026-12-01T07:56:08.347Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }
}

/// The date `(year, month, day)` of a day number since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Days since 1970-01-01 of the date `(y, m, d)`.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates_agree_both_ways() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for days in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
    }

    #[test]
    fn moments_print_compact_and_rfc3339() {
        assert_eq!(Utc::from_ms(0).compact(), "19700101T000000Z");
        assert_eq!(
            Utc::from_ms(1_767_225_600_000).compact(),
            "20260101T000000Z"
        );
        assert_eq!(
            Utc::from_ms(951_782_400_000 + 3_723_000).compact(),
            "20000229T010203Z"
        );
        assert_eq!(
            Utc::from_ms(1_796_111_768_347).rfc3339(),
            "2026-12-01T07:56:08.347Z"
        );
        assert_eq!(Utc::from_ms(-1).rfc3339(), "1969-12-31T23:59:59.999Z");
    }
}
