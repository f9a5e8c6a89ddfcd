//! Dates in scripts: RFC 1123 (`Thu, 01 Jan 2026 00:00:05 GMT`), the form the
//! `If-(Un)Modified-Since` and `Last-Modified` headers take, to and from the
//! server clock's milliseconds since the Unix epoch.

use overcast_model::conditions::Millis;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month 1–12, day 1–31) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Formats a clock reading as an RFC 1123 date; milliseconds are appended
/// (`... 00:00:05.250 GMT`) only when not zero, so messages show what the
/// header's whole seconds hide.
pub fn format_rfc1123(ms: Millis) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let frac = ms % 1000;
    let frac = if frac == 0 {
        String::new()
    } else {
        format!(".{frac:03}")
    };
    format!(
        "{weekday}, {d:02} {} {y:04} {:02}:{:02}:{:02}{frac} GMT",
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses an RFC 1123 date (`Thu, 01 Jan 2026 00:00:05 GMT`) to ms since the epoch.
/// The weekday must agree with the date.
pub fn parse_rfc1123(s: &str) -> Result<Millis, String> {
    let bad = || format!("`{s}` is not an RFC 1123 date like `Thu, 01 Jan 2026 00:00:05 GMT`");
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [weekday, day, month, year, hms, "GMT"] = parts.as_slice() else {
        return Err(bad());
    };
    let weekday = weekday.strip_suffix(',').ok_or_else(bad)?;
    let d: i64 = day.parse().map_err(|_| bad())?;
    let m = MONTHS.iter().position(|x| x == month).ok_or_else(bad)? as i64 + 1;
    let y: i64 = year.parse().map_err(|_| bad())?;
    let hms: Vec<i64> = hms
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [h, min, sec] = hms.as_slice() else {
        return Err(bad());
    };
    if !(1..=31).contains(&d) || !(0..24).contains(h) || !(0..60).contains(min) {
        return Err(bad());
    }
    if !(0..60).contains(sec) || y < 1970 {
        return Err(bad());
    }
    let days = days_from_civil(y, m, d);
    if civil_from_days(days) != (y, m, d) {
        return Err(format!("`{s}`: no such day"));
    }
    if DAYS[days.rem_euclid(7) as usize] != weekday {
        return Err(format!(
            "`{s}`: that day is a {}",
            DAYS[days.rem_euclid(7) as usize]
        ));
    }
    Ok(((days * 86_400 + h * 3600 + min * 60 + sec) * 1000) as Millis)
}

/// Parses a duration like `1s`, `250ms`, `2min`, `1h`, to ms.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{s}` has no unit (ms, s, min, h, d)"))?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 1s or 250ms"))?;
    let per = match unit {
        "ms" => 1,
        "s" => 1000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("`{s}`: unit must be ms, s, min, h or d")),
    };
    Ok(n * per)
}
